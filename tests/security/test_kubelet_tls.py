"""The kubelet endpoint's pieces: TLS with a node serving certificate signed by the cluster CA, client
certificates required, and only the API server and admins let through, on every path."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from minik.cluster import Cluster
from minik.pki import kubelet
from minik.pki.ca import CertificateAuthority


@pytest.fixture
async def endpoint(secure: Cluster, tmp_path: Path) -> AsyncIterator[str]:
    """A kubelet-like endpoint for node worker-1, set up as the kubelet should set up its own."""
    assert secure.credentials is not None
    issued = kubelet.issue_serving_certificate(secure.credentials.ca, "worker-1", ("127.0.0.1",))
    (tmp_path / "k.crt").write_bytes(issued.cert_pem)
    (tmp_path / "k.key").write_bytes(issued.key_pem)

    async def logs(request: web.Request) -> web.Response:
        return web.Response(text="log line\n")

    app = web.Application(middlewares=[kubelet.access_middleware])
    app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", logs)
    app.router.add_route("*", "/{tail:.*}", logs)
    runner = web.AppRunner(app)
    await runner.setup()
    context = kubelet.serving_context(tmp_path / "k.crt", tmp_path / "k.key", secure.credentials.ca.cert_pem)
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    try:
        yield f"https://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def get(url: str, context: ssl.SSLContext) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session:
        async with session.get(url + "/containerLogs/default/p/c", ssl=context) as response:
            return response.status, await response.text()


async def test_the_api_server_and_admins_reach_the_kubelet(secure: Cluster, endpoint: str) -> None:
    creds = secure.credentials
    assert creds is not None
    for cert, key in (creds.kubelet_client, creds.admin_client):
        assert await get(endpoint, kubelet.client_context(creds.ca.cert_pem, cert, key)) == (200, "log line\n")


async def test_anyone_else_is_refused(secure: Cluster, endpoint: str, tmp_path: Path) -> None:
    creds = secure.credentials
    assert creds is not None
    anonymous = ssl.create_default_context(cadata=creds.ca.cert_pem.decode())
    with pytest.raises(aiohttp.ClientError):  # no client certificate: the TLS handshake fails
        await get(endpoint, anonymous)
    stranger = CertificateAuthority.create("stranger").issue("kubernetes-admin", ("system:masters",), client=True)
    (tmp_path / "s.crt").write_bytes(stranger.cert_pem)
    (tmp_path / "s.key").write_bytes(stranger.key_pem)
    with pytest.raises(aiohttp.ClientError):  # a certificate from another CA, whatever it claims
        await get(endpoint, kubelet.client_context(creds.ca.cert_pem, tmp_path / "s.crt", tmp_path / "s.key"))
    node = creds.ca.issue("system:node:worker-2", ("system:nodes",), client=True)
    (tmp_path / "n.crt").write_bytes(node.cert_pem)
    (tmp_path / "n.key").write_bytes(node.key_pem)
    status, text = await get(endpoint, kubelet.client_context(creds.ca.cert_pem, tmp_path / "n.crt",
                                                               tmp_path / "n.key"))
    assert (status, text) == (403, "Forbidden (user=system:node:worker-2, verb=get, resource=nodes, "
                                   "subresource=log)")
