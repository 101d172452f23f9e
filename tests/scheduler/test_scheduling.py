"""The scheduler through a real API server: pending pods are bound, with the Scheduled event and condition, or
left Pending with Kubernetes' FailedScheduling message."""

from __future__ import annotations

import asyncio

from minik.client import Client
from minik.cluster import Cluster
from minik.scheduler import Scheduler

from tests.scheduler.helpers import create_node, events_for, node_of, pod_object, wait_bound, wait_for

GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


async def test_a_pod_stays_pending_without_a_scheduler_and_is_bound_once_one_runs(cluster: Cluster) -> None:
    async with Client.http(cluster.url) as client:
        await create_node(client, "node-1")
        await client.create("pods", pod_object("web", cpu="100m"))
        await asyncio.sleep(0.3)
        assert await node_of(client, "web") == ""
        scheduler = Scheduler(client)
        await scheduler.start()
        try:
            assert await wait_bound(client, "web") == "node-1"
            pod = await client.get("pods", "web", "default")
            condition = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
            assert condition["status"] == "True"
            await scheduler.recorder.flush()
            events = await events_for(client, "web")
            assert [(e["reason"], e["message"], e["source"]["component"]) for e in events] == \
                [("Scheduled", "Successfully assigned default/web to node-1", "default-scheduler")]
        finally:
            await scheduler.stop()


async def test_three_replicas_land_on_three_different_nodes(api: Client) -> None:
    for i in range(3):
        await create_node(api, f"node-{i}")
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-uid", "controller": True}
    for i in range(3):
        pod = pod_object(f"web-{i}", labels={"app": "web"})
        pod["metadata"]["ownerReferences"] = [owner]
        await api.create("pods", pod)
    nodes = {await wait_bound(api, f"web-{i}") for i in range(3)}
    assert nodes == {"node-0", "node-1", "node-2"}


async def test_a_pod_never_lands_on_a_node_whose_taint_it_does_not_tolerate(api: Client) -> None:
    await create_node(api, "gpu-1", taints=[GPU_TAINT])
    await create_node(api, "gpu-2", taints=[GPU_TAINT])
    await create_node(api, "plain")
    for i in range(6):
        await api.create("pods", pod_object(f"p-{i}", cpu="100m"))
    assert {await wait_bound(api, f"p-{i}") for i in range(6)} == {"plain"}
    tolerant = pod_object("trainer", cpu="100m", nodeSelector={"kubernetes.io/hostname": "gpu-2"},
                          tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                        "effect": "NoSchedule"}])
    await api.create("pods", tolerant)
    assert await wait_bound(api, "trainer") == "gpu-2"


async def test_an_unschedulable_pod_gets_kubernetes_message_and_lands_when_a_node_fits(
        api: Client, scheduled_cluster: Cluster) -> None:
    await create_node(api, "gpu-1", taints=[GPU_TAINT])
    await create_node(api, "gpu-2", taints=[GPU_TAINT])
    await create_node(api, "small", cpu="1")
    await api.create("pods", pod_object("big", cpu="2"))

    async def condition() -> dict | None:
        pod = await api.get("pods", "big", "default")
        return next((c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None)

    found = await wait_for(condition)
    message = ("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}. "
               "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
               "2 Preemption is not helpful for scheduling.")
    assert (found["status"], found["reason"], found["message"]) == ("False", "Unschedulable", message)
    scheduler = scheduled_cluster.components["scheduler"]
    await scheduler.recorder.flush()  # type: ignore[attr-defined]
    events = await events_for(api, "big")
    assert [(e["type"], e["reason"], e["message"]) for e in events] == [("Warning", "FailedScheduling", message)]

    await create_node(api, "large", cpu="8")
    assert await wait_bound(api, "big") == "large"


async def test_cordoned_nodes_and_node_selectors_are_respected(api: Client) -> None:
    await create_node(api, "cordoned", unschedulable=True, labels={"disk": "ssd"})
    await create_node(api, "ssd", labels={"disk": "ssd", "topology.kubernetes.io/zone": "z1"})
    await create_node(api, "hdd", labels={"disk": "hdd", "topology.kubernetes.io/zone": "z2"})
    for i in range(4):
        await api.create("pods", pod_object(f"db-{i}", nodeSelector={"disk": "ssd"}))
    assert {await wait_bound(api, f"db-{i}") for i in range(4)} == {"ssd"}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["z1"]}]}]}}}
    await api.create("pods", pod_object("elsewhere", affinity=affinity))
    assert await wait_bound(api, "elsewhere") == "hdd"


async def test_host_port_conflicts_send_pods_to_other_nodes(api: Client) -> None:
    await create_node(api, "a")
    await create_node(api, "b")
    ports = [{"containerPort": 80, "hostPort": 8080}]
    await api.create("pods", pod_object("one", ports=ports))
    await api.create("pods", pod_object("two", ports=ports))
    await api.create("pods", pod_object("three", ports=ports))
    assert {await wait_bound(api, "one"), await wait_bound(api, "two")} == {"a", "b"}

    async def reason() -> str:
        pod = await api.get("pods", "three", "default")
        return next((c.get("message", "") for c in pod["status"].get("conditions") or []
                     if c["type"] == "PodScheduled"), "")

    assert "2 node(s) didn't have free ports for the requested pod ports" in await wait_for(reason)


async def test_two_schedulers_share_a_cluster_without_touching_each_others_pods(
        api: Client, scheduled_cluster: Cluster) -> None:
    await create_node(api, "n1")
    await api.create("pods", pod_object("mine", schedulerName="other-scheduler"))
    await api.create("pods", pod_object("default-one"))
    assert await wait_bound(api, "default-one") == "n1"
    await asyncio.sleep(0.2)
    assert await node_of(api, "mine") == ""
    from minik.scheduler import SchedulerSettings

    other = Scheduler(api, SchedulerSettings(name="other-scheduler"))
    await other.start()
    try:
        assert await wait_bound(api, "mine") == "n1"
        await other.recorder.flush()
        events = await events_for(api, "mine")
        assert [e["source"]["component"] for e in events] == ["other-scheduler"]
    finally:
        await other.stop()
