"""A real cluster with the scheduler running (and no other component), an HTTP client to it, and simulated nodes:
kubelets on the fake runtime that register Node objects (capacity, well-known labels, taints), heartbeat, run
the pods bound to them and confirm their deletion, as real nodes do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.client import Client
from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from tests.scheduler.helpers import SimulatedNodes


@pytest.fixture
async def scheduled_cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    c = Cluster(ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                                disabled=frozenset(COMPONENTS) - {"scheduler"}))
    await c.start()
    try:
        yield c
    finally:
        await c.stop()


@pytest.fixture
async def api(scheduled_cluster: Cluster) -> AsyncIterator[Client]:
    async with scheduled_cluster.admin_client() as client:
        yield client


@pytest.fixture
async def nodes(api: Client) -> AsyncIterator[SimulatedNodes]:
    simulated = SimulatedNodes(api)
    try:
        yield simulated
    finally:
        await simulated.stop()
