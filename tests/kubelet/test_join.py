"""A second node joined with `minik node join` (a real process on the same Docker engine): it registers with
the Node fields Kubernetes shows, takes pods from the scheduler, serves their logs, keeps to its own containers,
and rides out an API server that goes away."""

from __future__ import annotations

import asyncio
import stat
import time
from pathlib import Path

import aiodocker

from minik.client import Client
from minik.cluster import Cluster, ClusterSettings
from minik.kubelet.component import NodeComponent
from minik.kubelet.runtimes.select import kubelet_id
from tests.kubelet.docker_helpers import NODE, DockerNode, busybox, docker_cluster, remove_containers
from tests.kubelet.helpers import condition, container_state, phase, pod_manifest, wait_for_pod, wait_gone
from tests.kubelet.join_helpers import join_command, joined_node, start_join, stop_join

SECOND = "node-b"


async def wait_for_node(client: Client, name: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        nodes = {n["metadata"]["name"]: n for n in (await client.list("nodes"))["items"]}
        if name in nodes and condition(nodes[name], "Ready") == "True":
            return nodes[name]
        await asyncio.sleep(0.1)
    raise AssertionError(f"node {name} did not become Ready")


async def container_ids(node: DockerNode, pod: dict) -> list[str]:
    return sorted(c["Id"] for c in await node.containers(pod["metadata"]["uid"]))


async def test_a_joined_node_registers_takes_scheduled_pods_and_serves_their_logs(tmp_path: Path) -> None:
    async with docker_cluster(tmp_path / "c", disabled=frozenset({"controllers"})) as node:
        cluster, client = node.cluster, node.client
        token_file = cluster.settings.data_dir / "join-token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        async with joined_node(cluster.url, cluster.join_token, SECOND, tmp_path / "b", "--runtime", "docker",
                               "--labels", "tier=second", "--taints", "dedicated=second:NoSchedule",
                               "--zone", "zone-b", "--region", "region-1"):
            joined = await wait_for_node(client, SECOND)
            labels = joined["metadata"]["labels"]
            assert labels["tier"] == "second" and labels["kubernetes.io/hostname"] == SECOND
            assert labels["topology.kubernetes.io/zone"] == "zone-b"
            assert labels["topology.kubernetes.io/region"] == "region-1"
            assert joined["spec"]["taints"] == [{"key": "dedicated", "value": "second", "effect": "NoSchedule"}]
            status = joined["status"]
            assert status["nodeInfo"]["containerRuntimeVersion"].startswith("docker://")
            assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
            assert {a["type"] for a in status["addresses"]} == {"InternalIP", "Hostname"}
            assert set(status["capacity"]) >= {"cpu", "memory", "ephemeral-storage", "pods"}
            lease = await client.get("leases", SECOND, "kube-node-lease")
            assert lease["spec"]["holderIdentity"] == SECOND

            script = "echo served by $(hostname); exec sleep 3600"
            await client.create("pods", pod_manifest("far", containers=[busybox("app", script)],
                                                     nodeSelector={"tier": "second"},
                                                     tolerations=[{"key": "dedicated", "operator": "Equal",
                                                                   "value": "second", "effect": "NoSchedule"}]))
            await client.create("pods", pod_manifest("near", containers=[busybox("app", "exec sleep 3600")]))
            far = await wait_for_pod(client, "far", lambda p: phase(p) == "Running", 40)
            near = await wait_for_pod(client, "near", lambda p: phase(p) == "Running", 40)
            assert far["spec"]["nodeName"] == SECOND and near["spec"]["nodeName"] == NODE  # the taint kept it off
            logs = await client.logs("far", "default")
            try:
                text = b"".join([chunk async for chunk in logs.chunks]).decode()
            finally:
                await logs.close()
            assert text == "served by far\n"

            # two kubelets on one engine: the local one restarting (and collecting its orphans) leaves the
            # joined node's containers alone
            far_ids = await container_ids(node, far)
            await node.component.stop()
            restarted = NodeComponent(cluster.settings, cluster.client)  # type: ignore[arg-type]
            cluster.components["node"] = restarted
            await restarted.start()
            await asyncio.wait_for(restarted.local_ready.wait(), 20)
            await asyncio.sleep(1.0)
            assert await container_ids(node, far) == far_ids
            assert "running" in container_state(await client.get("pods", "far", "default"))["state"]


async def test_join_refuses_a_wrong_token_and_bad_labels(cluster: Cluster, tmp_path: Path) -> None:
    for extra, message in (([], "refused the token (401 Unauthorized)"),
                           (["--labels", "novalue"], "invalid label 'novalue'")):
        command = join_command(cluster.url, "wrong0.0000000000000000", "refused", tmp_path / "r", "--runtime",
                               "fake", *extra)
        process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode != 0
        assert message in err.decode(), err.decode()
    assert (await cluster.client.list("nodes"))["items"] == []  # type: ignore[union-attr]


async def test_pods_keep_running_while_the_api_server_is_down_and_the_node_resyncs_after(tmp_path: Path) -> None:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL",
                               disabled=frozenset({"scheduler", "controllers", "node"}))
    cluster = Cluster(settings)
    await cluster.start()
    token, port = cluster.join_token, cluster.port
    process = await start_join(join_command(cluster.url, token, SECOND, tmp_path / "b", "--runtime", "docker"))
    try:
        async with Client.http(cluster.url) as client:
            await wait_for_node(client, SECOND)
            await client.create("pods", pod_manifest("steady", node=SECOND,
                                                     containers=[busybox("app", "exec sleep 3600")]))
            pod = await wait_for_pod(client, "steady", lambda p: phase(p) == "Running", 40)
        container = container_state(pod)["containerID"].removeprefix("docker://")
        await cluster.stop()  # the API is gone: the node keeps its pods and retries
        async with aiodocker.Docker() as docker:
            await asyncio.sleep(3.0)
            assert (await docker.containers.container(container).show())["State"]["Running"]
        assert process.returncode is None

        cluster = Cluster(ClusterSettings(**{**settings.__dict__, "port": port}))
        await cluster.start()
        async with Client.http(cluster.url) as client:
            pod = await client.get("pods", "steady", "default")
            assert container_state(pod)["containerID"] == f"docker://{container}"
            await client.create("pods", pod_manifest("after", node=SECOND,
                                                     containers=[busybox("app", "exec sleep 3600")]))
            await wait_for_pod(client, "after", lambda p: phase(p) == "Running", 60)
            await client.delete("pods", "steady", "default", grace_period_seconds=1)
            await wait_gone(client, "pods", "steady", timeout=30)
            pod = await client.get("pods", "after", "default")
            assert container_state(pod)["restartCount"] == 0
    finally:
        assert await stop_join(process) == 0
        await cluster.stop()
        async with aiodocker.Docker() as docker:
            await remove_containers(docker, kubelet_id(tmp_path / "b" / "kubelet"))
