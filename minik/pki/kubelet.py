"""TLS and access control for the kubelet's own endpoint (logs, exec): only the API server and admins reach it.

The pieces, for the kubelet's aiohttp server and for whoever calls it:

- ``serving_context(cert, key, ca)``: the kubelet's TLS server context. Its certificate is the node's serving
  certificate signed by the cluster CA (a joined node gets it from the join, ``JoinedNode.serving_cert_path``;
  the local node of `minik up` from ``issue_serving_certificate``). Clients must present a certificate signed by
  the same CA for TLS client use (``CERT_REQUIRED``): no anonymous access at all.
- ``access_middleware``: an aiohttp middleware that checks, on every path, that the client certificate is an
  admin's (organization ``system:masters``: the API server's ``apiserver-kubelet-client`` certificate, and the
  admin's ``admin-client`` certificate in DATA_DIR/pki); anyone else gets 403 with Kubernetes' wording.
- ``client_context(ca, cert, key)``: what the API server (or an admin) uses to call a kubelet, verifying the
  kubelet's serving certificate against the cluster CA.
- ``local_serving_context(data_dir, node, addresses)`` and ``apiserver_client_context(data_dir)``: both ends as
  `minik up` sets them up from DATA_DIR/pki (the CA is made there if the cluster has none yet: a cluster that
  serves its API as plain HTTP (``--plain-http``) still serves its kubelet only over TLS).
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from minik.api.tokens import NODE_USER_PREFIX, NODES
from minik.pki import tls

if TYPE_CHECKING:  # imported where used: the ca module imports cryptography, which the endpoint's checks need not
    from minik.pki.ca import CertificateAuthority, Issued

MASTERS = "system:masters"
#: DATA_DIR/pki names of the API server's client certificate for kubelets (see minik.apiserver.auth.credentials)
APISERVER_CLIENT = "apiserver-kubelet-client"
APISERVER_CLIENT_CN = "kube-apiserver-kubelet-client"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: DATA_DIR/pki is read and written from a worker thread (the local node) and the event loop (the API server)
PKI_LOCK = threading.Lock()


def issue_serving_certificate(ca: CertificateAuthority, node: str, addresses: tuple[str, ...]) -> Issued:
    """A kubelet serving certificate for ``node`` (CN system:node:NAME, O system:nodes), valid for its name and
    addresses (what the cluster issues its own local node; joined nodes send a request instead)."""
    return ca.issue(NODE_USER_PREFIX + node, (NODES,), names=tuple(dict.fromkeys((node, *addresses))), server=True)


def serving_context(cert: Path, key: Path, ca_pem: bytes) -> ssl.SSLContext:
    """The kubelet's server context: its serving certificate under minik's TLS policy (``minik.pki.tls``);
    client certificates signed by the cluster CA required."""
    return tls.server_context(cert, key, client_ca_pem=ca_pem)


def client_context(ca_pem: bytes, cert: Path, key: Path) -> ssl.SSLContext:
    """A client context that presents ``cert`` and trusts only the cluster CA (for calls to kubelets)."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=ca_pem.decode())
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert), str(key))
    return context


def local_serving_context(data_dir: Path, node: str, addresses: tuple[str, ...]) -> ssl.SSLContext:
    """The server context of the local node's kubelet in `minik up`: DATA_DIR/pki/kubelet-NODE.crt, issued by the
    cluster CA for the node's name and addresses (again when they change)."""
    names = tuple(dict.fromkeys((node, *addresses)))
    cert, key, ca_pem = _ensure(data_dir, f"kubelet-{node}", NODE_USER_PREFIX + node, (NODES,), names,
                                server=True)
    return serving_context(cert, key, ca_pem)


def apiserver_client_context(data_dir: Path) -> ssl.SSLContext:
    """The API server's context for calls to kubelets: its ``apiserver-kubelet-client`` certificate (O
    system:masters) from DATA_DIR/pki, trusting only the cluster CA."""
    cert, key, ca_pem = _ensure(data_dir, APISERVER_CLIENT, APISERVER_CLIENT_CN, (MASTERS,), (), client=True)
    return client_context(ca_pem, cert, key)


def _ensure(data_dir: Path, name: str, common_name: str, groups: tuple[str, ...], names: tuple[str, ...], *,
            server: bool = False, client: bool = False) -> tuple[Path, Path, bytes]:
    """DATA_DIR/pki/NAME.crt and .key (read as files when still good, else checked or issued by the CA, made if
    the cluster has none yet) and the CA certificate."""
    from minik.pki import pkicache

    pki_dir = data_dir / "pki"
    cert, key = pki_dir / f"{name}.crt", pki_dir / f"{name}.key"
    with PKI_LOCK:
        if pkicache.fresh(pki_dir, name, names) is None:
            from minik.pki.ca import Pki, ensure_certificate, load_or_create_ca

            pki = Pki(pki_dir)
            cert, key = ensure_certificate(pki, load_or_create_ca(pki), name, common_name, groups, names=names,
                                           server=server, client=client)
        return cert, key, (pki_dir / "ca.crt").read_bytes()


def peer_identity(peercert: dict[str, Any] | None) -> tuple[str, tuple[str, ...]] | None:
    """(common name, organizations) of a verified peer certificate as ``ssl`` reports it, or None."""
    if not peercert:
        return None
    cn, orgs = "", []
    for rdn in peercert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                cn = value
            elif key == "organizationName":
                orgs.append(value)
    return cn, tuple(orgs)


def authorize(peercert: dict[str, Any] | None, method: str, path: str) -> str | None:
    """None when the client may call the kubelet (an admin's certificate), else why not."""
    identity = peer_identity(peercert)
    if identity is None:
        return "Unauthorized"
    name, groups = identity
    if MASTERS in groups:
        return None
    resource = "proxy" if not path.startswith(("/containerLogs", "/logs")) else "log"
    return f'Forbidden (user={name}, verb={method.lower()}, resource=nodes, subresource={resource})'


@web.middleware
async def access_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse, on every path, any client that is not the API server or an admin."""
    peercert = request.transport.get_extra_info("peercert") if request.transport is not None else None
    refused = authorize(peercert, request.method, request.path)
    if refused == "Unauthorized":
        return web.Response(status=401, text="Unauthorized")
    if refused is not None:
        return web.Response(status=403, text=refused)
    return await handler(request)
