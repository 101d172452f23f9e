"""The process runtime: a container's command as a local process, for machines without Docker."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.api import remotecommand as rc
from minik.client import Client
from minik.cluster import Cluster, ClusterSettings
from minik.kubelet.component import NodeComponent
from tests.kubelet.docker_helpers import ROOT_CA_ONLY
from tests.kubelet.helpers import container_state, phase, pod_manifest, wait_for_pod, wait_gone

NODE = "process-node"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL", node_name=NODE,
                               node_runtime="process", disabled=frozenset({"scheduler", "proxy"}),
                               controllers=ROOT_CA_ONLY)  # pods mount the cluster CA
    async with Cluster(settings) as cluster, cluster.admin_client() as c:
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


async def test_probes_logs_and_exec_work_on_the_process_runtime(client: Client, tmp_path: Path) -> None:
    marker = tmp_path / "ready"
    script = f"echo starting; sleep 1; touch {marker}; exec sleep 600"
    await client.create("pods", pod_manifest("local", node=NODE, containers=[
        {"name": "app", "image": "none", "command": ["sh", "-c", script], "env": [{"name": "WHO", "value": "me"}],
         "readinessProbe": {"exec": {"command": ["test", "-e", str(marker)]}, "periodSeconds": 1}}]))
    pod = await wait_for_pod(client, "local", lambda p: phase(p) == "Running")
    assert container_state(pod)["ready"] is False
    await wait_for_pod(client, "local", lambda p: container_state(p).get("ready") is True)
    logs = await client.logs("local", "default")
    try:
        assert b"".join([chunk async for chunk in logs.chunks]) == b"starting\n"
    finally:
        await logs.close()
    socket = await client.exec_socket("local", "default", ["sh", "-c", "echo $WHO; exit 5"])
    received: list[tuple[int, bytes]] = []
    async with socket:
        async for message in socket:
            received.append(rc.parse(message.data))
    assert (rc.STDOUT, b"me\n") in received
    status = json.loads(next(payload for channel, payload in received if channel == rc.ERROR))
    assert rc.exit_code(status) == 5


async def test_the_process_runtime_runs_as_the_asked_user_and_refuses_what_it_cannot_honour(client: Client) -> None:
    await client.create("pods", pod_manifest("confined", node=NODE, restart_policy="Never", containers=[
        {"name": "user", "image": "none", "command": ["id", "-u"], "securityContext": {"runAsUser": 1000}},
        {"name": "shell", "image": "none", "command": ["sleep", "600"], "securityContext": {"runAsUser": 1001}},
        {"name": "ro", "image": "none", "command": ["true"],
         "securityContext": {"readOnlyRootFilesystem": True, "capabilities": {"add": ["NET_ADMIN"]}}}]))
    pod = await wait_for_pod(client, "confined", lambda p: "terminated" in container_state(p, "user").get("state", {})
                             and "waiting" in container_state(p, "ro").get("state", {}))
    waiting = container_state(pod, "ro")["state"]["waiting"]
    assert waiting == {"reason": "CreateContainerConfigError",
                       "message": "the process runtime cannot honour securityContext capabilities.add, "
                                  "readOnlyRootFilesystem; the container is not started without them"}
    logs = await client.logs("confined", "default", container="user")
    try:
        assert b"".join([chunk async for chunk in logs.chunks]) == b"1000\n"
    finally:
        await logs.close()
    events = (await client.list("events", "default", field_selector="involvedObject.name=confined"))["items"]
    assert any(e["reason"] == "Failed" and e["message"] == f"Error: {waiting['message']}" for e in events)
    # a command run in the container runs as its process does
    socket = await client.exec_socket("confined", "default", ["id", "-u"], container="shell")
    async with socket:
        received = [rc.parse(message.data) async for message in socket]
    assert (rc.STDOUT, b"1001\n") in received
