"""A real cluster with the scheduler running (and no other component), and an HTTP client to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.client import Client
from minik.cluster import COMPONENTS, Cluster, ClusterSettings


@pytest.fixture
async def scheduled_cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    c = Cluster(ClusterSettings(data_dir=tmp_path / "cluster", port=0, insecure_loopback=True, synchronous="NORMAL",
                                disabled=frozenset(COMPONENTS) - {"scheduler"}))
    await c.start()
    try:
        yield c
    finally:
        await c.stop()


@pytest.fixture
async def api(scheduled_cluster: Cluster) -> AsyncIterator[Client]:
    async with Client.http(scheduled_cluster.url) as client:
        yield client
