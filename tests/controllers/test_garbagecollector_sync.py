"""Garbage collector syncs against known caches (sample-controller style): the graph is fed as watch events
would feed it, and each sync's API calls are checked."""

from __future__ import annotations

import copy

from objects import T0, meta, pod, ref

from minik.api.timestamps import rfc3339
from minik.controllers.garbagecollector import GarbageCollector
from minik.testing.controllers import RecordingClient, StaticInformerFactory


def deployment(name: str = "web", finalizers: list[str] | None = None) -> dict:
    m = meta(name, generation=1)
    if finalizers:
        m["finalizers"] = finalizers
        m["deletionTimestamp"] = rfc3339(T0)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": m, "spec": {}}


def replicaset(name: str, owner: dict | None = None, block: bool = True) -> dict:
    m = meta(name, generation=1)
    if owner is not None:
        m["ownerReferences"] = [ref(owner, block)]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": m, "spec": {}}


class Harness:
    """A collector whose caches hold ``cached`` (announced as ADDED events) and whose API holds ``live``."""

    def __init__(self, cached: list[dict], live: list[dict] | None = None) -> None:
        self.client = RecordingClient([copy.deepcopy(o) for o in (live if live is not None else cached)])
        self.factory = StaticInformerFactory(self.client)
        self.gc = GarbageCollector(self.client, self.factory)
        for obj in cached:
            self.informer(obj).added(obj)

    def informer(self, obj: dict):  # noqa: ANN201 - a StaticInformer
        rt = self.client.registry.by_kind(obj["apiVersion"], obj["kind"])
        assert rt is not None
        return self.factory.static(rt.group_resource)

    async def sync(self, obj: dict) -> None:
        await self.gc.sync(obj["metadata"]["uid"])

    def queued(self) -> set[str]:
        return set(self.gc.queue._queue)  # noqa: SLF001 - what the handlers asked for


async def test_a_dependent_whose_owner_is_gone_is_deleted_in_the_background() -> None:
    owner = replicaset("web-1")
    p = pod("web-1-a", owner=owner)
    h = Harness([p])
    assert p["metadata"]["uid"] in h.queued()
    await h.sync(p)
    [delete] = h.client.writes("delete")
    assert delete.name == "web-1-a" and delete.options == {"propagation_policy": "Background",
                                                           "preconditions": {"uid": p["metadata"]["uid"]}}


async def test_a_dependent_of_a_live_owner_is_left_alone_even_when_the_cache_has_not_seen_the_owner() -> None:
    owner = replicaset("web-1")
    p = pod("web-1-a", owner=owner)
    h = Harness([p], live=[owner, p])
    await h.sync(p)
    assert not h.client.writes()
    assert [(a.verb, a.name) for a in h.client.actions] == [("get", "web-1")]


async def test_an_owner_recreated_under_the_same_name_does_not_keep_old_dependents() -> None:
    owner = replicaset("web-1")
    p = pod("web-1-a", owner=owner)
    successor = replicaset("web-1")  # same name, new uid
    h = Harness([p], live=[successor, p])
    await h.sync(p)
    assert [a.name for a in h.client.writes("delete")] == ["web-1-a"]


async def test_only_the_references_to_gone_owners_are_removed_while_one_owner_lives() -> None:
    alive, gone = replicaset("a"), replicaset("b")
    p = pod("shared", owner=alive)
    p["metadata"]["ownerReferences"].append({**ref(gone), "controller": False})
    h = Harness([alive, p])
    await h.sync(p)
    [patch] = h.client.writes("patch")
    assert patch.body[-1] == {"op": "replace", "path": "/metadata/ownerReferences", "value": [ref(alive)]}


async def test_orphan_propagation_strips_the_references_then_the_finalizer() -> None:
    owner = deployment(finalizers=["orphan"])
    rs = replicaset("web-1", owner)
    h = Harness([owner, rs])
    assert owner["metadata"]["uid"] in h.queued()
    await h.sync(owner)
    assert [(a.verb, a.resource, a.name, a.body[-1]) for a in h.client.writes()] == [
        ("patch", "replicasets", "web-1", {"op": "remove", "path": "/metadata/ownerReferences"}),
        ("patch", "deployments", "web", {"op": "replace", "path": "/metadata/finalizers", "value": []})]


async def test_foreground_propagation_deletes_dependents_and_waits_for_those_that_block() -> None:
    owner = deployment(finalizers=["foregroundDeletion"])
    rs = replicaset("web-1", owner)
    p = pod("web-1-a", owner=rs)
    h = Harness([owner, rs, p])
    await h.sync(owner)
    assert not h.client.writes()  # the ReplicaSet blocks: it is asked to go first
    assert rs["metadata"]["uid"] in h.queued()
    await h.sync(rs)
    [delete] = h.client.writes("delete")
    assert (delete.name, delete.options["propagation_policy"]) == ("web-1", "Foreground")  # it has pods of its own
    h.informer(rs).deleted(rs)
    assert owner["metadata"]["uid"] in h.queued()
    h.client.actions.clear()
    await h.sync(owner)
    assert [a.body[-1] for a in h.client.writes("patch")] == [
        {"op": "replace", "path": "/metadata/finalizers", "value": []}]


async def test_a_dependent_that_does_not_block_does_not_hold_a_foreground_deletion() -> None:
    owner = deployment(finalizers=["foregroundDeletion"])
    rs = replicaset("web-1", owner, block=False)
    h = Harness([owner, rs])
    await h.sync(owner)
    assert [(a.resource, a.body[-1]["path"]) for a in h.client.writes("patch")] == [
        ("deployments", "/metadata/finalizers")]
    await h.sync(rs)  # and it is collected all the same
    assert [a.name for a in h.client.writes("delete")] == ["web-1"]


async def test_dependents_are_looked_at_again_when_their_owner_is_deleted() -> None:
    owner = replicaset("web-1")
    p = pod("web-1-a", owner=owner)
    h = Harness([owner, p])
    h.gc.queue._queue.clear()  # noqa: SLF001
    h.gc.queue._dirty.clear()  # noqa: SLF001
    h.informer(owner).deleted(owner)
    assert h.queued() == {p["metadata"]["uid"]}
