"""Joining a node: the CA is pinned before the token leaves the machine, the token is exchanged for the node's
own credential (kept 0600 for restarts), and expired, revoked or wrong tokens are refused."""

from __future__ import annotations

import datetime
import ssl
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from security_helpers import ca_hash, make_token

from minik.api import tokens
from minik.api.errors import StatusError
from minik.client import Client
from minik.cluster import Cluster
from minik.kubelet.join import JoinError, join, join_cluster, parse_join_token
from minik.pki.ca import CertificateAuthority


async def test_a_join_with_the_right_ca_hash_gets_the_node_its_own_credential(secure: Cluster, admin: Client,
                                                                              tmp_path: Path) -> None:
    state = tmp_path / "node"
    joined = await join(secure.url, await make_token(admin), ca_hash(secure), "worker-1", state, ("10.1.2.3",))
    assert joined.node_name == "worker-1"
    for name in ("kubelet.conf", "kubelet.key", "kubelet.crt", "ca.crt"):
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600, name
    async with joined.client() as node:
        await node.create("nodes", {"metadata": {"name": "worker-1"}})
        assert (await node.get("nodes", "worker-1"))["metadata"]["name"] == "worker-1"
    credentials = [s for s in (await admin.list("secrets", tokens.NAMESPACE))["items"]
                   if s["type"] == tokens.NODE_CREDENTIAL_TYPE]
    assert len(credentials) == 1
    assert joined.token.split(".")[1] not in str(credentials[0])  # only its hash is stored


async def test_the_serving_certificate_a_join_gets_is_signed_by_the_cluster_ca(secure: Cluster, admin: Client,
                                                                               tmp_path: Path) -> None:
    from cryptography import x509

    joined = await join(secure.url, await make_token(admin), ca_hash(secure), "worker-1", tmp_path / "n",
                        ("10.1.2.3",))
    assert joined.serving_cert_path is not None
    cert = x509.load_pem_x509_certificate(joined.serving_cert_path.read_bytes())
    assert secure.credentials is not None
    cert.verify_directly_issued_by(secure.credentials.ca.cert)
    assert cert.subject.rfc4514_string() == "CN=system:node:worker-1,O=system:nodes"
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["worker-1"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["10.1.2.3"]


async def test_a_restarted_node_uses_its_saved_credential_without_a_token(secure: Cluster, admin: Client,
                                                                           tmp_path: Path) -> None:
    state = tmp_path / "node"
    first = await join_cluster(secure.url, await make_token(admin), ca_hash(secure), "worker-1", state)
    again = await join_cluster(secure.url, None, None, "worker-1", state)
    assert again.token == first.token
    async with again.client() as node:
        await node.create("nodes", {"metadata": {"name": "worker-1"}})
    with pytest.raises(JoinError, match="holds the credential of node 'worker-1'"):
        await join_cluster(secure.url, None, None, "worker-2", state)


@pytest.fixture
async def impostor(tmp_path: Path) -> AsyncIterator[tuple[str, list[dict[str, str]]]]:
    """An HTTPS server with a CA of its own that serves a cluster-info like the real one and records every
    request it gets: what a man in the middle would see."""
    from minik.joinserver import cluster_info

    ca = CertificateAuthority.create("impostor-ca")
    issued = ca.issue("impostor", names=("127.0.0.1", "localhost"), server=True)
    (tmp_path / "i.crt").write_bytes(issued.cert_pem)
    (tmp_path / "i.key").write_bytes(issued.key_pem)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(tmp_path / "i.crt"), str(tmp_path / "i.key"))
    seen: list[dict[str, str]] = []

    async def anything(request: web.Request) -> web.StreamResponse:
        seen.append({"path": request.path, **dict(request.headers)})
        await request.read()
        if request.path.endswith("/cluster-info"):
            return web.json_response(cluster_info("https://127.0.0.1", ca.cert_pem))
        return web.json_response({"kind": "NodeCredential", "token": "stolen"}, status=201)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", anything)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"https://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


async def test_a_wrong_ca_hash_refuses_before_the_token_is_sent(secure: Cluster, admin: Client, tmp_path: Path,
                                                                 impostor: tuple[str, list[dict[str, str]]]) -> None:
    url, seen = impostor
    token = await make_token(admin)
    with pytest.raises(JoinError, match="does not match the pinned hash"):
        await join(url, token, ca_hash(secure), "worker-1", tmp_path / "node")
    assert [r["path"] for r in seen] == ["/api/v1/namespaces/kube-public/configmaps/cluster-info"]
    assert not any("Authorization" in r or token in str(r) for r in seen)
    assert not (tmp_path / "node" / "kubelet.conf").exists()
    wrong = "sha256:" + "0" * 64
    with pytest.raises(JoinError, match="does not match the pinned hash"):
        await join(secure.url, token, wrong, "worker-1", tmp_path / "node")
    assert not [s for s in (await admin.list("secrets", tokens.NAMESPACE))["items"]
                if s["type"] == tokens.NODE_CREDENTIAL_TYPE]


