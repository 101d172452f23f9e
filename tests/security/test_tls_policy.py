"""Every TLS server minik runs (the API server, the local node's kubelet endpoint) speaks TLS 1.3, and TLS 1.2
only with ECDHE and an AEAD cipher (AES-GCM, ChaCha20-Poly1305): a client that offers only CBC suites gets no
session."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from minik.cluster import Cluster, ClusterSettings
from minik.kubelet.component import NodeComponent


@dataclass
class TlsServer:
    port: int
    #: the client certificate and key the server requires (the kubelet's endpoint), or None
    client_cert: tuple[Path, Path] | None


@pytest.fixture(params=["apiserver", "kubelet"])
async def server(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TlsServer]:
    """A cluster served as `minik up` serves it (HTTPS), with its local node on the fake runtime; the API server's
    port, or the kubelet endpoint's (it listens on every address, loopback too) with an admin's certificate."""
    cluster = Cluster(ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                                      disabled=frozenset({"scheduler", "controllers", "proxy"}),
                                      node_name="tls-node", node_runtime="fake"))
    async with cluster:
        assert cluster.credentials is not None
        if request.param == "apiserver":
            yield TlsServer(cluster.port, None)
            return
        node: NodeComponent = cluster.components["node"]  # type: ignore[assignment]
        await asyncio.wait_for(node.local_ready.wait(), 20)
        assert node.agent is not None and node.agent.server is not None
        yield TlsServer(node.agent.server.port, cluster.credentials.admin_client)


def client(server: TlsServer, suites: str | None = None, *, tls13: bool = False) -> ssl.SSLContext:
    """A client of exactly one protocol version: TLS 1.3, or TLS 1.2 offering only ``suites`` (OpenSSL names).
    It does not check the server's certificate: what is under test is what the server agrees to."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    version = ssl.TLSVersion.TLSv1_3 if tls13 else ssl.TLSVersion.TLSv1_2
    context.minimum_version = context.maximum_version = version
    if suites is not None:
        context.set_ciphers(suites)
    if server.client_cert is not None:
        context.load_cert_chain(*map(str, server.client_cert))
    return context


def handshake(port: int, context: ssl.SSLContext) -> tuple[str, str] | None:
    """(protocol version, suite) the server agreed to, or None when it refused the handshake."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        try:
            with context.wrap_socket(raw) as tls:
                cipher = tls.cipher()
                assert cipher is not None
                return str(tls.version()), cipher[0]
        except (ssl.SSLError, ConnectionError):
            return None


async def shake(server: TlsServer, context: ssl.SSLContext) -> tuple[str, str] | None:
    """The handshake from a worker thread: the server answers on this event loop."""
    return await asyncio.to_thread(handshake, server.port, context)


@pytest.mark.parametrize("suite", ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES128-SHA256",
                                   "ECDHE-ECDSA-AES256-SHA", "ECDHE-ECDSA-AES256-SHA384"])
async def test_a_tls_1_2_client_offering_only_a_cbc_suite_gets_no_session(server: TlsServer, suite: str) -> None:
    assert await shake(server, client(server, suite)) is None


@pytest.mark.parametrize("suite", ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
                                   "ECDHE-ECDSA-CHACHA20-POLY1305"])
async def test_a_tls_1_2_client_offering_an_aead_suite_gets_it(server: TlsServer, suite: str) -> None:
    assert await shake(server, client(server, suite)) == ("TLSv1.2", suite)


async def test_a_tls_1_3_client_gets_a_session(server: TlsServer) -> None:
    agreed = await shake(server, client(server, tls13=True))
    assert agreed is not None and agreed[0] == "TLSv1.3"


async def test_every_tls_1_2_suite_the_server_accepts_is_ecdhe_with_aead(server: TlsServer) -> None:
    """Each TLS 1.2 suite this machine's OpenSSL knows, offered alone: the ones the server agrees to."""
    known = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    known.set_ciphers("ALL:@SECLEVEL=0")
    suites = sorted({c["name"] for c in known.get_ciphers() if c["protocol"] != "TLSv1.3"})
    assert any("-CBC-" in s or s.endswith(("-SHA", "-SHA256", "-SHA384")) for s in suites)  # CBC ones were tried

    def accepted() -> list[str]:
        found = []
        for suite in suites:
            try:
                context = client(server, suite)
            except ssl.SSLError:  # this OpenSSL cannot offer it at TLS 1.2
                continue
            if handshake(server.port, context) is not None:
                found.append(suite)
        return found

    agreed = await asyncio.to_thread(accepted)
    # minik's certificates are ECDSA, so of the RSA and ECDSA variants only the ECDSA ones can be agreed
    assert sorted(agreed) == ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
                              "ECDHE-ECDSA-CHACHA20-POLY1305"]
