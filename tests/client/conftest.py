"""The client under test, over HTTP and in-process: every client test runs on both transports."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from minik.client import Client
from minik.cluster import Cluster


@pytest.fixture(params=["http", "in_process"])
async def client(request: pytest.FixtureRequest, cluster: Cluster) -> AsyncIterator[Client]:
    assert cluster.api is not None
    made = cluster.admin_client() if request.param == "http" else cluster.in_process_client()
    async with made as c:
        yield c
