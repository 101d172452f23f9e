"""A real cluster running the controllers (and nothing else: the tests act as the scheduler and kubelet where a
pod must be bound, Running or Ready), an HTTP client to it, and helpers to wait for outcomes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.client import Client
from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.controllers.base import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def controller_settings() -> dict[str, object]:
    """Extra ControllerSettings for the cluster (a test module may override this fixture)."""
    return {}


@pytest.fixture
async def controlled(tmp_path: Path, controller_settings: dict[str, object]) -> AsyncIterator[Cluster]:
    settings = ClusterSettings(data_dir=tmp_path / "cluster", port=0, insecure_loopback=True, synchronous="NORMAL",
                               disabled=frozenset(COMPONENTS) - {"controllers"},
                               controllers={"workers": 2, **controller_settings})
    cluster = Cluster(settings)
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


@pytest.fixture
async def api(controlled: Cluster) -> AsyncIterator[Client]:
    client = Client.http(controlled.url)
    try:
        yield client
    finally:
        await client.close()
