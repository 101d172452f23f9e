"""What a DELETE leaves for the garbage collector, and the tolerations admission adds to pods: both as
Kubernetes 1.32's API server does them (no controllers run here)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from minik.api.errors import StatusError
from minik.client import Client
from minik.cluster import Cluster

Obj = dict[str, Any]


@pytest.fixture
async def api(cluster: Cluster) -> AsyncIterator[Client]:
    async with cluster.admin_client() as client:
        yield client


def configmap(name: str, finalizers: list[str] | None = None) -> Obj:
    meta: Obj = {"name": name}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def job(name: str) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}


async def finalizers_after_delete(api: Client, resource: str, obj: Obj, **options: Any) -> list[str] | None:
    """The finalizers the object is left with after a DELETE (None: it is gone)."""
    await api.create(resource, obj, "default")
    name = obj["metadata"]["name"]
    if "orphan_dependents" in options:
        query = "true" if options.pop("orphan_dependents") else "false"
        path = api.path(resource, "default", name)
        await api._call("DELETE", path, {"orphanDependents": query})  # noqa: SLF001 - the legacy option
    else:
        await api.delete(resource, name, "default", **options)
    try:
        live = await api.get(resource, name, "default")
    except StatusError as exc:
        assert exc.code == 404
        return None
    return list(live["metadata"].get("finalizers") or [])


async def test_each_propagation_policy_leaves_its_finalizer(api: Client) -> None:
    assert await finalizers_after_delete(api, "configmaps", configmap("bg"), propagation_policy="Background") is None
    assert await finalizers_after_delete(api, "configmaps", configmap("fg"),
                                         propagation_policy="Foreground") == ["foregroundDeletion"]
    assert await finalizers_after_delete(api, "configmaps", configmap("or"), propagation_policy="Orphan") == ["orphan"]
    assert await finalizers_after_delete(api, "configmaps", configmap("none")) is None


async def test_orphan_dependents_false_is_background_not_foreground(api: Client) -> None:
    assert await finalizers_after_delete(api, "configmaps", configmap("legacy"), orphan_dependents=False) is None
    assert await finalizers_after_delete(api, "configmaps", configmap("legacy-o"), orphan_dependents=True) == ["orphan"]


async def test_batch_v1_jobs_orphan_their_pods_when_no_policy_is_given(api: Client) -> None:
    assert await finalizers_after_delete(api, "jobs", job("plain")) == ["orphan"]
    assert await finalizers_after_delete(api, "jobs", job("bg"), propagation_policy="Background") is None


async def test_a_finalizer_already_there_decides_when_no_policy_is_given(api: Client) -> None:
    assert await finalizers_after_delete(api, "configmaps", configmap("kept", ["foregroundDeletion"])) == [
        "foregroundDeletion"]
    assert await finalizers_after_delete(api, "configmaps", configmap("swapped", ["orphan"]),
                                         propagation_policy="Foreground") == ["foregroundDeletion"]


async def test_both_orphan_dependents_and_a_policy_are_refused(api: Client) -> None:
    await api.create("configmaps", configmap("both"), "default")
    with pytest.raises(StatusError) as caught:
        await api._call("DELETE", api.path("configmaps", "default", "both"), None,  # noqa: SLF001
                        {"orphanDependents": True, "propagationPolicy": "Background"})
    assert caught.value.code == 422
    assert "orphanDependents and deletionPropagation cannot be both set" in caught.value.message


async def test_pods_tolerate_not_ready_and_unreachable_nodes_for_300_seconds_unless_they_say_otherwise(
        api: Client) -> None:
    plain = await api.create("pods", {"metadata": {"name": "plain"},
                                      "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}, "default")
    assert [t for t in plain["spec"]["tolerations"] if t.get("effect") == "NoExecute"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}]
    own = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
           "tolerationSeconds": 5}
    custom = await api.create("pods", {"metadata": {"name": "custom"},
                                       "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}],
                                                "tolerations": [own]}}, "default")
    assert custom["spec"]["tolerations"] == [own, {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                                   "effect": "NoExecute", "tolerationSeconds": 300}]
    everything = await api.create("pods", {"metadata": {"name": "everything"},
                                           "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}],
                                                    "tolerations": [{"operator": "Exists"}]}}, "default")
    assert everything["spec"]["tolerations"] == [{"operator": "Exists"}]
