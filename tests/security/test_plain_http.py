"""Plain HTTP (`minik up --plain-http`, for benchmarks against plain-HTTP servers) is authenticated as HTTPS is:
nothing is trusted for the address a request comes from, loopback included (the node proxy and pods reach the API
from loopback too; tests/proxy/test_api_through_proxy.py goes that way)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from minik import kubeconfig
from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from tests.access import admin_headers, admin_kubeconfig
from tests.cli.cli_helpers import invoke_cli

KUBECTL = shutil.which("kubectl")


@pytest.fixture(params=[True, False], ids=["plain-http", "https"])
async def served(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Cluster]:
    """A cluster serving plain HTTP, and one serving HTTPS."""
    async with Cluster(ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL", plain_http=request.param,
                                       disabled=frozenset(COMPONENTS))) as cluster:
        yield cluster


async def get(cluster: Cluster, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    """GET from 127.0.0.1."""
    connector = aiohttp.TCPConnector(ssl=cluster.client_ssl_context() or True, local_addr=("127.0.0.1", 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(f"{cluster.url}{path}", headers=headers) as response:
            return response.status, await response.json(content_type=None)


async def test_a_request_from_loopback_without_a_token_is_401(served: Cluster) -> None:
    assert served.host == "127.0.0.1"
    status, body = await get(served, "/api/v1/pods")
    assert (status, body.get("reason"), body.get("message")) == (401, "Unauthorized", "Unauthorized")
    status, _ = await get(served, "/api/v1/pods", {"Authorization": "Bearer not-a-token"})
    assert status == 401
    status, body = await get(served, "/api/v1/pods", admin_headers(served))
    assert (status, body["kind"]) == (200, "PodList")


async def kubectl(config: Path, *args: str) -> tuple[int, str, str]:
    assert KUBECTL is not None, "kubectl is not on the PATH (./scripts/test installs one)"
    process = await asyncio.create_subprocess_exec(KUBECTL, "--kubeconfig", str(config), "--cache-dir",
                                                   str(config.parent / "cache"), *args,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode or 0, out.decode(), err.decode()


async def test_the_kubeconfig_of_a_plain_http_cluster_carries_the_admin_token_and_kubectl_is_refused(
        tmp_path: Path) -> None:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL", plain_http=True,
                               disabled=frozenset(COMPONENTS))
    async with Cluster(settings) as cluster:
        config = admin_kubeconfig(cluster, tmp_path / "admin" / "kubeconfig")
        endpoint = kubeconfig.endpoint(config)
        assert endpoint.server == cluster.url and cluster.url.startswith("http://127.0.0.1:")
        assert endpoint.token == cluster.admin_token and endpoint.ca_data is None
        result = await invoke_cli(["--kubeconfig", str(config), "get", "ns", "default", "-o", "name"])
        assert (result.exit_code, result.stdout.strip()) == (0, "namespace/default"), result.stderr
        # client-go sends a kubeconfig's credentials only over TLS: to the server, kubectl is anonymous here
        code, _, err = await kubectl(config, "get", "ns")
        assert code == 1 and "You must be logged in to the server" in err