async def test_an_expired_join_token_is_refused(secure: Cluster, admin: Client, tmp_path: Path) -> None:
    long_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=2)
    token = await make_token(admin, "node", datetime.timedelta(days=1), now=long_ago)
    with pytest.raises(JoinError, match="unknown, expired or revoked"):
        await join(secure.url, token, ca_hash(secure), "worker-1", tmp_path / "node")


async def test_a_revoked_join_token_is_refused(secure: Cluster, admin: Client, tmp_path: Path) -> None:
    token = await make_token(admin)
    await admin.delete("secrets", tokens.BOOTSTRAP_PREFIX + token.split(".")[0], tokens.NAMESPACE)
    with pytest.raises(JoinError, match="unknown, expired or revoked"):
        await join(secure.url, token, ca_hash(secure), "worker-1", tmp_path / "node")


async def test_a_view_token_cannot_join(secure: Cluster, admin: Client, tmp_path: Path) -> None:
    token = await make_token(admin, "view")
    with pytest.raises(JoinError, match="HTTP 403"):
        await join(secure.url, token, ca_hash(secure), "worker-1", tmp_path / "node")


async def test_a_joined_node_cannot_be_taken_over_by_another_join(secure: Cluster, admin: Client,
                                                                   tmp_path: Path) -> None:
    token = await make_token(admin)
    await join(secure.url, token, ca_hash(secure), "worker-1", tmp_path / "a")
    with pytest.raises(JoinError, match="HTTP 409.*minik token delete"):
        await join(secure.url, token, ca_hash(secure), "worker-1", tmp_path / "b")
    other = await join(secure.url, token, ca_hash(secure), "worker-2", tmp_path / "c")  # tokens are reusable
    assert other.node_name == "worker-2"


async def test_a_revoked_node_credential_stops_working(secure: Cluster, admin: Client, tmp_path: Path) -> None:
    joined = await join(secure.url, await make_token(admin), ca_hash(secure), "worker-1", tmp_path / "n")
    async with joined.client() as node:
        await node.list("pods")
        await admin.delete("secrets", tokens.NODE_CREDENTIAL_PREFIX + joined.token.split(".")[0], tokens.NAMESPACE)
        with pytest.raises(StatusError) as refused:
            await node.list("pods")
    assert refused.value.code == 401


def test_join_tokens_carry_the_ca_hash_in_k3s_form_or_beside_it() -> None:
    pin = "sha256:" + "ab" * 32
    assert parse_join_token("abcdef.0123456789abcdef", pin).ca_hash == pin
    assert parse_join_token("K10" + "ab" * 32 + "::abcdef.0123456789abcdef").ca_hash == pin
    with pytest.raises(JoinError, match="CA hash is missing"):
        parse_join_token("abcdef.0123456789abcdef")
    with pytest.raises(JoinError, match="form"):
        parse_join_token("ABCDEF.0123456789abcdef", pin)
    with pytest.raises(JoinError, match="invalid CA hash"):
        parse_join_token("abcdef.0123456789abcdef", "sha256:xyz")


async def test_the_join_endpoint_refuses_bad_requests_with_a_status(secure: Cluster, admin: Client) -> None:
    from security_helpers import raw

    token = await make_token(admin)
    for body, code in (({"kind": "NodeCredentialRequest", "nodeName": "Bad_Name"}, 422),
                       ({"kind": "NodeCredentialRequest"}, 422),
                       ({"kind": "Other"}, 400),
                       ({"kind": "NodeCredentialRequest", "nodeName": "n", "servingCertificateRequest": "junk"}, 422)):
        status, answer, _ = await raw(secure, "POST", "/minik/v1/nodecredentials", token, json=body)
        assert (status, answer["kind"]) == (code, "Status"), body
    status, _, _ = await raw(secure, "POST", "/minik/v1/nodecredentials", None, json={})
    assert status == 401
    status, _, _ = await raw(secure, "GET", "/minik/v1/nodecredentials", token)
    assert status == 403  # a join token may only post there
    status, _, _ = await raw(secure, "GET", "/minik/v1/nodecredentials", secure.admin_token)
    assert status == 405
