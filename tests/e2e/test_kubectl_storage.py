"""Real kubectl with persistent storage: the default class, volumes and claims with Kubernetes' columns, a pod
that waits on an unbound claim saying why in `kubectl describe`, and a claim in use left Terminating by
`kubectl delete`. The cluster runs the scheduler, the storage controllers and a simulated node."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.controllers.manager import ControllerSettings
from minik.testing.nodes import SimulatedNodes

STORAGE = ControllerSettings(enabled=["persistentvolume-binder", "local-path-provisioner", "pvc-protection",
                                      "pv-protection"])


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    c = Cluster(ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                                disabled=frozenset(COMPONENTS) - {"scheduler", "controllers"},
                                controllers=STORAGE))
    await c.start()
    assert c.client is not None
    nodes = SimulatedNodes(c.client)
    try:
        await nodes.add("node-a")
        yield c
    finally:
        await nodes.close()
        await c.stop()


MANUAL = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "manual"},
          "provisioner": "kubernetes.io/no-provisioner"}


def claim(name: str, storage_class: str) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                     "resources": {"requests": {"storage": "1Gi"}}}}


def volume(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                     "hostPath": {"path": f"/tmp/{name}"}}}


def pod(name: str, claim_name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.36",
                                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]}}


async def eventually_rows(kubectl, *args: str, check) -> list[list[str]]:  # type: ignore[no-untyped-def]
    import asyncio
    import time

    deadline = time.monotonic() + 20
    while True:
        rows = (await kubectl(*args)).rows
        if check(rows):
            return rows
        assert time.monotonic() < deadline, rows
        await asyncio.sleep(0.2)


async def test_the_default_class_volumes_and_claims_print_kubernetes_columns(kubectl) -> None:
    classes = await kubectl("get", "sc")
    assert classes.rows[0] == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION",
                               "AGE"]
    assert classes.rows[1][:5] == ["local-path (default)", "minik.io/local-path", "Delete", "WaitForFirstConsumer",
                                   "false"]
    await kubectl("apply", "-f", kubectl.manifest("manual.yaml", MANUAL))
    await kubectl("apply", "-f", kubectl.manifest("pv.yaml", volume("pv1")))
    await kubectl("apply", "-f", kubectl.manifest("pvc.yaml", claim("data", "manual")))
    claims = await eventually_rows(kubectl, "get", "pvc", check=lambda rows: rows[1][1] == "Bound")
    assert claims[0] == ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS",
                         "VOLUMEATTRIBUTESCLASS", "AGE"]
    assert claims[1][:7] == ["data", "Bound", "pv1", "2Gi", "RWO", "manual", "<unset>"]
    volumes = await kubectl("get", "pv")
    assert volumes.rows[1][:8] == ["pv1", "2Gi", "RWO", "Retain", "Bound", "default/data", "manual", "<unset>"]


async def test_describe_pod_says_it_waits_for_an_unbound_immediate_claim(kubectl) -> None:
    await kubectl("apply", "-f", kubectl.manifest("manual.yaml", MANUAL))
    await kubectl("apply", "-f", kubectl.manifest("pvc.yaml", claim("data", "manual")))
    await kubectl("apply", "-f", kubectl.manifest("pod.yaml", pod("user", "data")))
    await eventually_rows(kubectl, "get", "events", "--field-selector", "reason=FailedScheduling",
                          check=lambda rows: len(rows) > 1)
    described = await kubectl("describe", "pod", "user")
    assert "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims." in described.out
    assert "ClaimName:  data" in described.out


async def test_deleting_a_claim_a_pod_uses_leaves_it_terminating_until_the_pod_is_gone(kubectl) -> None:
    await kubectl("apply", "-f", kubectl.manifest("pvc.yaml", claim("data", "local-path")))
    await kubectl("apply", "-f", kubectl.manifest("pod.yaml", pod("user", "data")))
    await eventually_rows(kubectl, "get", "pvc", "data", check=lambda rows: rows[1][1] == "Bound")
    await kubectl("delete", "pvc", "data", "--wait=false")
    assert (await kubectl("get", "pvc", "data")).rows[1][1] == "Terminating"
    await kubectl("delete", "pod", "user", "--grace-period=0", "--force")
    await kubectl("wait", "--for=delete", "pvc/data", "--timeout=20s")
