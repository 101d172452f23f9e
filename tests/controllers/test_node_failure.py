"""A node that stops heart-beating, through a real API server with the scheduler, the controllers and simulated
nodes (grace period 2 s instead of 50 s)."""

from __future__ import annotations

from typing import Any

from controller_helpers import eventually, pods
from test_workloads_on_nodes import available, deployment, with_nodes

from minik.testing.nodes import SimulatedCluster

Obj = dict[str, Any]
UNREACHABLE = "node.kubernetes.io/unreachable"


def taints(node: Obj) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in (node.get("spec") or {}).get("taints") or []}


async def test_a_node_that_stops_heartbeating_is_tainted_and_its_pods_are_recreated_on_the_others(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await with_nodes(sim, 3)
    tolerations = [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 1}]
    web = deployment("web", 6)
    web["spec"]["template"]["spec"]["tolerations"] = tolerations
    await sim.api.create("deployments", web, "default")
    await available(sim, "web", 6)
    victims = [p for p in await pods(sim.api, selector="app=web") if p["spec"]["nodeName"] == "node-0"]
    assert victims, "the scheduler put nothing on node-0"

    await sim.nodes.stop("node-0")

    async def tainted() -> Obj:
        node = await sim.api.get("nodes", "node-0")
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        return node if ready["status"] == "Unknown" and (UNREACHABLE, "NoExecute") in taints(node) else {}
    node = await eventually(tainted, timeout=20)
    assert (UNREACHABLE, "NoSchedule") in taints(node)
    assert ready_reason(node) == "NodeStatusUnknown"

    async def evicted() -> bool:
        for victim in victims:
            current = (await sim.api.list("pods", "default", field_selector=f"metadata.name={victim['metadata']['name']}"))
            for pod in current["items"]:
                if not pod["metadata"].get("deletionTimestamp"):
                    return False
                assert any(c["type"] == "DisruptionTarget" and c["reason"] == "DeletionByTaintManager"
                           for c in pod["status"]["conditions"])
        return True
    await eventually(evicted, timeout=20)

    async def replaced() -> list[Obj]:
        live = [p for p in await pods(sim.api, selector="app=web")
                if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])]
        return live if len(live) == 6 else []
    live = await eventually(replaced, timeout=30)
    assert {p["spec"]["nodeName"] for p in live} <= {"node-1", "node-2"}

    await sim.nodes.restart("node-0")

    async def untainted() -> bool:
        node = await sim.api.get("nodes", "node-0")
        return not {(k, e) for k, e in taints(node) if k == UNREACHABLE} and ready_reason(node) == "KubeletReady"
    await eventually(untainted, timeout=20)


def ready_reason(node: Obj) -> str:
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready").get("reason", "")


async def test_pods_without_their_own_tolerations_wait_the_default_300_seconds(simulated: SimulatedCluster) -> None:
    sim = simulated
    await with_nodes(sim, 2)
    await sim.api.create("deployments", deployment("web", 2), "default")
    await available(sim, "web", 2)
    on_node_0 = [p for p in await pods(sim.api, selector="app=web") if p["spec"]["nodeName"] == "node-0"]
    await sim.nodes.stop("node-0")

    async def tainted() -> bool:
        return (UNREACHABLE, "NoExecute") in taints(await sim.api.get("nodes", "node-0"))
    await eventually(tainted, timeout=20)
    for pod in on_node_0:  # tolerated for 300 s: still there, not being deleted
        current = await sim.api.get("pods", pod["metadata"]["name"], "default")
        assert not current["metadata"].get("deletionTimestamp")
        assert {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 300} in current["spec"]["tolerations"]
