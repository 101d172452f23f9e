"""A cluster as `minik up` serves it by default: HTTPS with its own CA, every request authenticated and authorized.
Clients reach it with tokens (security_helpers.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from security_helpers import connect

from minik.client import Client
from minik.cluster import COMPONENTS, Cluster, ClusterSettings


@pytest.fixture
async def secure(tmp_path: Path) -> AsyncIterator[Cluster]:
    c = Cluster(ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                                disabled=frozenset(COMPONENTS)))
    await c.start()
    try:
        yield c
    finally:
        await c.stop()


@pytest.fixture
async def admin(secure: Cluster) -> AsyncIterator[Client]:
    """The admin, with the token `minik up` writes into its kubeconfig."""
    async with connect(secure, secure.admin_token) as client:
        yield client
