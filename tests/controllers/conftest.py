"""A real cluster running the controllers (and nothing else: the tests act as the scheduler and kubelet where a
pod must be bound, Running or Ready), an HTTP client to it, and helpers to wait for outcomes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.client import Client
from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.controllers.manager import ControllerSettings
from minik.testing.clock import FakeClock
from minik.testing.nodes import SimulatedCluster, SimulatedNodes


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def controller_settings() -> ControllerSettings:
    """The cluster's ControllerSettings (a test module may override this fixture)."""
    return ControllerSettings(workers=2)


@pytest.fixture
async def controlled(tmp_path: Path, controller_settings: ControllerSettings) -> AsyncIterator[Cluster]:
    settings = ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                               disabled=frozenset(COMPONENTS) - {"controllers"}, controllers=controller_settings)
    cluster = Cluster(settings)
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


@pytest.fixture
async def api(controlled: Cluster) -> AsyncIterator[Client]:
    client = controlled.admin_client()
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def simulated_settings() -> ControllerSettings:
    """ControllerSettings for the simulated cluster: short grace periods and back-offs, so tests take seconds."""
    return ControllerSettings(workers=2, node_monitor_grace_period_seconds=2.0, node_monitor_period_seconds=0.25,
                              node_eviction_rate=10.0, job_backoff_seconds=0.05, job_max_backoff_seconds=0.5)


@pytest.fixture
async def simulated(tmp_path: Path, simulated_settings: ControllerSettings) -> AsyncIterator[SimulatedCluster]:
    """A real API server with the scheduler and the controllers, and simulated nodes the test adds, stops and
    restarts (each its own kubelet on the fake runtime, renewing its lease every 0.2 s)."""
    settings = ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                               disabled=frozenset({"node", "proxy"}), controllers=simulated_settings)
    cluster = Cluster(settings)
    await cluster.start()
    assert cluster.client is not None
    nodes = SimulatedNodes(cluster.client)
    try:
        async with cluster.admin_client() as api:
            yield SimulatedCluster(cluster, api, nodes)
    finally:
        await nodes.close()
        await cluster.stop()
