"""Real kubectl with PodDisruptionBudgets: `kubectl create pdb`, `get pdb` with Kubernetes' columns, `describe
pdb`, and `kubectl drain` against budget-protected pods on simulated nodes, which waits on the 429 until the
budget allows the eviction, as it does against Kubernetes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubectl_helpers import Kubectl

from minik.client import Client
from minik.cluster import Cluster, ClusterSettings
from minik.controllers.manager import ControllerSettings

DRAINED, OTHER = "fake-node-000", "fake-node-001"


async def test_kubectl_creates_budgets_and_lists_them_with_kubernetes_columns(kubectl: Kubectl) -> None:
    await kubectl("create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=50%")
    await kubectl("create", "pdb", "db", "--selector=app=db", "--max-unavailable=1")
    listed = await kubectl("get", "pdb")
    assert listed.rows[0] == ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
    assert [row[:4] for row in listed.rows[1:]] == [["db", "N/A", "1", "0"], ["web", "50%", "N/A", "0"]]
    described = (await kubectl("describe", "pdb", "web")).out.splitlines()
    assert "Min available:  50%" in described and "Selector:       app=web" in described
    assert "    Allowed disruptions:  0" in described
    refused = await kubectl("create", "pdb", "both", "--selector=app=x", "--min-available=1",
                            "--max-unavailable=1", ok=False)
    assert refused.code != 0 and "min-available and max-unavailable cannot be both specified" in refused.err


@pytest.fixture
async def nodes_cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """The API server, scheduler and controllers, with two simulated nodes whose pods run at once."""
    cluster = Cluster(ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                                      disabled=frozenset({"proxy"}), local_node=False, fake_nodes=2,
                                      fake_start_delay_seconds=0.0, controllers=ControllerSettings(workers=2)))
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


def deployment(replicas: int) -> dict[str, Any]:
    """Pods that prefer the node to be drained, so that both start there and the second eviction must wait."""
    prefer = {"preference": {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                   "values": [DRAINED]}]}, "weight": 100}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"affinity": {"nodeAffinity": {
                                      "preferredDuringSchedulingIgnoredDuringExecution": [prefer]}},
                                      "terminationGracePeriodSeconds": 1,
                                      "containers": [{"name": "app", "image": "nginx:1.27"}]}}}}


async def web_pods(client: Client) -> list[dict[str, Any]]:
    return (await client.list("pods", namespace="default", label_selector="app=web"))["items"]


def ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in pod.get("status", {}).get("conditions", []))


async def until(check: Any, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        assert loop.time() < deadline, "not true in time"
        await asyncio.sleep(0.1)


async def test_drain_waits_for_the_budget_and_finishes_once_the_replacement_is_ready(nodes_cluster: Cluster,
                                                                                     tmp_path: Path) -> None:
    kubectl = Kubectl(nodes_cluster, tmp_path / "kubectl")
    async with nodes_cluster.admin_client() as client:
        await client.create("deployments.apps", deployment(2), namespace="default")
        await client.create("poddisruptionbudgets.policy", {
            "metadata": {"name": "web"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}},
            namespace="default")

        async def both_ready_on_the_drained_node() -> bool:
            pods = await web_pods(client)
            return len(pods) == 2 and all(ready(p) and p["spec"].get("nodeName") == DRAINED for p in pods)

        async def one_disruption_allowed() -> bool:
            pdb = await client.get("poddisruptionbudgets.policy", "web", "default")
            return pdb.get("status", {}).get("disruptionsAllowed") == 1

        await until(both_ready_on_the_drained_node)
        await until(one_disruption_allowed)

        drained = await kubectl("drain", DRAINED, "--ignore-daemonsets", "--timeout=90s")
        lines = drained.out.splitlines() + drained.err.splitlines()
        waited = [line for line in lines if line.startswith("error when evicting pods/")]
        assert waited, lines
        assert waited[0].endswith("(will retry after 5s): Cannot evict pod as it would violate the pod's "
                                  "disruption budget.")
        assert f"node/{DRAINED} drained" in lines
        assert sum(1 for line in lines if line.startswith("pod/web-") and line.endswith(" evicted")) == 2

        async def both_ready_elsewhere() -> bool:
            pods = [p for p in await web_pods(client) if not p["metadata"].get("deletionTimestamp")]
            return len(pods) == 2 and all(ready(p) and p["spec"].get("nodeName") == OTHER for p in pods)

        await until(both_ready_elsewhere)
