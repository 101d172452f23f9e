"""kubectl cordon, drain and uncordon against a cluster with simulated nodes: drain evicts through pods/eviction
and waits until the node's kubelet has confirmed each deletion."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubectl_helpers import Kubectl

from minik.client import Client
from minik.cluster import COMPONENTS, Cluster, ClusterSettings

NODE = "fake-node-000"


@pytest.fixture
async def nodes_cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    cluster = Cluster(ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                                      disabled=frozenset(COMPONENTS) - {"node"}, local_node=False, fake_nodes=2,
                                      fake_start_delay_seconds=0.0))
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


async def running_pods(client: Client, names: set[str], timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        pods = (await client.list("pods", namespace="default"))["items"]
        if {p["metadata"]["name"] for p in pods if p.get("status", {}).get("phase") == "Running"} >= names:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"pods {sorted(names)} did not all run within {timeout}s")


async def test_drain_cordons_the_node_and_evicts_its_pods_and_uncordon_reopens_it(nodes_cluster: Cluster,
                                                                                  tmp_path: Path) -> None:
    kubectl = Kubectl(nodes_cluster, tmp_path / "kubectl")
    async with nodes_cluster.admin_client() as client:
        for name in ("a", "b"):
            await client.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                         "spec": {"nodeName": NODE,
                                                  "containers": [{"name": "c", "image": "busybox:1.36"}]}},
                                namespace="default")
        await running_pods(client, {"a", "b"})

        drained = await kubectl("drain", NODE, "--force", "--grace-period=5", "--timeout=60s")
        lines = drained.out.splitlines() + drained.err.splitlines()
        assert f"node/{NODE} cordoned" in lines
        assert "evicting pod default/a" in lines and "evicting pod default/b" in lines
        assert "pod/a evicted" in lines and "pod/b evicted" in lines
        assert f"node/{NODE} drained" in lines
        assert (await client.get("nodes", NODE))["spec"]["unschedulable"] is True
        assert (await client.list("pods", namespace="default"))["items"] == []

        nodes = await kubectl("get", "nodes")
        assert [NODE, "Ready,SchedulingDisabled"] == nodes.rows[1][:2]

        assert (await kubectl("uncordon", NODE)).out.strip() == f"node/{NODE} uncordoned"
        assert not (await client.get("nodes", NODE))["spec"].get("unschedulable")
