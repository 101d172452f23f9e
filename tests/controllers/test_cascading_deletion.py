"""Deleting owners through a real API server with the garbage collector, the namespace controller, the
scheduler and simulated nodes: what is left afterwards is what Kubernetes leaves."""

from __future__ import annotations

from typing import Any

import pytest
from controller_helpers import eventually, pods
from test_workloads_on_nodes import available, deployment, with_nodes

from minik.api.errors import StatusError
from minik.testing.nodes import SimulatedCluster

Obj = dict[str, Any]


async def gone(sim: SimulatedCluster, resource: str, name: str, namespace: str | None = "default") -> bool:
    try:
        await sim.api.get(resource, name, namespace)
    except StatusError as exc:
        return exc.code == 404
    return False


async def owned_replicasets(sim: SimulatedCluster) -> list[Obj]:
    return (await sim.api.list("replicasets", "default", label_selector="app=web"))["items"]


async def test_background_deletion_removes_the_deployment_at_once_and_then_its_replicasets_and_pods(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await with_nodes(sim, 2)
    await sim.api.create("deployments", deployment("web", 3), "default")
    await available(sim, "web", 3)
    await sim.api.delete("deployments", "web", "default", propagation_policy="Background")
    assert await gone(sim, "deployments", "web")

    async def all_gone() -> bool:
        left = (await sim.api.list("pods", "default", label_selector="app=web"))["items"]
        return not await owned_replicasets(sim) and not left
    await eventually(all_gone, timeout=30)


async def test_foreground_deletion_keeps_the_deployment_until_its_pods_and_replicasets_are_gone(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await with_nodes(sim, 2)
    await sim.api.create("deployments", deployment("web", 3), "default")
    await available(sim, "web", 3)
    marked = await sim.api.delete("deployments", "web", "default", propagation_policy="Foreground")
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"]
    seen_while_pods_left = False

    async def deployment_gone() -> bool:
        nonlocal seen_while_pods_left
        left = (await sim.api.list("pods", "default", label_selector="app=web"))["items"]
        rss = await owned_replicasets(sim)
        if await gone(sim, "deployments", "web"):
            assert not left and not rss, "the deployment went before its dependents"
            return True
        seen_while_pods_left = seen_while_pods_left or bool(left)
        return False

    await eventually(deployment_gone, timeout=30, interval=0.02)
    assert seen_while_pods_left


async def test_orphan_deletion_removes_only_the_deployment_and_its_replicaset_keeps_the_pods(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await with_nodes(sim, 2)
    await sim.api.create("deployments", deployment("web", 3), "default")
    await available(sim, "web", 3)
    await sim.api.delete("deployments", "web", "default", propagation_policy="Orphan")
    await eventually(lambda: gone(sim, "deployments", "web"), timeout=30)
    [rs] = await owned_replicasets(sim)
    assert not rs["metadata"].get("ownerReferences")
    running = await pods(sim.api, selector="app=web")
    assert len(running) == 3
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"] for p in running)


async def test_dependents_of_an_owner_that_no_longer_exists_are_collected(simulated: SimulatedCluster) -> None:
    sim = simulated
    owner = await sim.api.create("configmaps", {"metadata": {"name": "owner"}}, "default")
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    await sim.api.delete("configmaps", "owner", "default")
    await sim.api.create("configmaps", {"metadata": {"name": "orphan", "ownerReferences": [ref]}}, "default")
    await eventually(lambda: gone(sim, "configmaps", "orphan"), timeout=15)


async def test_deleting_a_namespace_empties_it_and_then_removes_it(simulated: SimulatedCluster) -> None:
    sim = simulated
    await with_nodes(sim, 2)
    await sim.api.create("namespaces", {"metadata": {"name": "team"}})
    await sim.api.create("deployments", deployment("web", 2), "team")
    await sim.api.create("configmaps", {"metadata": {"name": "settings"}}, "team")

    async def running() -> bool:
        items = (await sim.api.list("pods", "team"))["items"]
        return len(items) == 2 and all((p.get("status") or {}).get("phase") == "Running" for p in items)
    await eventually(running, timeout=30)
    await sim.api.delete("namespaces", "team")
    terminating = await sim.api.get("namespaces", "team")
    assert terminating["status"]["phase"] == "Terminating"
    try:
        await sim.api.create("configmaps", {"metadata": {"name": "late"}}, "team")
    except StatusError as exc:
        assert exc.code in (403, 404)  # refused while terminating (404 once it is gone)
    else:
        pytest.fail("created an object in a terminating namespace")
    await eventually(lambda: gone(sim, "namespaces", "team", None), timeout=30)
    for resource in ("pods", "deployments", "replicasets", "configmaps"):
        assert not (await sim.api.list(resource, "team"))["items"], resource
