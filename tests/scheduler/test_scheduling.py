"""The scheduler through a real API server with simulated nodes: pending pods are bound, with the Scheduled event
and condition, or left Pending with Kubernetes' FailedScheduling message; taints, selectors, node affinity,
cordoned nodes, host ports, replicas spread, and two schedulers side by side."""

from __future__ import annotations

import asyncio

from minik.client import Client
from minik.cluster import Cluster
from minik.scheduler import Scheduler, SchedulerSettings
from tests.scheduler.helpers import (
    SimulatedNodes,
    events_for,
    node_of,
    pod_object,
    scheduled_condition,
    simulated_node,
    wait_bound,
    wait_for,
)

GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


async def test_a_pod_stays_pending_without_a_scheduler_and_is_bound_once_one_runs(cluster: Cluster) -> None:
    async with cluster.admin_client() as client:
        nodes = SimulatedNodes(client)
        await nodes.add(simulated_node("node-1"))
        scheduler = Scheduler(client)
        try:
            await client.create("pods", pod_object("web", cpu="100m"))
            await asyncio.sleep(0.3)
            assert await node_of(client, "web") == ""
            await scheduler.start()
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
            await nodes.stop()


async def test_three_replicas_on_three_equal_nodes_land_on_three_different_nodes(
        api: Client, nodes: SimulatedNodes) -> None:
    # big nodes: a replica's requests barely move the resource scores, so spreading the owner's pods decides
    await nodes.add(*(simulated_node(f"node-{i}", cpu="64", memory="256Gi") for i in range(3)))
    rs = await api.create("replicasets", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}})
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"],
             "controller": True}
    for i in range(3):
        pod = pod_object(f"web-{i}", labels={"app": "web"})
        pod["metadata"]["ownerReferences"] = [owner]
        await api.create("pods", pod)
        await wait_bound(api, f"web-{i}")
    assert {await node_of(api, f"web-{i}") for i in range(3)} == {"node-0", "node-1", "node-2"}


async def test_a_pod_never_lands_on_a_node_whose_taint_it_does_not_tolerate(api: Client, nodes: SimulatedNodes) -> None:
    await nodes.add(simulated_node("gpu-1", taints=[GPU_TAINT]), simulated_node("gpu-2", taints=[GPU_TAINT]),
                    simulated_node("plain"))
    for i in range(6):
        await api.create("pods", pod_object(f"p-{i}", cpu="100m"))
    assert {await wait_bound(api, f"p-{i}") for i in range(6)} == {"plain"}
    tolerant = pod_object("trainer", cpu="100m", nodeSelector={"kubernetes.io/hostname": "gpu-2"},
                          tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                        "effect": "NoSchedule"}])
    await api.create("pods", tolerant)
    assert await wait_bound(api, "trainer") == "gpu-2"


async def test_an_unschedulable_pod_gets_kubernetes_message_and_lands_when_a_node_fits(
        api: Client, nodes: SimulatedNodes, scheduled_cluster: Cluster) -> None:
    await nodes.add(simulated_node("gpu-1", taints=[GPU_TAINT]), simulated_node("gpu-2", taints=[GPU_TAINT]),
                    simulated_node("small", cpu="1"))
    await api.create("pods", pod_object("big", cpu="2"))
    found = await wait_for(lambda: scheduled_condition(api, "big"))
    message = ("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}. "
               "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
               "2 Preemption is not helpful for scheduling.")
    assert (found["status"], found["reason"], found["message"]) == ("False", "Unschedulable", message)
    scheduler = scheduled_cluster.components["scheduler"]
    await scheduler.recorder.flush()  # type: ignore[attr-defined]
    events = await events_for(api, "big")
    assert [(e["type"], e["reason"], e["message"]) for e in events] == [("Warning", "FailedScheduling", message)]

    await nodes.add(simulated_node("large", cpu="8"))
    assert await wait_bound(api, "big") == "large"


