"""Unit tests of controllers in Kubernetes' sample-controller style: a controller built on caches filled with
known objects and a client that answers from memory and records every call, so a test runs one ``sync(key)``
and asserts the API calls it made.

    client = RecordingClient([job])
    factory = StaticInformerFactory(client, {"jobs": [job], "pods": []})
    controller = JobController(client, factory)
    await controller.sync("default/pi")
    assert [a.verb for a in client.writes()] == ["create", "create", "update_status"]
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minik.api.errors import StatusError, already_exists, conflict, not_found
from minik.api.registry import Registry, ResourceType
from minik.api.timestamps import now_rfc3339
from minik.apiserver.patch import json_patch, merge_patch, strategic_merge_patch
from minik.client import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, Client, Resource, Response, StreamedResponse
from minik.controllers.base import InformerFactory
from minik.informers import Informer, Transform, object_key

Obj = dict[str, Any]

_READS = ("get", "list")


@dataclass
class Action:
    """One call a controller made: ``verb`` is the client method (create, update, update_status, patch,
    patch_status, delete, get, list), ``resource`` the plural."""

    verb: str
    resource: str
    namespace: str | None
    name: str | None
    body: Any = None
    options: dict[str, Any] = field(default_factory=dict)


class _NoTransport:
    async def request(self, method: str, path: str, query: Mapping[str, str], body: bytes | None = None,
                      content_type: str | None = None) -> Response:
        raise AssertionError(f"RecordingClient sent {method} {path} over a transport")

    async def stream(self, method: str, path: str, query: Mapping[str, str]) -> StreamedResponse:
        raise AssertionError(f"RecordingClient streamed {method} {path}")

    async def close(self) -> None:
        return None


class RecordingClient(Client):
    """A ``Client`` over an in-memory map of objects: reads answer from it, writes change it (with uids,
    resourceVersions and generateName) and every call is recorded in ``actions``. ``fail`` makes the next calls
    of a verb on a resource raise a given StatusError."""

    def __init__(self, objects: Iterable[Obj] = (), registry: Registry | None = None) -> None:
        super().__init__(_NoTransport(), registry)
        self.objects: dict[tuple[str, str | None, str], Obj] = {}
        self.actions: list[Action] = []
        self.failures: dict[tuple[str, str], StatusError] = {}
        self._versions = itertools.count(100)
        self._uids = itertools.count(1)
        for obj in objects:
            self.add(obj)

    # -- set-up and inspection --------------------------------------------------------------------------------
    def _type(self, resource: Resource) -> ResourceType:
        return self.resource(resource)

    def _key(self, resource: Resource, namespace: str | None, name: str) -> tuple[str, str | None, str]:
        rt = self._type(resource)
        return rt.plural, namespace if rt.namespaced else None, name

    def add(self, obj: Obj) -> Obj:
        """Put ``obj`` in the store as it is (given a uid and resourceVersion if it has none)."""
        rt = self.registry.by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
        if rt is None:
            raise ValueError(f"unknown kind {obj.get('apiVersion')}/{obj.get('kind')}")
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{next(self._uids)}")
        meta.setdefault("resourceVersion", str(next(self._versions)))
        self.objects[self._key(rt, meta.get("namespace"), meta["name"])] = obj
        return obj

    def fail(self, verb: str, resource: str, error: StatusError) -> None:
        self.failures[(verb, self._type(resource).plural)] = error

    def writes(self, verb: str | None = None, resource: str | None = None) -> list[Action]:
        """The recorded writes (everything but get and list), optionally of one verb and/or resource."""
        plural = self._type(resource).plural if resource else None
        return [a for a in self.actions if a.verb not in _READS and (verb is None or a.verb == verb)
                and (plural is None or a.resource == plural)]

    def stored(self, resource: str, name: str, namespace: str | None = None) -> Obj | None:
        return self.objects.get(self._key(resource, namespace, name))

    def _record(self, verb: str, resource: Resource, namespace: str | None, name: str | None, body: Any = None,
                **options: Any) -> None:
        plural = self._type(resource).plural
        self.actions.append(Action(verb, plural, namespace, name, copy.deepcopy(body),
                                   {k: v for k, v in options.items() if v is not None}))
        error = self.failures.get((verb, plural))
        if error is not None:
            raise error

    def _bump(self, obj: Obj) -> Obj:
        obj["metadata"]["resourceVersion"] = str(next(self._versions))
        return copy.deepcopy(obj)

    # -- reads ----------------------------------------------------------------------------------------------
    async def get(self, resource: Resource, name: str, namespace: str | None = None, *,
                  subresource: str | None = None) -> Obj:
        self._record("get", resource, namespace, name)
        obj = self.objects.get(self._key(resource, namespace, name))
        if obj is None:
            rt = self._type(resource)
            raise not_found(rt.plural, rt.group, name)
        return copy.deepcopy(obj)

    async def list(self, resource: Resource, namespace: str | None = None, **options: Any) -> Obj:
        self._record("list", resource, namespace, None, **options)
        rt = self._type(resource)
        items = [copy.deepcopy(o) for (plural, ns, _), o in self.objects.items()
                 if plural == rt.plural and (namespace is None or ns == namespace)]
        return {"kind": rt.kind_list, "apiVersion": rt.api_version, "metadata": {"resourceVersion": "1"},
                "items": items}

    async def list_all(self, resource: Resource, namespace: str | None = None, **options: Any) -> Obj:
        return await self.list(resource, namespace, **options)

    # -- writes ---------------------------------------------------------------------------------------------
    async def create(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None = None, *,
                     dry_run: bool = False) -> Obj:
        rt = self._type(resource)
        new = copy.deepcopy(dict(obj))
        meta = new.setdefault("metadata", {})
        ns = (namespace or meta.get("namespace")) if rt.namespaced else None
        self._record("create", rt, ns, meta.get("name") or meta.get("generateName"), new)
        if not meta.get("name"):
            meta["name"] = f"{meta.get('generateName', '')}{next(self._uids):05d}"
        if ns:
            meta["namespace"] = ns
        key = self._key(rt, ns, meta["name"])
        if key in self.objects:
            raise already_exists(rt.plural, rt.group, meta["name"])
        new.setdefault("apiVersion", rt.api_version)
        new.setdefault("kind", rt.kind)
        meta["uid"] = f"uid-{next(self._uids)}"
        meta["creationTimestamp"] = now_rfc3339()
        if rt.strategy.tracks_generation:
            meta["generation"] = 1
        self.objects[key] = new
        return self._bump(new)

    def _current(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        obj = self.objects.get(self._key(rt, namespace, name))
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return obj

    def _replace(self, rt: ResourceType, current: Obj, new: Obj) -> Obj:
        version = (new.get("metadata") or {}).get("resourceVersion")
        if version and version != current["metadata"]["resourceVersion"]:
            raise conflict(rt.plural, rt.group, current["metadata"]["name"])
        for owned in ("uid", "creationTimestamp", "deletionTimestamp", "namespace"):
            if owned in current["metadata"]:
                new["metadata"][owned] = current["metadata"][owned]
        self.objects[self._key(rt, current["metadata"].get("namespace"), current["metadata"]["name"])] = new
        return self._maybe_gone(rt, new)

    def _maybe_gone(self, rt: ResourceType, obj: Obj) -> Obj:
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and \
                not meta.get("deletionGracePeriodSeconds") and not rt.strategy.holds_deletion(obj):
            self.objects.pop(self._key(rt, meta.get("namespace"), meta["name"]), None)
        return self._bump(obj)

    async def update(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None = None, *,
                     dry_run: bool = False, subresource: str | None = None) -> Obj:
        rt = self._type(resource)
        new = copy.deepcopy(dict(obj))
        ns = namespace or new["metadata"].get("namespace")
        self._record("update" if subresource is None else f"update_{subresource}", rt, ns, new["metadata"]["name"],
                     new)
        current = self._current(rt, ns, new["metadata"]["name"])
        if rt.strategy.has_status and subresource is None and "status" in current:
            new["status"] = copy.deepcopy(current["status"])
        return self._replace(rt, current, new)

    async def update_status(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        rt = self._type(resource)
        new = copy.deepcopy(dict(obj))
        ns = namespace or new["metadata"].get("namespace")
        self._record("update_status", rt, ns, new["metadata"]["name"], new)
        current = self._current(rt, ns, new["metadata"]["name"])
        merged = copy.deepcopy(current)
        merged["status"] = new.get("status")
        merged["metadata"]["resourceVersion"] = new["metadata"].get("resourceVersion")
        return self._replace(rt, current, merged)

    async def patch(self, resource: Resource, name: str, patch: Any, namespace: str | None = None, *,
                    content_type: str = MERGE_PATCH, field_manager: str | None = None, force: bool | None = None,
                    dry_run: bool = False, subresource: str | None = None) -> Obj:
        rt = self._type(resource)
        self._record("patch" if subresource is None else f"patch_{subresource}", rt, namespace, name, patch,
                     content_type=content_type)
        current = self._current(rt, namespace, name)
        before = copy.deepcopy(current)
        if content_type == JSON_PATCH:
            after = json_patch(before, patch)
        elif content_type == STRATEGIC_MERGE_PATCH:
            after = strategic_merge_patch(before, patch, rt.kind)
        else:
            after = merge_patch(before, patch)
        after["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        return self._replace(rt, current, after)

    async def patch_status(self, resource: Resource, name: str, patch: Any, namespace: str | None = None, *,
                           content_type: str = MERGE_PATCH) -> Obj:
        return await self.patch(resource, name, patch, namespace, content_type=content_type, subresource="status")

    async def delete(self, resource: Resource, name: str, namespace: str | None = None, *,
                     grace_period_seconds: int | None = None, propagation_policy: str | None = None,
                     preconditions: Mapping[str, str] | None = None, dry_run: bool = False) -> Obj:
        rt = self._type(resource)
        self._record("delete", rt, namespace, name, None, grace_period_seconds=grace_period_seconds,
                     propagation_policy=propagation_policy, preconditions=dict(preconditions or {}) or None)
        current = self._current(rt, namespace, name)
        uid = (preconditions or {}).get("uid")
        if uid and uid != current["metadata"]["uid"]:
            raise conflict(rt.plural, rt.group, name, "Precondition failed: UID in precondition: "
                           f"{uid}, UID in object meta: {current['metadata']['uid']}")
        finalizers = list(current["metadata"].get("finalizers") or [])
        if propagation_policy == "Foreground":
            finalizers = [f for f in finalizers if f != "orphan"] + ["foregroundDeletion"]
        elif propagation_policy == "Orphan":
            finalizers = [f for f in finalizers if f != "foregroundDeletion"] + ["orphan"]
        if finalizers:
            current["metadata"]["finalizers"] = finalizers
            current["metadata"].setdefault("deletionTimestamp", now_rfc3339())
            return self._bump(current)
        self.objects.pop(self._key(rt, namespace, name))
        return {"kind": "Status", "apiVersion": "v1", "status": "Success"}

    async def delete_collection(self, resource: Resource, namespace: str | None = None, *,
                                label_selector: Any = None, field_selector: Any = None,
                                propagation_policy: str | None = None,
                                grace_period_seconds: int | None = None) -> Obj:
        rt = self._type(resource)
        self._record("delete_collection", rt, namespace, None, None, propagation_policy=propagation_policy)
        names = [name for (plural, ns, name) in list(self.objects) if plural == rt.plural and ns == namespace]
        items = []
        for name in names:
            current = self.objects[(rt.plural, namespace, name)]
            items.append(copy.deepcopy(current))
            if current["metadata"].get("finalizers"):
                current["metadata"].setdefault("deletionTimestamp", now_rfc3339())
                self._bump(current)
            else:
                del self.objects[(rt.plural, namespace, name)]
        return {"kind": rt.kind_list, "apiVersion": rt.api_version, "items": items}


class StaticInformer(Informer):
    """An informer whose cache is what the test put in it; it never lists or watches."""

    def __init__(self, client: Client, resource: str, objects: Iterable[Obj] = ()) -> None:
        super().__init__(client, resource)
        for obj in objects:
            self.put(obj)
        self._synced = True

    def put(self, obj: Obj) -> None:
        key = object_key(obj)
        self._index(key, self._cache.get(key), obj)
        self._cache[key] = obj

    def remove(self, obj: Obj) -> None:
        previous = self._cache.pop(object_key(obj), None)
        if previous is not None:
            self._index(object_key(obj), previous, None)

    # what a watch event would do: change the cache, then tell the handlers (synchronous handlers only)
    def added(self, obj: Obj) -> None:
        self.put(obj)
        for handler in self._on_add:
            handler(obj)

    def updated(self, new: Obj) -> None:
        old = self._cache.get(object_key(new))
        self.put(new)
        for handler in self._on_update:
            handler(old if old is not None else new, new)

    def deleted(self, obj: Obj) -> None:
        self.remove(obj)
        for handler in self._on_delete:
            handler(obj)

    def start(self) -> None:
        self._started = True
        self._settled.set()

    async def stop(self) -> None:
        return None


class StaticInformerFactory(InformerFactory):
    """Hands controllers ``StaticInformer``s holding the given objects per resource (others start empty)."""

    def __init__(self, client: Client, objects: Mapping[str, Iterable[Obj]] | None = None) -> None:
        super().__init__(client)
        self._static: dict[str, StaticInformer] = {}
        for resource, items in (objects or {}).items():
            self._static[client.resource(resource).group_resource] = StaticInformer(client, resource, items)

    def informer(self, resource: str, transform: Transform | None = None,
                 field_selector: str | None = None) -> Informer:
        """The resource's static informer; a field selector is not applied (give only the objects it selects)."""
        key = self.client.resource(resource).group_resource
        if key not in self._static:
            self._static[key] = StaticInformer(self.client, resource)
        return self._static[key]

    def static(self, resource: str) -> StaticInformer:
        informer = self.informer(resource)
        assert isinstance(informer, StaticInformer)
        return informer
