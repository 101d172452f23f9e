"""A second node joined with `minik node join` (a real process on the same Docker engine) to a cluster served
over HTTPS as `minik up` serves it: the join pins the CA before it sends the token, the node registers with the
Node fields Kubernetes shows, takes pods from the scheduler, serves their logs over TLS to the API server, keeps
to its own containers, and rides out an API server that goes away (restarting needs no token)."""

from __future__ import annotations

import asyncio
import stat
import time
from pathlib import Path

import aiodocker

from minik.api import tokens
from minik.api.errors import StatusError
from minik.client import Client
from minik.cluster import Cluster, ClusterSettings
from minik.kubelet.component import NodeComponent
from minik.kubelet.runtimes.select import kubelet_id
from tests.kubelet.docker_helpers import NODE, ROOT_CA_ONLY, DockerNode, busybox, docker_cluster, remove_containers
from tests.kubelet.helpers import condition, container_state, phase, pod_manifest, wait_for_pod, wait_gone
from tests.kubelet.join_helpers import ca_hash, join_command, join_token, joined_node, start_join, stop_join

SECOND = "node-b"


async def wait_for_node(client: Client, name: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        nodes = {n["metadata"]["name"]: n for n in (await client.list("nodes"))["items"]}
        if name in nodes and condition(nodes[name], "Ready") == "True":
            return nodes[name]
        await asyncio.sleep(0.1)
    raise AssertionError(f"node {name} did not become Ready")


async def read_logs_eventually(client: Client, pod: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            logs = await client.logs(pod, "default")
            try:
                return b"".join([chunk async for chunk in logs.chunks]).decode()
            finally:
                await logs.close()
        except StatusError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def container_ids(node: DockerNode, pod: dict) -> list[str]:
    return sorted(c["Id"] for c in await node.containers(pod["metadata"]["uid"]))


async def test_a_joined_node_registers_takes_scheduled_pods_and_serves_their_logs(tmp_path: Path) -> None:
    async with docker_cluster(tmp_path / "c", disabled=frozenset(), controllers=ROOT_CA_ONLY) as node:
        cluster, client = node.cluster, node.client
        assert cluster.url.startswith("https://")
        async with joined_node(cluster.url, await join_token(client), ca_hash(cluster), SECOND, tmp_path / "b",
                               "--runtime", "docker", "--labels", "tier=second", "--taints",
                               "dedicated=second:NoSchedule", "--zone", "zone-b", "--region", "region-1"):
            for kept in ("kubelet.conf", "kubelet.key", "kubelet.crt", "ca.crt"):  # the node's own credential
                assert stat.S_IMODE((tmp_path / "b" / "credentials" / kept).stat().st_mode) == 0o600
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
            assert not (cluster.settings.data_dir / "join-token").exists()  # no shared secret: tokens expire

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


async def run_join(command: list[str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode or 0, err.decode()


async def test_join_refuses_a_wrong_ca_hash_a_wrong_token_and_bad_labels(tmp_path: Path) -> None:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL",
                               disabled=frozenset({"scheduler", "controllers", "node", "proxy"}))
    async with Cluster(settings) as cluster, cluster.admin_client() as admin:
        token, pin = await join_token(admin), ca_hash(cluster)
        wrong_pin = "sha256:" + "0" * 64
        for given_token, given_pin, extra, message in (
                (token, wrong_pin, [], "does not match the pinned hash sha256:0000"),
                (token, None, [], "the CA hash is missing"),
                ("wrong0.0000000000000000", pin, [], "the join token was refused"),
                (token, pin, ["--labels", "novalue"], "invalid label 'novalue'"),
                (token, pin, ["--labels", "node-role.kubernetes.io/worker="],
                 "a node may not set node-role.kubernetes.io/worker on itself")):
            code, err = await run_join(join_command(cluster.url, given_token, given_pin, "refused",
                                                    tmp_path / "r", "--runtime", "fake", *extra))
            assert code != 0 and message in err, err
            assert "Traceback" not in err
        # the wrong pin stopped the join before the token left: nothing was exchanged for it
        secrets = (await admin.list("secrets", tokens.NAMESPACE))["items"]
        assert not [s for s in secrets if s["type"] == tokens.NODE_CREDENTIAL_TYPE]
        assert (await admin.list("nodes"))["items"] == []
        assert not (tmp_path / "r" / "credentials" / "kubelet.conf").exists()


async def test_pods_keep_running_while_the_api_server_is_down_and_the_node_resyncs_after(tmp_path: Path) -> None:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL",
                               disabled=frozenset({"scheduler", "node", "proxy"}), controllers=ROOT_CA_ONLY)
    cluster = Cluster(settings)
    await cluster.start()
    port = cluster.port
    async with cluster.admin_client() as client:
        token = await join_token(client)
    process = await start_join(join_command(cluster.url, token, ca_hash(cluster), SECOND, tmp_path / "b",
                                            "--runtime", "docker"))
    try:
        async with cluster.admin_client() as client:
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
        async with cluster.admin_client() as client:
            pod = await client.get("pods", "steady", "default")
            assert container_state(pod)["containerID"] == f"docker://{container}"
            await client.create("pods", pod_manifest("after", node=SECOND,
                                                     containers=[busybox("app", "exec sleep 3600")]))
            await wait_for_pod(client, "after", lambda p: phase(p) == "Running", 60)
            await client.delete("pods", "steady", "default", grace_period_seconds=1)
            await wait_gone(client, "pods", "steady", timeout=30)
            pod = await client.get("pods", "after", "default")
            assert container_state(pod)["restartCount"] == 0

        assert await stop_join(process) == 0  # the node restarts on its saved credential: no token, no pin
        process = await start_join(join_command(cluster.url, None, None, SECOND, tmp_path / "b", "--runtime",
                                                "docker"))
        async with cluster.admin_client() as client:
            await wait_for_node(client, SECOND)
            await read_logs_eventually(client, "after")  # the new kubelet's endpoint (a new port) serves them
            assert container_state(await client.get("pods", "after", "default"))["restartCount"] == 0
    finally:
        assert await stop_join(process) == 0
        await cluster.stop()
        async with aiodocker.Docker() as docker:
            await remove_containers(docker, kubelet_id(tmp_path / "b" / "kubelet"))
