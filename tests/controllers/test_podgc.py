"""The pod garbage collector through a real API server with the scheduler, the controllers and simulated nodes
(a pass every 0.2 s and a 0.5 s quarantine instead of 20 s and 40 s)."""

from __future__ import annotations

from typing import Any

import pytest
from controller_helpers import eventually, pods
from test_workloads_on_nodes import available, deployment, with_nodes

from minik.controllers.manager import ControllerSettings
from minik.testing.nodes import SimulatedCluster

Obj = dict[str, Any]


@pytest.fixture
def simulated_settings() -> ControllerSettings:
    return ControllerSettings(workers=2, pod_gc_period_seconds=0.2, pod_gc_quarantine_seconds=0.5)


async def test_the_pods_of_a_deleted_node_are_removed_and_their_deployment_replaces_them(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await with_nodes(sim, 2)
    await sim.api.create("deployments", deployment("web", 4), "default")
    await available(sim, "web", 4)
    orphans = {p["metadata"]["name"] for p in await pods(sim.api, selector="app=web")
               if p["spec"]["nodeName"] == "node-0"}
    assert orphans, "the scheduler put nothing on node-0"

    await sim.nodes.stop("node-0")  # the machine is gone, and so is its Node
    await sim.api.delete("nodes", "node-0")

    async def collected() -> bool:
        names = {p["metadata"]["name"] for p in (await sim.api.list("pods", "default"))["items"]}
        return not names & orphans
    await eventually(collected, timeout=20)

    async def replaced() -> list[Obj]:
        live = await pods(sim.api, selector="app=web")
        return live if len(live) == 4 and all(p["spec"].get("nodeName") == "node-1" for p in live) else []
    await eventually(replaced, timeout=30)

