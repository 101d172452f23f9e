"""Fake nodes: registration, leases and the pod life cycle on the simulated runtime."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.client import Client
from minik.cluster import Cluster, ClusterSettings
from minik.kubelet.component import FAKE_KUBELET
from minik.kubelet.podworker import WorkerSettings
from minik.kubelet.runtimes.fake import EXIT_CODE_ANNOTATION, RUN_SECONDS_ANNOTATION
from tests.kubelet.helpers import condition, container_state, phase, pod_manifest, wait_for_pod, wait_gone

NODE = "fake-node-000"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL", local_node=False,
                               fake_nodes=3, fake_start_delay_seconds=0.05,
                               disabled=frozenset({"scheduler", "controllers", "proxy"}),
                               fake_kubelet=dataclasses.replace(FAKE_KUBELET, worker=WorkerSettings(
                                   backoff_initial_seconds=0.5, backoff_max_seconds=2.0)))
    async with Cluster(settings) as cluster:
        async with cluster.admin_client() as c:
            yield c


async def _nodes(client: Client, count: int) -> list[dict]:
    for _ in range(200):
        nodes = (await client.list("nodes"))["items"]
        if len(nodes) >= count:
            return nodes
        await asyncio.sleep(0.05)
    raise AssertionError("nodes did not register")


async def test_fake_nodes_register_ready_with_capacity_labels_and_leases(client: Client) -> None:
    nodes = await _nodes(client, 3)
    node = next(n for n in nodes if n["metadata"]["name"] == NODE)
    assert node["status"]["capacity"]["pods"] == "110"
    assert node["status"]["allocatable"]["cpu"] == "8"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == NODE
    assert node["metadata"]["labels"]["kubernetes.io/os"] == "linux"
    assert condition(node, "Ready") == "True" and condition(node, "MemoryPressure") == "False"
    assert {a["type"] for a in node["status"]["addresses"]} == {"InternalIP", "Hostname"}
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.32.0"
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"] == "fake://1.0.0"
    for _ in range(100):
        leases = (await client.list("leases", "kube-node-lease"))["items"]
        if len(leases) == 3:
            break
        await asyncio.sleep(0.05)
    lease = next(lease for lease in leases if lease["metadata"]["name"] == NODE)
    assert lease["spec"]["holderIdentity"] == NODE and lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]


async def test_a_pod_bound_to_a_fake_node_runs_with_an_ip_and_ready_conditions(client: Client) -> None:
    await _nodes(client, 3)
    await client.create("pods", pod_manifest("web"))
    await client.bind("web", NODE, "default")
    pod = await wait_for_pod(client, "web", lambda p: phase(p) == "Running" and condition(p, "Ready") == "True")
    status = pod["status"]
    assert status["podIP"].startswith("10.") and status["podIPs"] == [{"ip": status["podIP"]}]
    assert status["hostIP"] == next(a["address"] for a in (await client.get("nodes", NODE))["status"]["addresses"]
                                    if a["type"] == "InternalIP")
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "True", "ContainersReady": "True",
        "PodScheduled": "True"}
    app = container_state(pod)
    assert "running" in app["state"] and app["ready"] and app["restartCount"] == 0 and app["started"]
    assert app["containerID"].startswith("fake://")
    # nothing changes any more, so nothing more is written
    version = pod["metadata"]["resourceVersion"]
    await asyncio.sleep(0.5)
    assert (await client.get("pods", "web", "default"))["metadata"]["resourceVersion"] == version


async def test_a_pod_whose_container_exits_zero_succeeds_and_one_exiting_one_fails(client: Client) -> None:
    await _nodes(client, 3)
    await client.create("pods", pod_manifest("ok", node=NODE, restart_policy="Never",
                                             annotations={EXIT_CODE_ANNOTATION: "0", RUN_SECONDS_ANNOTATION: "0.1"}))
    await client.create("pods", pod_manifest("bad", node=NODE, restart_policy="Never",
                                             annotations={EXIT_CODE_ANNOTATION: "3"}))
    ok = await wait_for_pod(client, "ok", lambda p: phase(p) == "Succeeded")
    assert container_state(ok)["state"]["terminated"]["reason"] == "Completed"
    assert {c["type"]: c.get("reason") for c in ok["status"]["conditions"]}["Ready"] == "PodCompleted"
    bad = await wait_for_pod(client, "bad", lambda p: phase(p) == "Failed")
    terminated = container_state(bad)["state"]["terminated"]
    assert terminated["exitCode"] == 3 and terminated["reason"] == "Error"


async def test_init_containers_run_first_and_a_crashing_container_backs_off(client: Client) -> None:
    await _nodes(client, 3)
    pod = pod_manifest("crash", node=NODE, annotations={EXIT_CODE_ANNOTATION: "1"},
                       initContainers=[{"name": "setup", "image": "busybox:latest"}])
    await client.create("pods", pod)
    crashed = await wait_for_pod(client, "crash", lambda p: container_state(p).get("restartCount", 0) >= 1 and
                                 container_state(p)["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff")
    status = container_state(crashed)
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert "back-off 0.5s restarting failed container=app pod=crash_default" in status["state"]["waiting"]["message"]
    assert crashed["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert condition(crashed, "Initialized") == "True" and condition(crashed, "Ready") == "False"
    assert phase(crashed) == "Running"
    await wait_for_pod(client, "crash", lambda p: container_state(p).get("restartCount", 0) >= 2)


async def test_a_bad_image_shows_err_image_pull_then_image_pull_back_off(client: Client) -> None:
    await _nodes(client, 3)
    await client.create("pods", pod_manifest("img", node=NODE, containers=[
        {"name": "app", "image": "fake.invalid/nothing:1"}]))
    seen = set()

    def reason(p: dict) -> bool:
        seen.add(container_state(p).get("state", {}).get("waiting", {}).get("reason"))
        return "ImagePullBackOff" in seen

    pod = await wait_for_pod(client, "img", reason)
    assert "ErrImagePull" in seen and phase(pod) == "Pending"
    assert container_state(pod)["state"]["waiting"]["message"] == 'Back-off pulling image "fake.invalid/nothing:1"'


async def test_deleting_a_running_pod_removes_it_once_the_node_confirms(client: Client) -> None:
    await _nodes(client, 3)
    await client.create("pods", pod_manifest("gone", node=NODE))
    await wait_for_pod(client, "gone", lambda p: phase(p) == "Running")
    answer = await client.delete("pods", "gone", "default")
    assert answer["metadata"]["deletionTimestamp"]  # graceful: the node confirms
    await wait_gone(client, "pods", "gone")
