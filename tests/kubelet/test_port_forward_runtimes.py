"""Port-forward on the runtimes other than Docker. Pods on the simulated runtime have no network: `kubectl
port-forward` and the pods/proxy path say so at once, in a Status kubectl prints, rather than waiting on an address
nothing answers on. Pods on the process runtime share the node's network, so port-forward reaches the node's
localhost, as Kubernetes reaches localhost in a pod's network namespace."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.api.errors import StatusError
from minik.cluster import Cluster, ClusterSettings
from minik.kubelet.component import NodeComponent
from tests.e2e.kubectl_helpers import Kubectl
from tests.kubelet.docker_helpers import ROOT_CA_ONLY
from tests.kubelet.helpers import phase, pod_manifest, wait_for_pod
from tests.kubelet.test_port_forward import http, port_forward

NODE = "fake-node-000"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL", local_node=False,
                               fake_nodes=1, fake_start_delay_seconds=0.05,
                               disabled=frozenset({"scheduler", "controllers", "proxy"}))
    async with Cluster(settings) as cluster:
        yield cluster


async def test_port_forward_and_proxy_to_a_simulated_pod_are_refused_with_the_reason(cluster: Cluster,
                                                                                    tmp_path: Path) -> None:
    async with cluster.admin_client() as client:
        await client.create("pods", pod_manifest("sim", node=NODE))
        await wait_for_pod(client, "sim", lambda p: phase(p) == "Running", 15)
        with pytest.raises(StatusError) as refused:
            await client._call("GET", "/api/v1/namespaces/default/pods/sim:80/proxy/")
        assert refused.value.code == 400 and "simulates containers without a network" in refused.value.message
    kubectl = Kubectl(cluster, tmp_path / "kubectl")
    result = await kubectl("port-forward", "pod/sim", ":80", ok=False)
    assert result.code == 1
    assert "cannot forward ports of pod sim: it runs on node fake-node-000, whose runtime (fake://1.0.0) " \
           "simulates containers without a network" in result.err


@pytest.fixture
async def process_cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    settings = ClusterSettings(data_dir=tmp_path / "p", port=0, synchronous="NORMAL", node_name="process-node",
                               node_runtime="process", disabled=frozenset({"scheduler", "proxy"}),
                               controllers=ROOT_CA_ONLY)
    async with Cluster(settings) as cluster:
        component: NodeComponent = cluster.components["node"]  # type: ignore[assignment]
        await asyncio.wait_for(component.local_ready.wait(), 10)
        yield cluster


async def test_port_forward_on_the_process_runtime_reaches_a_server_on_localhost(process_cluster: Cluster,
                                                                                tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "hello.txt").write_text("hello from a process\n")
    async with process_cluster.admin_client() as client:
        await client.create("pods", pod_manifest("local", node="process-node", containers=[
            {"name": "app", "image": "none", "command": [sys.executable, "-m", "http.server", str(port), "--bind",
                                                         "127.0.0.1", "--directory", str(tmp_path / "www")]}]))
        await wait_for_pod(client, "local", lambda p: phase(p) == "Running", 30)
    async with asyncio.timeout(30):  # the server listens on localhost only (no probe of the pod's IP reaches it)
        while True:
            with contextlib.suppress(OSError):
                (await asyncio.open_connection("127.0.0.1", port))[1].close()
                break
            await asyncio.sleep(0.1)
    kubectl = Kubectl(process_cluster, tmp_path / "kubectl")
    async with port_forward(kubectl, "pod/local", str(port)) as local:
        assert await http(local, "/hello.txt") == (200, b"hello from a process\n")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
