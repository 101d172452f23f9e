"""The Docker node fixture of the kubelet tests (see docker_helpers.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.kubelet.docker_helpers import DockerNode, docker_cluster


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[DockerNode]:
    async with docker_cluster(tmp_path / "c") as docker_node:
        yield docker_node
