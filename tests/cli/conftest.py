"""Fixtures for running the real `minik` commands against the test's cluster (see cli_helpers.py for how)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cli_helpers import Invoke, invoke_cli
from click.testing import Result

from minik.client import Client
from minik.cluster import Cluster
from tests.access import admin_kubeconfig


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home directory, so no test reads or writes the real ~/.minik or ~/.kube."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return path


@pytest.fixture
def kubeconfig(cluster: Cluster, tmp_path: Path) -> Path:
    """The admin's kubeconfig for the test's cluster, as `minik up` writes it (outside the test's HOME)."""
    return admin_kubeconfig(cluster, tmp_path / "admin" / "kubeconfig")


@pytest.fixture
def minik(kubeconfig: Path, home: Path) -> Invoke:
    """``await minik("get", "pods")``: the command against the test's cluster as the admin, with its Result
    (exit_code, stdout, stderr)."""

    async def run(*args: str, input: str | None = None) -> Result:
        return await invoke_cli(["--kubeconfig", str(kubeconfig), *args], input)

    return run


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[Client]:
    async with cluster.admin_client() as c:
        yield c
