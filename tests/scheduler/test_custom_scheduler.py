"""scripts/cheapest_scheduler.py, a custom scheduler written against minik's client, runs as its own process
beside the default scheduler: each places only the pods that name it."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.client import Client
from minik.cluster import Cluster
from tests.access import admin_kubeconfig
from tests.scheduler.helpers import (
    SimulatedNodes,
    events_for,
    node_of,
    pod_object,
    simulated_node,
    wait_bound,
    wait_for,
)

ROOT = Path(__file__).resolve().parents[2]
COST = "example.com/hourly-cost"


@pytest.fixture
async def cheapest(scheduled_cluster: Cluster, tmp_path: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    config = admin_kubeconfig(scheduled_cluster, tmp_path / "kubeconfig")  # as users find their cluster
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "scripts" / "cheapest_scheduler.py"), "--kubeconfig", str(config),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    assert process.stdout is not None
    try:
        line = (await asyncio.wait_for(process.stdout.readline(), 20)).decode()
        assert line.strip() == "cheapest-scheduler: running", line
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), 20)


async def test_the_custom_scheduler_binds_its_pods_to_the_cheapest_node_that_fits(
        api: Client, nodes: SimulatedNodes, cheapest: asyncio.subprocess.Process) -> None:
    await nodes.add(simulated_node("pricey", cpu="8", labels={COST: "3.0"}),
                    simulated_node("cheap", cpu="1", labels={COST: "0.5"}),
                    simulated_node("middling", cpu="4", labels={COST: "1.2"}),
                    simulated_node("unpriced", cpu="16"))
    for i in range(3):
        await api.create("pods", pod_object(f"batch-{i}", cpu="600m", schedulerName="cheapest-scheduler"))
        await wait_bound(api, f"batch-{i}")
    # the cheap node holds one 600m pod; the next cheapest takes the rest
    assert [await node_of(api, f"batch-{i}") for i in range(3)] == ["cheap", "middling", "middling"]
    # the default scheduler placed none of them, and goes on placing its own pods by its own rules
    await api.create("pods", pod_object("web", cpu="600m"))
    assert await wait_bound(api, "web") == "unpriced"  # the emptiest node

    async def sources() -> dict[str, set[str]] | None:
        found = {name: {e["source"]["component"] for e in await events_for(api, name)}
                 for name in ("batch-0", "web")}
        return found if all(found.values()) else None

    assert await wait_for(sources) == {"batch-0": {"cheapest-scheduler"}, "web": {"default-scheduler"}}


async def test_the_default_scheduler_leaves_the_custom_schedulers_pods_alone(
        api: Client, nodes: SimulatedNodes, scheduled_cluster: Cluster) -> None:
    await nodes.add(simulated_node("n1"))
    await api.create("pods", pod_object("waiting", schedulerName="cheapest-scheduler"))
    await api.create("pods", pod_object("default"))
    await wait_bound(api, "default")
    await asyncio.sleep(0.3)
    pod = await api.get("pods", "waiting", "default")
    assert not pod["spec"].get("nodeName") and not pod["status"].get("conditions")