async def test_failed_scheduling_is_one_event_counted_at_every_retry(
        api: Client, nodes: SimulatedNodes, scheduled_cluster: Cluster) -> None:
    await nodes.add(simulated_node("small", cpu="1"))
    await api.create("pods", pod_object("big", cpu="2"))
    await wait_for(lambda: scheduled_condition(api, "big"))
    scheduler = scheduled_cluster.components["scheduler"]

    async def counted_twice() -> list:
        # a node change makes the scheduler try again (after the pod's backoff); the message stays the same
        await api.patch("nodes", "small", {"metadata": {"labels": {"touched": str(scheduler.attempts)}}})
        await scheduler.recorder.flush()  # type: ignore[attr-defined]
        events = await events_for(api, "big")
        return events if events and events[0]["count"] >= 2 else []

    events = await wait_for(counted_twice, timeout=15, interval=0.3)
    assert len(events) == 1 and events[0]["reason"] == "FailedScheduling"
    assert events[0]["lastTimestamp"] >= events[0]["firstTimestamp"]


async def test_node_selectors_node_affinity_and_cordoned_nodes_are_respected(
        api: Client, nodes: SimulatedNodes) -> None:
    await nodes.add(simulated_node("cordoned", zone="z1", labels={"disk": "ssd"}),
                    simulated_node("ssd", zone="z1", labels={"disk": "ssd"}),
                    simulated_node("hdd", zone="z2", labels={"disk": "hdd"}))
    await nodes.cordon("cordoned")
    await wait_for(lambda: _cordoned(api, "cordoned"))
    for i in range(4):
        await api.create("pods", pod_object(f"db-{i}", nodeSelector={"disk": "ssd"}))
    assert {await wait_bound(api, f"db-{i}") for i in range(4)} == {"ssd"}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["z1"]}]}]}}}
    await api.create("pods", pod_object("elsewhere", affinity=affinity))
    assert await wait_bound(api, "elsewhere") == "hdd"
    await api.create("pods", pod_object("only-cordoned", nodeSelector={"kubernetes.io/hostname": "cordoned"}))
    condition = await wait_for(lambda: scheduled_condition(api, "only-cordoned"))
    # Kubernetes sorts the "count reason" strings
    assert condition["message"].startswith("0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't "
                                           "match Pod's node affinity/selector.")


async def _cordoned(api: Client, name: str) -> bool:
    return bool((await api.get("nodes", name))["spec"].get("unschedulable"))


async def test_host_port_conflicts_send_pods_to_other_nodes(api: Client, nodes: SimulatedNodes) -> None:
    await nodes.add(simulated_node("a"), simulated_node("b"))
    ports = [{"containerPort": 80, "hostPort": 8080}]
    for name in ("one", "two", "three"):
        await api.create("pods", pod_object(name, ports=ports))
    assert {await wait_bound(api, "one"), await wait_bound(api, "two")} == {"a", "b"}
    condition = await wait_for(lambda: scheduled_condition(api, "three"))
    assert condition["message"].startswith(
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports.")


async def test_two_schedulers_share_a_cluster_without_touching_each_others_pods(
        api: Client, nodes: SimulatedNodes) -> None:
    await nodes.add(simulated_node("n1"))
    await api.create("pods", pod_object("mine", schedulerName="other-scheduler"))
    await api.create("pods", pod_object("default-one"))
    assert await wait_bound(api, "default-one") == "n1"
    await asyncio.sleep(0.2)
    assert await node_of(api, "mine") == ""
    assert await scheduled_condition(api, "mine") is None  # the default scheduler wrote nothing about it
    other = Scheduler(api, SchedulerSettings(name="other-scheduler"))
    await other.start()
    try:
        assert await wait_bound(api, "mine") == "n1"
        await other.recorder.flush()
        events = await events_for(api, "mine")
        assert [e["source"]["component"] for e in events] == ["other-scheduler"]
        await api.create("pods", pod_object("default-two"))
        assert await wait_bound(api, "default-two") == "n1"
        events = await events_for(api, "default-two")
        assert {e["source"]["component"] for e in events} <= {"default-scheduler"}
    finally:
        await other.stop()
