"""The local node's kubelet endpoint on real Docker, as `minik up` serves it: TLS with a serving certificate from
the cluster CA for the node's address, reached by the API server (its apiserver-kubelet-client certificate) and by
admins (DATA_DIR/pki/admin-client), refused to anyone else."""

from __future__ import annotations

import ssl
from pathlib import Path

import aiohttp
import pytest

from minik.api.errors import StatusError
from minik.cluster import Cluster
from minik.pki import kubelet
from tests.kubelet.docker_helpers import NODE, busybox, docker_cluster
from tests.kubelet.helpers import phase, pod_manifest, wait_for_pod


def kubelet_url(node: dict, path: str) -> str:
    status = node["status"]
    address = next(a["address"] for a in status["addresses"] if a["type"] == "InternalIP")
    return f"https://{address}:{status['daemonEndpoints']['kubeletEndpoint']['Port']}{path}"


async def fetch(url: str, context: ssl.SSLContext) -> tuple[int, str]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        async with session.get(url, ssl=context) as response:
            return response.status, await response.text()


def client_certificate(cluster: Cluster, tmp_path: Path, user: str, groups: tuple[str, ...]) -> ssl.SSLContext:
    """A client context with a certificate the cluster CA signed for ``user`` in ``groups``."""
    assert cluster.credentials is not None
    issued = cluster.credentials.ca.issue(user, groups, client=True)
    (tmp_path / "c.crt").write_bytes(issued.cert_pem)
    (tmp_path / "c.key").write_bytes(issued.key_pem)
    return kubelet.client_context(cluster.credentials.ca.cert_pem, tmp_path / "c.crt", tmp_path / "c.key")


async def test_only_the_api_server_and_admins_reach_the_kubelet_over_tls(tmp_path: Path) -> None:
    async with docker_cluster(tmp_path / "c") as node:
        cluster, client = node.cluster, node.client
        creds = cluster.credentials
        assert creds is not None
        await client.create("pods", pod_manifest("talker", node=NODE, containers=[
            busybox("app", "echo over tls; exec sleep 3600")]))
        await wait_for_pod(client, "talker", lambda p: phase(p) == "Running", 30)
        logs = await client.logs("talker", "default")  # through the API server, with its client certificate
        try:
            assert b"".join([chunk async for chunk in logs.chunks]) == b"over tls\n"
        finally:
            await logs.close()

        url = kubelet_url(await client.get("nodes", NODE), "/containerLogs/default/talker/app")
        admin = kubelet.client_context(creds.ca.cert_pem, *creds.admin_client)  # checks the serving certificate
        assert await fetch(url, admin) == (200, "over tls\n")

        anonymous = ssl.create_default_context(cadata=creds.ca.cert_pem.decode())
        with pytest.raises(aiohttp.ClientError):  # no client certificate: no TLS session at all
            await fetch(url, anonymous)
        other_node = client_certificate(cluster, tmp_path, "system:node:other", ("system:nodes",))
        assert await fetch(url, other_node) == (403, "Forbidden (user=system:node:other, verb=get, "
                                                     "resource=nodes, subresource=log)")
        plain = url.replace("https://", "http://")
        with pytest.raises(aiohttp.ClientError):  # no plain-HTTP door either
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
                async with session.get(plain) as response:
                    await response.read()


async def test_a_cluster_serving_plain_http_on_loopback_still_serves_its_kubelet_over_tls(tmp_path: Path) -> None:
    async with docker_cluster(tmp_path / "c", plain_http=True) as node:
        assert node.cluster.url.startswith("http://")
        pki = node.cluster.settings.data_dir / "pki"
        url = kubelet_url(await node.client.get("nodes", NODE), "/healthz")
        with pytest.raises(aiohttp.ClientError):
            await fetch(url, ssl.create_default_context(cafile=str(pki / "ca.crt")))
        assert await fetch(url, kubelet.apiserver_client_context(node.cluster.settings.data_dir)) == (200, "ok")


async def test_the_api_server_checks_that_the_kubelet_it_reaches_is_the_pods_node(tmp_path: Path) -> None:
    async with docker_cluster(tmp_path / "c") as node:
        client = node.client
        real = await client.get("nodes", NODE)
        await client.create("nodes", {"metadata": {"name": "impostor"}})
        # a Node whose status sends the API server to another node's kubelet (its address and port)
        await client.patch_status("nodes", "impostor", {"status": {
            "addresses": real["status"]["addresses"], "daemonEndpoints": real["status"]["daemonEndpoints"]}})
        await client.create("pods", pod_manifest("elsewhere", node="impostor", containers=[busybox("app", "true")]))
        with pytest.raises(StatusError) as refused:
            logs = await client.logs("elsewhere", "default")
            await logs.close()
        assert refused.value.code == 503 and "certificate" in refused.value.message, refused.value.message
        # (that kubelet's certificate is for docker-node, not impostor)

        await client.create("pods", pod_manifest("here", node=NODE, containers=[
            busybox("app", "echo here; exec sleep 3600")]))
        await wait_for_pod(client, "here", lambda p: phase(p) == "Running", 30)
        logs = await client.logs("here", "default")
        try:
            assert b"".join([chunk async for chunk in logs.chunks]) == b"here\n"
        finally:
            await logs.close()
