"""The garbage collector (Kubernetes' garbagecollector): ownerReferences drive cascading deletion.

It watches every resource (events excepted; custom resources from the moment their CRD is established, in their
preferred version) and keeps a graph: for each uid, the object it is, and the uids of
the objects that name it as an owner. Work items are uids; a sync looks at one object:

- an object being deleted with the ``orphan`` finalizer: its dependents lose their ownerReferences to it, then
  the finalizer goes (propagationPolicy Orphan);
- an object being deleted with the ``foregroundDeletion`` finalizer: its dependents are deleted, and the
  finalizer goes once no dependent that blocks it (ownerReference with blockOwnerDeletion) is left (Foreground);
- any other object with ownerReferences: each owner is looked up (the cache, then the API to be sure). An object
  with no owner left is deleted (Background unless its own finalizers say otherwise; Foreground when an owner
  waits for it and it has dependents of its own); one that keeps a live owner only loses the references to
  owners that are gone or being deleted in the foreground.

Deletion without a policy (Background) is the API server's business: the owner goes at once and the collector
then finds its dependents dangling.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from minik.aio import start_task
from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.registry import Change, ResourceType
from minik.client import JSON_PATCH, Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, is_being_deleted
from minik.informers import Informer, object_key

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
#: resources the collector does not watch (Kubernetes ignores events: many, short-lived, never owners)
IGNORED = {"events", "events.events.k8s.io"}


def _collected(rt: ResourceType) -> bool:
    return rt.group_resource not in IGNORED and {"list", "watch", "delete"} <= set(rt.verbs)


def _refs(obj: Obj) -> list[Obj]:
    return list((obj.get("metadata") or {}).get("ownerReferences") or [])


def _finalizers(obj: Obj) -> list[str]:
    return list((obj.get("metadata") or {}).get("finalizers") or [])


def deleting_dependents(obj: Obj) -> bool:
    """Being deleted in the foreground: waiting for its dependents."""
    return is_being_deleted(obj) and FOREGROUND in _finalizers(obj)


class GarbageCollector(Controller):
    name = "garbage-collector"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        #: uid -> (resource, cache key) of every object seen
        self.nodes: dict[str, tuple[ResourceType, str]] = {}
        #: owner uid -> uids of the objects that name it in their ownerReferences
        self.dependents: dict[str, set[str]] = defaultdict(set)
        self._owners: dict[str, set[str]] = {}
        self.informers: dict[str, Informer] = {}
        for rt in client.registry.preferred():
            if _collected(rt):
                informer = factory.informer(rt.group_resource)
                self.informers[rt.group_resource] = informer
                informer.add_handlers(*self._handlers(rt))
        #: the resources of CustomResourceDefinitions come and go: their informers with them
        self._unsubscribe = client.registry.subscribe(self._registry_changed)

    def _registry_changed(self, change: Change) -> None:
        """Watch the resources that appeared (a CRD established) and stop watching those that went; a resource
        whose preferred version changed is watched again in the new one."""
        preferred = {rt.group_resource: rt for rt in self.client.registry.preferred() if _collected(rt)}
        for group_resource, informer in list(self.informers.items()):
            wanted = preferred.get(group_resource)
            if wanted is None or wanted.version != informer.resource.version:
                del self.informers[group_resource]
                self.factory.discard(group_resource)
                self._tasks.append(start_task(informer.stop(), name=f"{self.name} stops {group_resource}"))
        for group_resource, rt in preferred.items():
            if group_resource not in self.informers:
                informer = self.factory.informer_late(rt)
                self.informers[group_resource] = informer
                if not informer.started:
                    informer.add_handlers(*self._handlers(rt))

    async def stop(self) -> None:
        self._unsubscribe()
        await super().stop()

    # -- the graph ---------------------------------------------------------------------------------------------
    def _handlers(self, rt: ResourceType) -> tuple[Any, Any, Any]:
        def added(obj: Obj) -> None:
            self._observe(rt, obj, None)

        def updated(old: Obj, new: Obj) -> None:
            if old is new or old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
                return
            if old["metadata"].get("uid") != new["metadata"].get("uid"):
                self._forget(old)
                old = None  # type: ignore[assignment]
            self._observe(rt, new, old)

        def deleted(obj: Obj) -> None:
            self._forget(obj)

        return added, updated, deleted

    def _observe(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid")
        if not uid:
            return
        self.nodes[uid] = (rt, object_key(obj))
        owners = {str(r["uid"]) for r in _refs(obj) if r.get("uid")}
        before = self._owners.get(uid, set())
        for gone in before - owners:
            self.dependents[gone].discard(uid)
            self._enqueue_if_waiting(gone)
        for owner in owners:
            self.dependents[owner].add(uid)
        if owners:
            self._owners[uid] = owners
        else:
            self._owners.pop(uid, None)
        if old is None:
            if owners or (is_being_deleted(obj) and {ORPHAN, FOREGROUND} & set(_finalizers(obj))):
                self.queue.add(uid)
            return
        if _refs(old) != _refs(obj):
            self.queue.add(uid)
            for owner in owners:
                self._enqueue_if_waiting(owner)  # a blockOwnerDeletion may have been lifted
        if is_being_deleted(obj) and (not is_being_deleted(old) or _finalizers(old) != _finalizers(obj)):
            self.queue.add(uid)
            if deleting_dependents(obj) and not deleting_dependents(old):
                for dependent in self.dependents.get(uid, ()):
                    self.queue.add(dependent)
        if is_being_deleted(obj) and not is_being_deleted(old):
            for owner in owners:
                self._enqueue_if_waiting(owner)

    def _forget(self, obj: Obj) -> None:
        uid = (obj.get("metadata") or {}).get("uid")
        if not uid:
            return
        self.nodes.pop(uid, None)
        for owner in self._owners.pop(uid, set()):
            self.dependents[owner].discard(uid)
            if not self.dependents[owner]:
                del self.dependents[owner]
            self._enqueue_if_waiting(owner)
        for dependent in self.dependents.get(uid, ()):  # they may have lost their last owner
            self.queue.add(dependent)

    def _enqueue_if_waiting(self, owner_uid: str) -> None:
        owner = self.get(owner_uid)
        if owner is not None and deleting_dependents(owner):
            self.queue.add(owner_uid)

    def get(self, uid: str) -> Obj | None:
        """The cached object with ``uid``."""
        node = self.nodes.get(uid)
        if node is None:
            return None
        rt, key = node
        obj = self.informers[rt.group_resource].get(key)
        if obj is None or (obj.get("metadata") or {}).get("uid") != uid:
            return None
        return obj

    def dependents_of(self, uid: str) -> list[Obj]:
        return [d for d in (self.get(u) for u in list(self.dependents.get(uid, ()))) if d is not None]

    # -- sync ------------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        obj = self.get(key)
        if obj is None:
            return
        if is_being_deleted(obj):
            finalizers = _finalizers(obj)
            if ORPHAN in finalizers:
                await self._orphan_dependents(obj)
            elif FOREGROUND in finalizers:
                await self._process_deleting_dependents(obj)
            return
        if _refs(obj):
            await self._attempt_to_delete(obj)

    async def _attempt_to_delete(self, item: Obj) -> None:
        solid: list[Obj] = []
        dangling: list[Obj] = []
        waiting: list[Obj] = []
        for ref in _refs(item):
            owner = await self._owner(item, ref)
            if owner is _UNKNOWN:
                solid.append(ref)  # a kind the server does not serve: never collect on that basis
            elif owner is None:
                dangling.append(ref)
            elif deleting_dependents(owner):
                waiting.append(ref)
            else:
                solid.append(ref)
        meta = item["metadata"]
        log = self.log.bind(object=f"{item.get('kind')}/{object_key(item)}")
        if solid:
            if not dangling and not waiting:
                return
            gone = {str(r.get("uid")) for r in dangling + waiting}
            log.debug("removing references to owners that are gone", owners=sorted(gone))
            await self._patch_refs(item, [r for r in _refs(item) if r.get("uid") not in gone])
            return
        if waiting and self.dependents.get(meta["uid"]):
            if any(deleting_dependents(d) for d in self.dependents_of(meta["uid"])):
                # a cycle in the making: stop blocking the owners that wait for us
                waiting_uids = {r.get("uid") for r in waiting}
                unblocked = [{**r, "blockOwnerDeletion": False} if r.get("uid") in waiting_uids else r
                             for r in _refs(item)]
                await self._patch_refs(item, unblocked)
            policy = "Foreground"
        elif ORPHAN in _finalizers(item):
            policy = "Orphan"
        elif FOREGROUND in _finalizers(item):
            policy = "Foreground"
        else:
            policy = "Background"
        log.info("deleting object whose owners are gone", propagation=policy)
        await self._delete(item, policy)

    async def _owner(self, item: Obj, ref: Obj) -> Any:
        """The owner ``ref`` names, as it is now; None when it is gone (or another object of that name),
        ``_UNKNOWN`` when its kind is not served."""
        uid = ref.get("uid")
        cached = self.get(uid) if uid else None
        if cached is not None:
            return cached
        rt = self.client.registry.by_kind(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
        if rt is None:
            return _UNKNOWN
        namespace = (item.get("metadata") or {}).get("namespace")
        if rt.namespaced and not namespace:
            self.event(item, "Warning", "OwnerRefInvalidNamespace",
                       f"ownerRef [{ref.get('apiVersion')}/{ref.get('kind')}, namespace: , name: {ref.get('name')}, "
                       f"uid: {uid}] does not exist in namespace \"\"")
            return None
        try:
            live = await self.client.get(rt, str(ref.get("name") or ""), namespace if rt.namespaced else None)
        except StatusError as exc:
            if exc.code == 404:
                return None
            raise
        return live if live["metadata"].get("uid") == uid else None

    async def _orphan_dependents(self, owner: Obj) -> None:
        uid = owner["metadata"]["uid"]
        for dependent in self.dependents_of(uid):
            await self._patch_refs(dependent, [r for r in _refs(dependent) if r.get("uid") != uid])
        self.log.info("orphaned dependents", object=f"{owner.get('kind')}/{object_key(owner)}")
        await self._remove_finalizer(owner, ORPHAN)

    async def _process_deleting_dependents(self, owner: Obj) -> None:
        uid = owner["metadata"]["uid"]
        blocking = [d for d in self.dependents_of(uid)
                    if any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in _refs(d))]
        if not blocking:
            await self._remove_finalizer(owner, FOREGROUND)
            return
        for dependent in blocking:
            if not deleting_dependents(dependent):
                self.queue.add(dependent["metadata"]["uid"])

    # -- writes ----------------------------------------------------------------------------------------------
    def _resource(self, obj: Obj) -> ResourceType:
        return self.nodes[obj["metadata"]["uid"]][0]

    async def _patch(self, obj: Obj, ops: list[Obj]) -> None:
        meta = obj["metadata"]
        guard = [{"op": "test", "path": "/metadata/uid", "value": meta["uid"]},
                 {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]}]
        try:
            await self.client.patch(self._resource(obj), meta["name"], guard + ops, meta.get("namespace"),
                                    content_type=JSON_PATCH)
        except StatusError as exc:
            if exc.code != 404:
                raise  # 422: it changed since the cache saw it; retried on the next version

    async def _patch_refs(self, obj: Obj, refs: list[Obj]) -> None:
        await self._patch(obj, [{"op": "replace", "path": "/metadata/ownerReferences", "value": refs} if refs
                                else {"op": "remove", "path": "/metadata/ownerReferences"}])

    async def _remove_finalizer(self, obj: Obj, finalizer: str) -> None:
        kept = [f for f in _finalizers(obj) if f != finalizer]
        await self._patch(obj, [{"op": "replace", "path": "/metadata/finalizers", "value": kept}])

    async def _delete(self, obj: Obj, policy: str) -> None:
        meta = obj["metadata"]
        try:
            await self.client.delete(self._resource(obj), meta["name"], meta.get("namespace"),
                                     propagation_policy=policy, preconditions={"uid": meta["uid"]})
        except StatusError as exc:
            if exc.code not in (404, 409):
                raise


_UNKNOWN = object()
