"""kubectl scale and rollout (status, history, undo, restart) against a cluster running the controllers; a
stand-in kubelet makes the pods Ready."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubectl_helpers import Kubectl

from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.testing.kubelet import FakeKubelet

DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}},
}


@pytest.fixture
async def rollout_cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    cluster = Cluster(ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                                      disabled=frozenset(COMPONENTS) - {"controllers"}))
    await cluster.start()
    try:
        async with cluster.admin_client() as client, FakeKubelet(client):
            yield cluster
    finally:
        await cluster.stop()


async def test_kubectl_scale_rollout_status_history_undo_and_restart(rollout_cluster: Cluster,
                                                                       tmp_path: Path) -> None:
    kubectl = Kubectl(rollout_cluster, tmp_path / "kubectl")
    await kubectl("apply", "-f", kubectl.manifest("web.yaml", DEPLOYMENT))
    status = await kubectl("rollout", "status", "deployment/web", "--timeout=30s")
    assert 'deployment "web" successfully rolled out' in status.out

    out = await kubectl("scale", "deployment/web", "--replicas=4")
    assert out.out.strip() == "deployment.apps/web scaled"
    await kubectl("rollout", "status", "deployment/web", "--timeout=30s")
    assert (await kubectl("get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}")).out == "4"

    await kubectl("set", "image", "deployment/web", "web=nginx:1.28")
    await kubectl("annotate", "deployment/web", "kubernetes.io/change-cause=upgrade to 1.28")
    await kubectl("rollout", "status", "deployment/web", "--timeout=30s")
    history = await kubectl("rollout", "history", "deployment/web")
    rows = [line.split(None, 1) for line in history.out.splitlines()[2:] if line.strip()]
    assert [r[0] for r in rows] == ["1", "2"], history.out
    assert rows[1][1].strip() == "upgrade to 1.28"

    undo = await kubectl("rollout", "undo", "deployment/web")
    assert undo.out.strip() == "deployment.apps/web rolled back"
    await kubectl("rollout", "status", "deployment/web", "--timeout=30s")
    image = await kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
    assert image.out == "nginx:1.27"
    revisions = await kubectl("rollout", "history", "deployment/web")
    assert [line.split()[0] for line in revisions.out.splitlines()[2:] if line.strip()] == ["2", "3"]

    restart = await kubectl("rollout", "restart", "deployment/web")
    assert restart.out.strip() == "deployment.apps/web restarted"
    await kubectl("rollout", "status", "deployment/web", "--timeout=30s")
    pods = await kubectl("get", "pods", "-l", "app=web", "-o",
                         "jsonpath={.items[*].metadata.annotations.kubectl\\.kubernetes\\.io/restartedAt}")
    assert len(pods.out.split()) == 4
