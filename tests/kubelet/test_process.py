"""The process runtime: a container's command as a local process, for machines without Docker."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.client import Client
from minik.cluster import Cluster, ClusterSettings
from minik.kubelet.component import NodeComponent
from tests.kubelet.helpers import container_state, phase, pod_manifest, wait_for_pod, wait_gone

NODE = "process-node"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL", node_name=NODE,
                               insecure_loopback=True,
                               node_runtime="process", disabled=frozenset({"scheduler", "controllers", "proxy"}))
    async with Cluster(settings) as cluster, Client.http(cluster.url) as c:
        component: NodeComponent = cluster.components["node"]  # type: ignore[assignment]
        await asyncio.wait_for(component.local_ready.wait(), 10)
        yield c


async def test_a_command_runs_as_a_process_with_its_env_and_exits_per_restart_policy(client: Client) -> None:
    await client.create("pods", pod_manifest("job", node=NODE, restart_policy="Never", containers=[
        {"name": "app", "image": "none", "command": ["sh", "-c", 'test "$GREETING" = hello && exit 3'],
         "env": [{"name": "GREETING", "value": "hello"}]}]))
    pod = await wait_for_pod(client, "job", lambda p: phase(p) == "Failed")
    assert container_state(pod)["state"]["terminated"]["exitCode"] == 3


async def test_a_long_running_process_runs_on_the_node_address_and_stops_on_deletion(client: Client) -> None:
    await client.create("pods", pod_manifest("server", node=NODE, containers=[
        {"name": "app", "image": "none", "command": ["sleep", "600"]}], terminationGracePeriodSeconds=10))
    pod = await wait_for_pod(client, "server", lambda p: phase(p) == "Running")
    assert pod["status"]["podIP"] == pod["status"]["hostIP"]
    await client.delete("pods", "server", "default")
    await wait_gone(client, "pods", "server", timeout=8)
