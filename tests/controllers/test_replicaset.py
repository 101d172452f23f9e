"""ReplicaSets and ReplicationControllers through a real API server with the controllers running."""

from __future__ import annotations

import asyncio

from controller_helpers import eventually, make_ready, pod_template, pods, set_pod_phase

from minik.client import Client
from minik.cluster import Cluster


def replicaset(name: str, replicas: int, labels: dict[str, str], **spec: object) -> dict:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": pod_template(labels),
                     **spec}}


async def test_a_replicaset_creates_its_pods_owned_by_it_and_reports_them_ready(api: Client) -> None:
    rs = await api.create("replicasets", replicaset("web", 3, {"app": "web"}), "default")
    created = await eventually(lambda: _count(api, "app=web", 3))
    for pod in created:
        assert pod["metadata"]["name"].startswith("web-")
        ref = pod["metadata"]["ownerReferences"][0]
        assert ref == {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"],
                       "controller": True, "blockOwnerDeletion": True}
    await make_ready(api, selector="app=web")

    async def ready() -> dict:
        status = (await api.get("replicasets", "web", "default"))["status"]
        return status if status.get("availableReplicas") == 3 else {}
    status = await eventually(ready)
    assert status["replicas"] == 3 and status["readyReplicas"] == 3 and status["fullyLabeledReplicas"] == 3
    assert status["observedGeneration"] == 1


async def test_scaling_down_deletes_the_unready_pods_first(api: Client) -> None:
    await api.create("replicasets", replicaset("web", 4, {"app": "web"}), "default")
    created = await eventually(lambda: _count(api, "app=web", 4))
    ready = created[:2]
    for pod in ready:
        await set_pod_phase(api, pod)
    await api.patch("replicasets", "web", {"spec": {"replicas": 2}}, "default")
    left = await eventually(lambda: _count(api, "app=web", 2))
    assert sorted(p["metadata"]["name"] for p in left) == sorted(p["metadata"]["name"] for p in ready)


async def test_a_deleted_pod_is_replaced(api: Client) -> None:
    await api.create("replicasets", replicaset("web", 2, {"app": "web"}), "default")
    first = await eventually(lambda: _count(api, "app=web", 2))
    await api.delete("pods", first[0]["metadata"]["name"], "default")
    after = await eventually(lambda: _count(api, "app=web", 2, exclude=first[0]["metadata"]["name"]))
    assert first[1]["metadata"]["name"] in {p["metadata"]["name"] for p in after}


async def test_a_failed_pod_is_replaced(api: Client) -> None:
    await api.create("replicasets", replicaset("web", 1, {"app": "web"}), "default")
    [pod] = await eventually(lambda: _count(api, "app=web", 1))
    await set_pod_phase(api, pod, "Failed", ready=False)

    async def replaced() -> bool:
        items = await pods(api, selector="app=web")
        return any(p["metadata"]["name"] != pod["metadata"]["name"] for p in items)
    await eventually(replaced)


async def test_matching_orphans_are_adopted_and_pods_that_stop_matching_are_released(api: Client) -> None:
    orphan = await api.create("pods", {"metadata": {"name": "stray", "labels": {"app": "web"}},
                                       "spec": pod_template({})["spec"]}, "default")
    rs = await api.create("replicasets", replicaset("web", 2, {"app": "web"}), "default")

    async def adopted() -> bool:
        pod = await api.get("pods", "stray", "default")
        refs = pod["metadata"].get("ownerReferences") or []
        return bool(refs) and refs[0]["uid"] == rs["metadata"]["uid"]
    await eventually(adopted)
    await eventually(lambda: _count(api, "app=web", 2))  # the orphan counts: only one more was created
    assert orphan["metadata"]["uid"] == (await api.get("pods", "stray", "default"))["metadata"]["uid"]

    await api.patch("pods", "stray", {"metadata": {"labels": {"app": "other"}}}, "default")

    async def released() -> bool:
        pod = await api.get("pods", "stray", "default")
        return not pod["metadata"].get("ownerReferences")
    await eventually(released)
    await eventually(lambda: _count(api, "app=web", 2))  # and a replacement was made


async def test_available_replicas_wait_for_min_ready_seconds(api: Client) -> None:
    await api.create("replicasets", replicaset("slow", 1, {"app": "slow"}, minReadySeconds=1), "default")
    await eventually(lambda: _count(api, "app=slow", 1))
    await make_ready(api, selector="app=slow")

    async def status() -> dict:
        s = (await api.get("replicasets", "slow", "default")).get("status") or {}
        return s if s.get("readyReplicas") == 1 else {}
    first = await eventually(status)
    assert not first.get("availableReplicas")

    async def available() -> bool:
        s = (await api.get("replicasets", "slow", "default"))["status"]
        return s.get("availableReplicas") == 1
    await eventually(available, timeout=5)


async def test_a_replicaset_of_twenty_creates_exactly_twenty(api: Client, controlled: Cluster) -> None:
    await api.create("replicasets", replicaset("many", 20, {"app": "many"}), "default")
    await eventually(lambda: _count(api, "app=many", 20))
    await asyncio.sleep(0.3)  # give a double-creating controller the time to show itself
    assert len(await pods(api, selector="app=many")) == 20


async def test_a_replication_controller_keeps_its_replicas(api: Client) -> None:
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
          "spec": {"replicas": 2, "selector": {"app": "legacy"}, "template": pod_template({"app": "legacy"})}}
    await api.create("replicationcontrollers", rc, "default")
    created = await eventually(lambda: _count(api, "app=legacy", 2))
    assert created[0]["metadata"]["ownerReferences"][0]["kind"] == "ReplicationController"
    await make_ready(api, selector="app=legacy")

    async def ready() -> bool:
        s = (await api.get("replicationcontrollers", "legacy", "default"))["status"]
        return s.get("readyReplicas") == 2 and s.get("availableReplicas") == 2
    await eventually(ready)
    await api.patch("replicationcontrollers", "legacy", {"spec": {"replicas": 0}}, "default")
    await eventually(lambda: _count(api, "app=legacy", 0, allow_empty=True))


async def _count(api: Client, selector: str, n: int, exclude: str | None = None,
                 allow_empty: bool = False) -> list[dict] | bool:
    items = await pods(api, selector=selector)
    if exclude is not None and any(p["metadata"]["name"] == exclude for p in items):
        return []
    if len(items) != n:
        return []
    return items if items else allow_empty


async def test_creations_and_deletions_are_recorded_as_events(api: Client) -> None:
    await api.create("replicasets", replicaset("web", 2, {"app": "web"}), "default")
    created = await eventually(lambda: _count(api, "app=web", 2))
    await api.patch("replicasets", "web", {"spec": {"replicas": 1}}, "default")
    await eventually(lambda: _count(api, "app=web", 1))

    async def events() -> dict[str, set[str]]:
        items = (await api.list("events", "default"))["items"]
        found: dict[str, set[str]] = {}
        for e in items:
            if e["involvedObject"]["name"] == "web":
                found.setdefault(e["reason"], set()).add(e["message"])
        return found if "SuccessfulDelete" in found and len(found.get("SuccessfulCreate", ())) == 2 else {}
    found = await eventually(events)
    assert found["SuccessfulCreate"] == {f"Created pod: {p['metadata']['name']}" for p in created}
    [deleted] = found["SuccessfulDelete"]
    assert deleted.startswith("Deleted pod: web-")
