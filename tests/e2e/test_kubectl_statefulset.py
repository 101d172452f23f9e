"""Real kubectl with StatefulSets against a cluster running the controllers (a stand-in kubelet makes the pods
Ready): get with Kubernetes' columns, rollout status, history (from ControllerRevisions) and undo, scale."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubectl_helpers import Kubectl

from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.testing.kubelet import FakeKubelet

STATEFULSET = {
    "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
    "spec": {"replicas": 2, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}},
}


@pytest.fixture
async def sts_cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    cluster = Cluster(ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                                      disabled=frozenset(COMPONENTS) - {"controllers"}))
    await cluster.start()
    try:
        async with cluster.admin_client() as client, FakeKubelet(client):
            yield cluster
    finally:
        await cluster.stop()


def _revisions(history: str) -> list[list[str]]:
    return [line.split(None, 1) for line in history.splitlines()[2:] if line.strip()]


async def test_kubectl_rollout_status_history_and_undo_of_a_statefulset(sts_cluster: Cluster, tmp_path: Path) -> None:
    kubectl = Kubectl(sts_cluster, tmp_path / "kubectl")
    await kubectl("apply", "-f", kubectl.manifest("web.yaml", STATEFULSET))
    status = await kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    assert "partitioned roll out complete: 2 new pods have been updated..." in status.out
    listed = await kubectl("get", "sts", "web", "-o", "wide")
    assert listed.rows[0] == ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"]
    assert listed.rows[1][:2] == ["web", "2/2"] and listed.rows[1][-2:] == ["web", "nginx:1.27"]

    await kubectl("set", "image", "statefulset/web", "web=nginx:1.28")
    await kubectl("annotate", "statefulset/web", "kubernetes.io/change-cause=upgrade to 1.28")
    await kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    history = await kubectl("rollout", "history", "statefulset/web")
    assert [r[0] for r in _revisions(history.out)] == ["1", "2"], history.out

    revisions = await kubectl("get", "controllerrevisions")
    assert revisions.rows[0] == ["NAME", "CONTROLLER", "REVISION", "AGE"]
    assert sorted((r[1], r[2]) for r in revisions.rows[1:]) == [("statefulset.apps/web", "1"),
                                                               ("statefulset.apps/web", "2")]
    detail = await kubectl("rollout", "history", "statefulset/web", "--revision=2")
    assert "nginx:1.28" in detail.out

    undo = await kubectl("rollout", "undo", "statefulset/web")
    assert undo.out.strip() == "statefulset.apps/web rolled back"
    await kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    image = await kubectl("get", "statefulset", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
    assert image.out == "nginx:1.27"
    after = await kubectl("rollout", "history", "statefulset/web")
    assert [r[0] for r in _revisions(after.out)] == ["2", "3"], after.out
    pods = await kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].spec.containers[0].image}")
    assert pods.out.split() == ["nginx:1.27", "nginx:1.27"]

    described = await kubectl("describe", "statefulset", "web")
    assert "Pods Status:" in described.out and "2 Running" in described.out
    assert "create Pod web-1 in StatefulSet web successful" in described.out, described.out

    await kubectl("scale", "statefulset/web", "--replicas=3")
    await kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    names = await kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}")
    assert sorted(names.out.split()) == ["web-0", "web-1", "web-2"]


async def test_kubectl_rollout_undo_to_a_named_revision(sts_cluster: Cluster, tmp_path: Path) -> None:
    kubectl = Kubectl(sts_cluster, tmp_path / "kubectl")
    await kubectl("apply", "-f", kubectl.manifest("web.yaml", STATEFULSET))
    await kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    for image in ("nginx:1.28", "nginx:1.29"):
        await kubectl("set", "image", "statefulset/web", f"web={image}")
        await kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    undo = await kubectl("rollout", "undo", "statefulset/web", "--to-revision=2")
    assert undo.out.strip() == "statefulset.apps/web rolled back"
    await kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    image = await kubectl("get", "statefulset", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
    assert image.out == "nginx:1.28"
    missing = await kubectl("rollout", "undo", "statefulset/web", "--to-revision=9", ok=False)
    assert missing.code != 0 and "unable to find specified revision 9 in history" in missing.err
