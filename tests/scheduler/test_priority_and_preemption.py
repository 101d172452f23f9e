"""Priority and preemption through a real API server with simulated nodes: PriorityClasses resolved at
admission, the queue serving important pods first, and a high-priority pod evicting lower-priority ones
(gracefully, with events) and landing on the node it was nominated to."""

from __future__ import annotations

from minik.client import Client
from minik.cluster import Cluster
from tests.scheduler.helpers import (
    SimulatedNodes,
    events_for,
    pod_object,
    scheduled_condition,
    simulated_node,
    wait_bound,
    wait_for,
)


async def priority_classes(api: Client) -> None:
    for name, value, policy in (("low", 10, "PreemptLowerPriority"), ("high", 1000, "PreemptLowerPriority"),
                                ("polite", 1000, "Never")):
        await api.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                             "metadata": {"name": name}, "value": value,
                                             "preemptionPolicy": policy})


async def gone(api: Client, name: str) -> bool:
    return not any(p["metadata"]["name"] == name for p in (await api.list("pods", "default"))["items"])


async def test_a_high_priority_pod_preempts_low_priority_ones_and_lands(
        api: Client, nodes: SimulatedNodes, scheduled_cluster: Cluster) -> None:
    await priority_classes(api)
    await nodes.add(simulated_node("n1", cpu="2"), simulated_node("n2", cpu="2"))
    # n1 runs two small low-priority pods, n2 one low-priority pod and one that matters as much as the newcomer
    for name, node, cls in (("low-a", "n1", "low"), ("low-b", "n1", "low"), ("low-c", "n2", "low"),
                            ("peer", "n2", "high")):
        await api.create("pods", pod_object(name, cpu="1", priorityClassName=cls,
                                            nodeSelector={"kubernetes.io/hostname": node}))
        assert await wait_bound(api, name) == node
    await api.create("pods", pod_object("urgent", cpu="2", priorityClassName="high"))
    assert await wait_bound(api, "urgent", timeout=20) == "n1"
    for victim in ("low-a", "low-b"):
        assert await wait_for(lambda name=victim: gone(api, name))
    assert not await gone(api, "low-c") and not await gone(api, "peer")
    urgent = await api.get("pods", "urgent", "default")
    assert urgent["spec"]["priority"] == 1000
    assert urgent["status"].get("nominatedNodeName") == "n1"
    scheduler = scheduled_cluster.components["scheduler"]
    await scheduler.recorder.flush()  # type: ignore[attr-defined]
    preempted = [e for e in (await api.list("events", "default"))["items"] if e["reason"] == "Preempted"]
    assert sorted((e["involvedObject"]["name"], e["message"], e["source"]["component"]) for e in preempted) == [
        (name, f"Preempted by pod {urgent['metadata']['uid']} on node n1", "default-scheduler")
        for name in ("low-a", "low-b")]


async def test_a_pod_whose_class_says_never_waits_instead_of_preempting(api: Client, nodes: SimulatedNodes) -> None:
    await priority_classes(api)
    await nodes.add(simulated_node("n1", cpu="1"))
    await api.create("pods", pod_object("low", cpu="1", priorityClassName="low"))
    await wait_bound(api, "low")
    await api.create("pods", pod_object("polite", cpu="1", priorityClassName="polite"))
    condition = await wait_for(lambda: scheduled_condition(api, "polite"))
    assert condition["message"] == ("0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to "
                                    "preemptionPolicy=Never.")
    assert not await gone(api, "low")
    events = await events_for(api, "low")
    assert "Preempted" not in {e["reason"] for e in events}


async def test_pending_pods_are_placed_in_priority_order(api: Client, nodes: SimulatedNodes) -> None:
    await priority_classes(api)
    await nodes.add(simulated_node("n1", cpu="1"))
    await api.create("pods", pod_object("blocker", cpu="1", priorityClassName="high"))
    await wait_bound(api, "blocker")
    # both wait; the low one first in time
    await api.create("pods", pod_object("early-low", cpu="1", priorityClassName="low"))
    await api.create("pods", pod_object("late-high", cpu="1", priorityClassName="high"))
    await wait_for(lambda: scheduled_condition(api, "early-low"))
    await wait_for(lambda: scheduled_condition(api, "late-high"))
    await api.delete("pods", "blocker", "default")
    assert await wait_bound(api, "late-high", timeout=20) == "n1"
    assert not (await api.get("pods", "early-low", "default"))["spec"].get("nodeName")
