"""The credentials a cluster starts with: its CA and serving certificate, the admin token, the API server's
client certificate for kubelets, and the in-memory tokens of the components that run inside `minik up`.

Files (DATA_DIR/pki, mode 0700; every file 0600): ``ca.crt``/``ca.key``, ``apiserver.crt``/``.key`` (re-issued
when the names it must cover change), ``apiserver-kubelet-client.crt``/``.key`` (CN kube-apiserver-kubelet-client,
O system:masters, for the API server's calls to kubelets), ``admin-client.crt``/``.key`` (an admin's client
certificate, for reaching a kubelet directly), ``admin.token``. None of them is ever logged.

In-process components (scheduler, controllers, the local node) get a token minted at start-up and kept only in
memory; their requests go through the same authentication and authorization as a remote client's.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from minik.apiserver.auth.authn import AUTHENTICATED, StaticTokens
from minik.apiserver.auth.authz import MASTERS
from minik.apiserver.request import User
from minik.pki import pkicache, tls
from minik.pki.files import write_private
from minik.pki.kubelet import APISERVER_CLIENT, APISERVER_CLIENT_CN, PKI_LOCK

if TYPE_CHECKING:  # the ca module imports cryptography (~50 ms): only a cluster that makes or reads its CA pays
    from minik.pki.ca import CertificateAuthority

ADMIN = User("kubernetes-admin", (MASTERS, AUTHENTICATED))
#: the API server's own loopback identity (its writes of cluster-info, for instance)
APISERVER = User("system:apiserver", (MASTERS, AUTHENTICATED))

ADMIN_CLIENT = "admin-client"

CLUSTER_DOMAIN_NAMES = ("kubernetes", "kubernetes.default", "kubernetes.default.svc",
                        "kubernetes.default.svc.cluster.local")


def new_static_token() -> str:
    return secrets.token_urlsafe(32)


def local_addresses() -> list[str]:
    """This machine's host name and the addresses it is reached at (best effort, no network traffic)."""
    names = ["localhost", "127.0.0.1", "::1"]
    hostname = socket.gethostname()
    if hostname:
        names.append(hostname)
        try:
            for info in socket.getaddrinfo(hostname, None):
                names.append(str(info[4][0]))
        except OSError:
            pass
    try:  # the address of the default route (a UDP "connect" sends nothing)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.254.254.254", 1))
            names.append(probe.getsockname()[0])
    except OSError:
        pass
    return names


def serving_names(bind: str, service_ip: str | None, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Every name the API server's certificate must cover: loopback, this host's names and addresses, the bind
    address, the `kubernetes` Service's names and cluster IP, and any extra (``--tls-san``)."""
    names = local_addresses() + list(CLUSTER_DOMAIN_NAMES)
    try:
        if not ipaddress.ip_address(bind).is_unspecified:
            names.append(bind)
    except ValueError:
        names.append(bind)
    if service_ip:
        names.append(service_ip)
    names.extend(extra)
    return tuple(dict.fromkeys(n for n in names if n))


@dataclass
class ClusterCredentials:
    pki_dir: Path
    ca_pem: bytes
    ca_hash: str
    """The pin a joining node checks the CA against (``sha256:<hex>``)."""
    serving: tuple[Path, Path]
    admin_token: str
    _ca: CertificateAuthority | None = None
    _clients: dict[str, tuple[Path, Path]] = field(default_factory=dict)

    @classmethod
    def load_or_create(cls, data_dir: Path, names: tuple[str, ...], static: StaticTokens) -> ClusterCredentials:
        """Read DATA_DIR/pki, making what is missing, and register the admin token with ``static``: what the API
        server needs to listen. A restart whose serving certificate is still good reads files only (see
        minik.pki.pkicache); the CA's key is loaded when something must be signed. The client
        certificates are made on first use (``kubelet_client``, ``admin_client``; the cluster asks for them once
        it is serving)."""
        pki_dir = data_dir / "pki"
        token_path = pki_dir / "admin.token"
        token = token_path.read_text().strip() if token_path.exists() else ""
        ca: CertificateAuthority | None = None
        ca_hash = pkicache.fresh(pki_dir, "apiserver", names)
        if ca_hash is not None:
            ca_pem = (pki_dir / "ca.crt").read_bytes()
        else:
            from minik.pki.ca import Pki, ensure_certificate, load_or_create_ca

            pki = Pki(pki_dir)
            ca = load_or_create_ca(pki)
            ensure_certificate(pki, ca, "apiserver", "kube-apiserver", names=names, server=True)
            ca_pem, ca_hash = ca.cert_pem, ca.hash
        if len(token) < 32:
            token = new_static_token()
            write_private(token_path, token.encode())
        static.add(token, ADMIN)
        return cls(pki_dir, ca_pem, ca_hash, (pki_dir / "apiserver.crt", pki_dir / "apiserver.key"), token, ca)

    @property
    def ca(self) -> CertificateAuthority:
        """The CA with its key (read from DATA_DIR/pki on first use: signing a node's certificate, say)."""
        with PKI_LOCK:
            if self._ca is None:
                from minik.pki.ca import Pki, load_or_create_ca

                self._ca = load_or_create_ca(Pki(self.pki_dir))
            return self._ca

    def _client(self, name: str, common_name: str) -> tuple[Path, Path]:
        if name not in self._clients:
            if pkicache.fresh(self.pki_dir, name, ()) is not None:
                self._clients[name] = (self.pki_dir / f"{name}.crt", self.pki_dir / f"{name}.key")
            else:
                from minik.pki.ca import Pki, ensure_certificate

                ca = self.ca
                with PKI_LOCK:  # DATA_DIR/pki is also written from a worker thread (the local node's certificate)
                    self._clients[name] = ensure_certificate(Pki(self.pki_dir), ca, name, common_name, (MASTERS,),
                                                             client=True)
        return self._clients[name]

    def ensure_client_certificates(self) -> None:
        """Make (or check) both client certificates now."""
        self._client(APISERVER_CLIENT, APISERVER_CLIENT_CN)
        self._client(ADMIN_CLIENT, ADMIN.name)

    @property
    def kubelet_client(self) -> tuple[Path, Path]:
        """The API server's client certificate for kubelets (O system:masters)."""
        return self._client(APISERVER_CLIENT, APISERVER_CLIENT_CN)

    @property
    def admin_client(self) -> tuple[Path, Path]:
        """An admin's client certificate, for reaching a kubelet directly (O system:masters)."""
        return self._client(ADMIN_CLIENT, ADMIN.name)

    def server_ssl_context(self) -> ssl.SSLContext:
        """The serving certificate under minik's TLS policy (``minik.pki.tls``); a client may present a
        certificate the cluster CA signed (its user and groups: minik.apiserver.x509) or send a bearer
        token."""
        return tls.server_context(*self.serving, self.ca_pem, require_client_cert=False)


def client_ssl_context(ca_pem: bytes) -> ssl.SSLContext:
    """A client context that trusts only ``ca_pem`` and checks the server's name."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=ca_pem.decode())
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def mint(static: StaticTokens, user: User) -> str:
    """A new in-memory token for ``user`` (an in-process component)."""
    token = new_static_token()
    static.add(token, User(user.name, tuple(dict.fromkeys((*user.groups, AUTHENTICATED)))))
    return token
