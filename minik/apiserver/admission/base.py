"""The request pipeline's replaceable stages: the authenticator and admission plugin protocols (the authorizer's
is minik.apiserver.authorization), what admission sees of a request, and the chain that runs the plugins.

Each stage is a small protocol, so implementations are swapped without touching the handlers:
authenticate -> authorize -> decode -> admit (mutating, then validating) -> validate -> store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from minik.api.registry import Registry, ResourceType
from minik.apiserver.request import ApiRequest, User
from minik.store import Record, Store

Obj = dict[str, Any]


class Authenticator(Protocol):
    async def authenticate(self, request: ApiRequest) -> User | None: ...




@dataclass
class Attributes:
    """What admission sees of a request (Kubernetes' admission.Attributes)."""

    operation: str  # CREATE, UPDATE, DELETE, CONNECT
    resource: ResourceType
    subresource: str | None
    namespace: str | None
    name: str
    obj: Obj | None
    old: Obj | None
    user: User
    dry_run: bool = False
    #: the request's CreateOptions, UpdateOptions or DeleteOptions as given (fieldManager, propagationPolicy...)
    options: Obj | None = None
    #: called once the write is decided (True: stored; False: refused, failed or a dry run), for plugins that
    #: hold something for the request until then (the ResourceQuota plugin's charge); see ``Attributes.finish``
    finishers: list[Callable[[bool], Awaitable[None]]] = field(default_factory=list, compare=False, repr=False)

    async def finish(self, stored: bool) -> None:
        """Tell every plugin that asked how the write ended (once: the list is emptied)."""
        finishers, self.finishers = self.finishers, []
        for finisher in finishers:
            await finisher(stored)


class ObjectReader:
    """Read access to current objects, for admission plugins (Kubernetes uses listers for this).

    What it returns is shared between requests and must not be changed: a plugin that wants to change a copy
    makes one. Every pod create reads its namespace twice and looks for a default PriorityClass, so decoded
    objects are kept while their stored version is current, and a filtered list (``containing``) while nothing
    of its type was written."""

    #: decoded objects kept; the cache starts over when full (namespaces and classes are few, pods many)
    CACHED_OBJECTS = 1024

    def __init__(self, store: Store, registry: Registry) -> None:
        self._store = store
        self._registry = registry
        self._decoded: dict[str, tuple[Record, Obj]] = {}
        self._lists: dict[tuple[str, bytes | None], tuple[int, list[Record]]] = {}

    @property
    def store(self) -> Store:
        """The store itself, for plugins that count what it holds (ResourceQuota); read it, never write."""
        return self._store

    @property
    def registry(self) -> Registry:
        return self._registry

    def get(self, group: str, version: str, plural: str, namespace: str | None, name: str) -> Obj | None:
        resource = self._registry.get(group, version, plural)
        if resource is None:
            return None
        key = resource.key(namespace, name)
        record = self._store.get(key)
        if record is None:
            return None
        return self._object(record)

    def _object(self, record: Record) -> Obj:
        cached = self._decoded.get(record.key)
        if cached is not None and cached[0] is record:
            return cached[1]
        if len(self._decoded) >= self.CACHED_OBJECTS:
            self._decoded.clear()
        obj = record.object()
        self._decoded[record.key] = (record, obj)
        return obj

    async def list(self, group: str, version: str, plural: str, namespace: str | None = None,
                   containing: bytes | None = None) -> list[Obj]:
        """Every current object of a kind (in one namespace, for namespaced kinds, when given). With
        ``containing``, only those whose stored JSON (compact, as the store writes it) has these bytes: a cheap
        filter before decoding, for plugins that look for one field value on every request."""
        resource = self._registry.get(group, version, plural)
        if resource is None:
            return []
        prefix = resource.prefix(namespace)
        if containing is None:  # not kept: a whole kind can be large
            return [record.object() for record in (await self._store.list(prefix)).items]
        changed = self._store.changed_at(resource.prefix())
        cached = self._lists.get((prefix, containing))
        if cached is not None and cached[0] == changed:
            records = cached[1]
        else:
            records = [record for record in (await self._store.list(prefix)).items if containing in record.raw]
            self._lists[(prefix, containing)] = (changed, records)
        return [self._object(record) for record in records]


class MutatingPlugin(Protocol):
    name: str

    async def admit(self, attrs: Attributes) -> None:
        """Mutate ``attrs.obj`` in place, or raise StatusError."""
        ...


class ValidatingPlugin(Protocol):
    name: str

    async def validate(self, attrs: Attributes) -> None:
        """Raise StatusError to refuse the request; never mutate."""
        ...


#: a plugin has ``admit``, ``validate`` or both (Kubernetes' MutationInterface and ValidationInterface)
AdmissionPlugin = MutatingPlugin | ValidatingPlugin


class Admission:
    """Runs the plugins in order: every mutating step first, then every validating step. A plugin without one of
    the two steps is not called for it (every write goes through the chain)."""

    def __init__(self, plugins: list[AdmissionPlugin]) -> None:
        self.plugins = plugins
        self._mutating: list[Callable[[Attributes], Awaitable[None]]] = [
            step for plugin in plugins if (step := getattr(plugin, "admit", None)) is not None]
        self._validating: list[Callable[[Attributes], Awaitable[None]]] = [
            step for plugin in plugins if (step := getattr(plugin, "validate", None)) is not None]

    async def admit(self, attrs: Attributes) -> None:
        for admit in self._mutating:
            await admit(attrs)

    async def validate(self, attrs: Attributes) -> None:
        for validate in self._validating:
            await validate(attrs)
