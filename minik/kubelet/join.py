"""The client side of a node join: trust the cluster's CA only once it matches the pinned hash, only then send
the join token, and keep the node's own credential for restarts.

The steps, as kubeadm's token discovery with ``--discovery-token-ca-cert-hash`` (and k3s's ``K10`` tokens):

1. read ``kube-public/cluster-info`` anonymously over TLS *without* verifying the server (nothing secret is
   sent: no token, no header but the request line), and take the CA certificate out of it;
2. compare the SHA-256 of that CA's public key with the pinned hash; on a mismatch stop, having sent nothing;
3. from now on trust only that CA and check the server's name: send the bootstrap token to
   ``POST /minik/v1/nodecredentials`` with a certificate request for the kubelet's serving certificate;
4. save what comes back under the node's state directory, every file mode 0600: ``kubelet.conf`` (a kubeconfig
   with the server, the CA and the node's token, identity ``system:node:NAME``), ``kubelet.crt`` and
   ``kubelet.key`` (its serving certificate, signed by the cluster CA) and ``ca.crt``.

``join_cluster`` is the one call `minik node join` makes: with a saved credential for the same server and node
it joins nothing and returns what was saved (a restart), else it joins.
"""

from __future__ import annotations

import base64
import binascii
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

from minik import kubeconfig
from minik.api import tokens
from minik.client import Client, user_agent
from minik.pki.ca import CertificateError, certificate_request, key_pem, load_cert, matches_hash, new_key
from minik.pki.files import private_dir, write_private

CLUSTER_INFO_PATH = "/api/v1/namespaces/kube-public/configmaps/cluster-info"
CREDENTIALS_PATH = "/minik/v1/nodecredentials"
KUBECONFIG_NAME = "kubelet.conf"
TIMEOUT_SECONDS = 15.0


class JoinError(Exception):
    """A join that cannot or must not go on; the message says why, for people."""


@dataclass(frozen=True)
class JoinToken:
    token: str
    ca_hash: str


def parse_join_token(token: str, ca_hash: str | None = None) -> JoinToken:
    """The bootstrap token and CA pin from ``--token`` and ``--ca-hash``. ``--token`` may also be k3s's secure form
    ``K10<sha256 hex>::<id>.<secret>``, which carries the pin itself (it must then agree with ``--ca-hash``)."""
    token = token.strip()
    embedded = None
    if token.startswith("K10") and "::" in token:
        embedded, _, token = token[3:].partition("::")
        embedded = "sha256:" + embedded.lower()
    if not tokens.BOOTSTRAP_TOKEN.fullmatch(token):
        raise JoinError("the join token must have the form [a-z0-9]{6}.[a-z0-9]{16} (or K10<ca-hash>::<token>), as "
                        "`minik token create` prints it")
    pin = ca_hash.strip().lower() if ca_hash else embedded
    if pin is None:
        raise JoinError("the CA hash is missing: pass --ca-hash sha256:<hex> as `minik token create` prints it, so "
                        "the token is sent only to the right cluster")
    if not pin.startswith("sha256:"):
        pin = "sha256:" + pin
    hex_part = pin[len("sha256:"):]
    if len(hex_part) != 64 or any(c not in "0123456789abcdef" for c in hex_part):
        raise JoinError(f"invalid CA hash {pin!r}: expected sha256: and 64 hexadecimal digits")
    if embedded is not None and embedded != pin:
        raise JoinError("the CA hash in the token and --ca-hash differ")
    return JoinToken(token, pin)


def join_command(server: str, token: str, ca_hash: str) -> str:
    """The command a new machine runs to join (what `minik token create` prints)."""
    return f"minik node join --server {server} --token {token} --ca-hash {ca_hash}"


@dataclass(frozen=True)
class JoinedNode:
    """A node's saved credential: where the API is, the CA it trusts, its token and its serving certificate."""

    server: str
    node_name: str
    token: str
    ca_pem: bytes
    kubeconfig_path: Path
    serving_cert_path: Path | None = None
    serving_key_path: Path | None = None

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=self.ca_pem.decode())
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return context

    def client(self, *, timeout_seconds: float = 60.0) -> Client:
        """A client to the API as this node (identity system:node:NAME)."""
        return Client.http(self.server, self.token, timeout_seconds=timeout_seconds, ssl=self.ssl_context(),
                           agent=user_agent("kubelet"))


async def fetch_ca(server: str, *, timeout_seconds: float = TIMEOUT_SECONDS) -> bytes:
    """The CA certificate (PEM) the server publishes in kube-public/cluster-info, read without verifying the
    server and without sending any credential. Not to be trusted before its hash is checked."""
    if not server.startswith("https://"):
        raise JoinError(f"the server must be an https:// URL (got {server}): a CA cannot be pinned over plain HTTP")
    timeout = aiohttp.ClientTimeout(total=timeout_seconds)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async with session.get(server.rstrip("/") + CLUSTER_INFO_PATH, ssl=False) as response:
                body = await response.read()
                status = response.status
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise JoinError(f"cannot reach {server}: {exc or type(exc).__name__}") from None
    if status != 200:
        raise JoinError(f"{server} did not publish its cluster-info (HTTP {status})")
    try:
        info = orjson.loads(body)
        config = yaml.safe_load(info["data"]["kubeconfig"])
        data = config["clusters"][0]["cluster"]["certificate-authority-data"]
    except (orjson.JSONDecodeError, yaml.YAMLError, KeyError, IndexError, TypeError) as exc:
        raise JoinError(f"{server} published a cluster-info without a CA ({type(exc).__name__})") from None
    try:
        return base64.b64decode(str(data), validate=True)
    except (binascii.Error, ValueError):
        raise JoinError(f"{server} published a CA that is not base64") from None


