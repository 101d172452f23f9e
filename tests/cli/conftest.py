"""Fixtures for running the real `minik` commands against the test's cluster (see cli_helpers.py for how)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from click.testing import Result
from cli_helpers import Invoke, invoke_cli

from minik.client import Client
from minik.cluster import Cluster


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home directory, so no test reads or writes the real ~/.minik or ~/.kube."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return path


@pytest.fixture
def minik(cluster: Cluster, home: Path) -> Invoke:
    """``await minik("get", "pods")``: the command against the test's cluster, with its Result (exit_code,
    stdout, stderr)."""

    async def run(*args: str, input: str | None = None) -> Result:
        return await invoke_cli(["--server", cluster.url, *args], input)

    return run


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[Client]:
    async with Client.http(cluster.url) as c:
        yield c