def verify_ca(ca_pem: bytes, ca_hash: str) -> None:
    """JoinError unless ``ca_pem`` is a certificate whose public key hashes to ``ca_hash``."""
    try:
        cert = load_cert(ca_pem)
    except CertificateError as exc:
        raise JoinError(f"the cluster's CA cannot be read: {exc}") from None
    if not matches_hash(cert, ca_hash):
        raise JoinError(f"the cluster's CA does not match the pinned hash {ca_hash}: refusing to send the join "
                        "token (a wrong --ca-hash, or not the cluster you meant)")


def load_joined(state_dir: Path) -> JoinedNode | None:
    """The credential a previous join saved in ``state_dir``, or None."""
    path = state_dir / KUBECONFIG_NAME
    if not path.exists():
        return None
    try:
        endpoint = kubeconfig.endpoint(path)
        config = kubeconfig.read(path)
    except kubeconfig.KubeconfigError as exc:
        raise JoinError(f"the saved node credential {path} cannot be read: {exc}") from None
    node = str(config.get("current-context") or "").removeprefix("system:node:")
    if not endpoint.token or not endpoint.ca_data or not node:
        raise JoinError(f"the saved node credential {path} is incomplete; remove it to join again")
    cert, key = state_dir / "kubelet.crt", state_dir / "kubelet.key"
    return JoinedNode(endpoint.server, node, endpoint.token, endpoint.ca_data, path,
                      cert if cert.exists() else None, key if key.exists() else None)


async def join(server: str, token: str, ca_hash: str | None, node_name: str, state_dir: Path,
               addresses: tuple[str, ...] = (), *, timeout_seconds: float = TIMEOUT_SECONDS) -> JoinedNode:
    """Join ``node_name`` to the cluster at ``server`` (see the module's steps) and save its credential."""
    pinned = parse_join_token(token, ca_hash)
    server = server.rstrip("/")
    ca_pem = await fetch_ca(server, timeout_seconds=timeout_seconds)
    verify_ca(ca_pem, pinned.ca_hash)
    key = new_key()
    csr = certificate_request(key, tokens.NODE_USER_PREFIX + node_name, (tokens.NODES,),
                              tuple(dict.fromkeys((node_name, *addresses))))
    body = {"kind": "NodeCredentialRequest", "apiVersion": "minik.io/v1", "nodeName": node_name,
            "servingCertificateRequest": csr.decode()}
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=ca_pem.decode())
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    answer = await _post(server + CREDENTIALS_PATH, body, pinned.token, context, timeout_seconds)
    node_token = answer.get("token")
    if not isinstance(node_token, str) or not tokens.NODE_TOKEN.fullmatch(node_token):
        raise JoinError("the server's answer holds no node credential")
    private_dir(state_dir)
    write_private(state_dir / "ca.crt", ca_pem)
    cert_path = key_path = None
    serving = answer.get("servingCertificate")
    if isinstance(serving, str) and serving:
        cert_path, key_path = state_dir / "kubelet.crt", state_dir / "kubelet.key"
        write_private(key_path, key_pem(key))
        write_private(cert_path, serving.encode())
    path = state_dir / KUBECONFIG_NAME
    config = kubeconfig.for_cluster(tokens.NODE_USER_PREFIX + node_name, server, ca_data=ca_pem, token=node_token)
    kubeconfig.write(path, config)
    return JoinedNode(server, node_name, node_token, ca_pem, path, cert_path, key_path)


async def _post(url: str, body: dict[str, Any], token: str, context: ssl.SSLContext,
                timeout_seconds: float) -> dict[str, Any]:
    timeout = aiohttp.ClientTimeout(total=timeout_seconds)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async with session.post(url, data=orjson.dumps(body), ssl=context,
                                    headers={"Authorization": f"Bearer {token}",
                                             "Content-Type": "application/json"}) as response:
                raw = await response.read()
                status = response.status
    except aiohttp.ClientConnectorCertificateError as exc:
        raise JoinError(f"the server's certificate is not signed by the pinned CA or not for this address: "
                        f"{exc.certificate_error}") from None
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise JoinError(f"cannot reach {url}: {exc or type(exc).__name__}") from None
    try:
        answer = orjson.loads(raw) if raw else {}
    except orjson.JSONDecodeError:
        answer = {}
    if status == 401:
        raise JoinError("the join token was refused: it is unknown, expired or revoked (create a new one with "
                        "`minik token create` on the cluster)")
    if status != 201 or not isinstance(answer, dict):
        message = answer.get("message") if isinstance(answer, dict) else None
        raise JoinError(f"the join was refused (HTTP {status}): {message or raw[:200].decode(errors='replace')}")
    return answer


async def join_cluster(server: str, token: str | None, ca_hash: str | None, node_name: str, state_dir: Path,
                       addresses: tuple[str, ...] = ()) -> JoinedNode:
    """What `minik node join` calls: the saved credential when this node joined this server before (so a
    restart needs no token), else a join with ``token`` pinned to ``ca_hash``."""
    saved = load_joined(state_dir)
    if saved is not None:
        if saved.server.rstrip("/") != server.rstrip("/") or saved.node_name != node_name:
            raise JoinError(f"{state_dir} holds the credential of node {saved.node_name!r} at {saved.server}; "
                            "use another state directory, or remove it to join anew")
        return saved
    if not token:
        raise JoinError("this node has not joined yet: pass --token (and --ca-hash) from `minik token create`")
    return await join(server, token, ca_hash, node_name, state_dir, addresses)
