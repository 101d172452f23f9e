"""Informers: list + watch one resource into a local cache and tell handlers what changed (client-go's
reflector + indexer + shared informer, for one consumer).

The informer lists (paged) and watches from the list's resourceVersion with bookmarks. A watch that ends or
breaks is resumed from the last resourceVersion seen, so no event is missed; a 410 Expired (history compacted
past that version) relists from the current state, reporting what changed meanwhile as adds, updates and
deletes. Errors are retried with exponential backoff, forever, until ``stop()``.

Cached objects are shared, not copied: they are read-only. A handler or a controller that wants to change
one must copy it first (``copy.deepcopy``) and write the copy through the API. They are shared between the
informers of a process too: every informer that holds the same version of an object (same uid and
resourceVersion) holds one decoded copy of it, so the scheduler, the controllers and the kubelets of `minik up`
keep one copy of each pod between them, not three. Cached objects leave out ``metadata.managedFields``, as
kube-scheduler's and kube-controller-manager's informers do: no component reads them, and they are a third of a
pod's memory (an update sent without them keeps the stored ones).
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
import random
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from types import TracebackType
from typing import Any

import orjson
import structlog

from minik.aio import Backoff, start_task, stop_task
from minik.aio.clock import SYSTEM_CLOCK, Clock
from minik.api.errors import StatusError
from minik.client import Client, Resource, Selector

log = structlog.get_logger("minik.informers")

Obj = dict[str, Any]
AddHandler = Callable[[Obj], Awaitable[None] | None]
UpdateHandler = Callable[[Obj, Obj], Awaitable[None] | None]
DeleteHandler = Callable[[Obj], Awaitable[None] | None]
Transform = Callable[[Obj], Obj]
Sleep = Callable[[float], Awaitable[None]]
#: the index values of an object (client-go's IndexFunc): an object may sit under several values, or none
IndexFunc = Callable[[Obj], Iterable[str]]

#: every informer's index of its objects by namespace (what ``list(namespace)`` reads)
NAMESPACE_INDEX = "namespace"
#: the index ``by_node_name`` makes: pods by spec.nodeName
NODE_NAME_INDEX = "spec.nodeName"


def _namespace_of(obj: Obj) -> tuple[str, ...]:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return (namespace,) if namespace else ()


def by_node_name(obj: Obj) -> tuple[str, ...]:
    """A pod's node (none while it is not bound): ``add_indexers({NODE_NAME_INDEX: by_node_name})``."""
    node = (obj.get("spec") or {}).get("nodeName")
    return (node,) if node else ()


def object_key(obj: Obj) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects (client-go's MetaNamespaceKeyFunc)."""
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name", "")
    return f"{namespace}/{name}" if namespace else name


def split_key(key: str) -> tuple[str | None, str]:
    """``(namespace, name)`` from a key made by ``object_key``; namespace is None for cluster-scoped keys."""
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else (None, key)


def _resource_version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


#: strings up to this long are interned in shared objects: the values pods repeat ("True", "IfNotPresent",
#: "ClusterFirst", condition types, image names, node names...) then exist once, which saves about 30% of a
#: decoded pod's memory
INTERN_MAX_LENGTH = 64

#: an object's strings are interned once it has been held this long (at the next hold after that): versions that
#: die young (a pending pod, replaced by its bound version once the scheduler gets to it) never pay for it
YOUNG_SECONDS = 2.0

#: metadata fields whose values are one object's own (no other object repeats them): interning them would only
#: grow the interpreter's table of interned strings, and make every lookup in it slower
_OWN_METADATA = frozenset({"name", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                           "generation"})


def _intern_strings(value: dict[str, Any] | list[Any], intern: Callable[[str], str] = sys.intern,
                    skip: frozenset[str] | None = None) -> None:
    """Replace every short string value under ``value`` (in place) with its interned copy; ``skip``: keys of
    ``value`` itself to leave alone."""
    items = value.items() if type(value) is dict else enumerate(value)  # noqa: E721 - exact types, for speed
    for key, item in items:
        if skip is not None and key in skip:
            continue
        kind = type(item)
        if kind is str:
            if len(item) <= INTERN_MAX_LENGTH:
                value[key] = intern(item)  # type: ignore[index]
        elif kind is dict or kind is list:
            _intern_strings(item, intern)


_METADATA = frozenset({"metadata"})


def _intern_object(obj: Obj) -> None:
    """``_intern_strings`` for an API object, leaving out the metadata fields that are its own."""
    meta = obj.get("metadata")
    if type(meta) is dict:  # noqa: E721
        _intern_strings(meta, skip=_OWN_METADATA)
    _intern_strings(obj, skip=_METADATA)


class SharedObjects:
    """One decoded copy of each object version for every informer of the process, counted by its holders.

    An informer ``hold``s each object it caches (getting the copy already held, when another informer has the
    same uid at the same resourceVersion) and ``release``s it when it drops it; the last release forgets it.
    Interning the strings of an object waits until it has been held for ``young_seconds``.
    """

    def __init__(self, young_seconds: float = YOUNG_SECONDS, clock: Clock = SYSTEM_CLOCK) -> None:
        self._objects: dict[tuple[str, str], list[Any]] = {}  # (uid, resourceVersion) -> [object, holders]
        # (when to intern, key) of the objects held last, oldest first, not interned yet
        self._young: deque[tuple[float, tuple[str, str]]] = deque()
        self._young_seconds = young_seconds
        self._now = clock.monotonic

    @staticmethod
    def _key(obj: Obj) -> tuple[str, str] | None:
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            return None
        uid, version = meta.get("uid"), meta.get("resourceVersion")
        return (uid, version) if isinstance(uid, str) and uid and isinstance(version, str) and version else None

    def hold(self, obj: Obj) -> Obj:
        """The shared copy of ``obj`` (``obj`` itself when it is the first of its version; its short strings are
        interned later, if it lives), managedFields left out."""
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
        key = self._key(obj)
        if key is None:
            return obj
        entry = self._objects.get(key)
        if entry is None:
            self._objects[key] = [obj, 1]
            young, now = self._young, self._now()
            young.append((now + self._young_seconds, key))
            while young[0][0] <= now:
                # interning replaces strings with equal ones in place: the holders see the same values
                survivor = self._objects.get(young.popleft()[1])
                if survivor is not None:
                    _intern_object(survivor[0])
            return obj
        entry[1] += 1
        shared: Obj = entry[0]
        return shared

    def release(self, obj: Obj) -> None:
        """One holder of ``obj``'s version is done with it."""
        key = self._key(obj)
        entry = self._objects.get(key) if key is not None else None
        if entry is None or entry[0] is not obj:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del self._objects[key]  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self._objects)


#: the objects every informer of this process shares
SHARED = SharedObjects()


class SharedLines:
    """Watch lines decoded once per process. The informers of `minik up` (the scheduler's, the controllers', the
    kubelets') read the same line of a pod's change within a few turns of the event loop, and each decoded it;
    a line read again now gets the event decoded the first time (the object in it is shared and read-only, as
    every cached object is). Only the latest lines are kept."""

    LIMIT = 512

    def __init__(self) -> None:
        self._events: dict[bytes, Any] = {}

    def decode(self, line: bytes) -> Any:
        events = self._events
        event = events.get(line)
        if event is None:
            event = orjson.loads(line)
            if len(events) >= self.LIMIT:
                del events[next(iter(events))]
            events[line] = event
        return event


#: the lines every informer of this process shares
LINES = SharedLines()


class Informer:
    """A cache of one resource (optionally one namespace and selectors), kept current by list + watch.

    Register handlers, ``start()``, ``await wait_for_sync()``, read with ``get``/``list``, and ``await stop()``
    (or use ``async with``). Handlers may be plain functions or coroutine functions; they are called one at a
    time, in event order, after the cache already holds the change. A handler's exception is logged and the
    informer carries on. ``on_delete`` gets the object's last state: from the DELETED event, or, for an object
    found missing on a relist, the last version the cache held.

    ``resync_seconds`` > 0 calls every update handler with ``(obj, obj)`` for each cached object that often, so
    controllers reconcile periodically even when nothing changes.
    """

    def __init__(self, client: Client, resource: Resource, namespace: str | None = None, *,
                 label_selector: Selector = None, field_selector: Selector = None, resync_seconds: float = 0.0,
                 page_size: int = 500, watch_timeout_seconds: int = 300, backoff: Backoff | None = None,
                 sleep: Sleep = asyncio.sleep, transform: Transform | None = None) -> None:
        self.client = client
        self.resource = client.resource(resource)
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync_seconds = resync_seconds
        self.page_size = page_size
        #: each watch asks the server to end it after between this and twice this many seconds, as client-go
        #: does, so that watches are spread over time and re-established regularly
        self.watch_timeout_seconds = watch_timeout_seconds
        self._backoff = backoff or Backoff(initial=0.2, maximum=30.0, factor=2.0, jitter=0.5)
        self._sleep = sleep
        self._cache: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: _namespace_of}
        #: index name -> value -> the keys of the objects under it (a dict, to keep their order)
        self._indices: dict[str, dict[str, dict[str, None]]] = {NAMESPACE_INDEX: {}}
        self._resource_version = ""
        self._on_add: list[AddHandler] = []
        self._on_update: list[UpdateHandler] = []
        self._on_delete: list[DeleteHandler] = []
        self._lock = asyncio.Lock()  # handlers run one at a time, whether for an event or a resync
        self._synced = False
        self._settled = asyncio.Event()  # synced, or stopped before it could
        self._task: asyncio.Task[None] | None = None
        self._resync_task: asyncio.Task[None] | None = None
        self._started = False
        #: what is kept of each object (client-go's SetTransform), for a consumer that reads a few fields of many
        #: objects; its objects are its own, not shared with other informers
        self.transform = transform
        self._holding = transform is None  # the cached objects are held in SHARED (until stop)
        self._log = log.bind(resource=self.resource.group_resource, namespace=namespace)

    # -- set-up ---------------------------------------------------------------------------------------------
    def add_handlers(self, on_add: AddHandler | None = None, on_update: UpdateHandler | None = None,
                     on_delete: DeleteHandler | None = None) -> None:
        """Register handlers; only before ``start()``, so that every handler sees every object."""
        if self._started:
            raise RuntimeError("handlers must be added before the informer starts")
        if on_add is not None:
            self._on_add.append(on_add)
        if on_update is not None:
            self._on_update.append(on_update)
        if on_delete is not None:
            self._on_delete.append(on_delete)

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        """Keep the cache indexed by these functions as well (client-go's AddIndexers), read with ``by_index``;
        only before ``start()``. Consumers of a shared informer may ask for the same index (same function)."""
        if self._started:
            raise RuntimeError("indexers must be added before the informer starts")
        for name, func in indexers.items():
            known = self._indexers.get(name)
            if known is func:  # another consumer of a shared informer asked for the same index
                continue
            if known is not None:
                raise ValueError(f"the informer already has a different index named {name!r}")
            self._indexers[name] = func
            self._indices[name] = {}
            for key, obj in self._cache.items():  # a cache filled before (a test's static informer)
                self._index(key, None, obj, (name,))

    @property
    def started(self) -> bool:
        return self._started

    def start(self) -> None:
        if self._started:
            raise RuntimeError("an informer starts once")
        self._started = True
        name = f"informer {self.resource.group_resource}"
        self._task = start_task(self._run(), name=name)
        if self.resync_seconds > 0:
            self._resync_task = start_task(self._resync(), name=f"{name} resync")

    async def stop(self) -> None:
        """Stop watching and wait until the informer's tasks have ended. The cache stays readable."""
        await stop_task(self._resync_task)
        await stop_task(self._task)
        self._resync_task = self._task = None
        self._settled.set()
        if self._holding:  # the cache stays readable; only the sharing ends
            self._holding = False
            for obj in self._cache.values():
                SHARED.release(obj)

    async def __aenter__(self) -> Informer:
        self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    @property
    def has_synced(self) -> bool:
        """True once the first list is in the cache (and handlers have been told about it)."""
        return self._synced

    async def wait_for_sync(self, timeout: float | None = None) -> None:
        """Wait for the first list. TimeoutError after ``timeout``; RuntimeError when the informer is not
        running or stops first."""
        if not self._started:
            raise RuntimeError("the informer has not been started")
        async with asyncio.timeout(timeout):
            await self._settled.wait()
        if not self._synced:
            raise RuntimeError("the informer stopped before its cache synced")

    # -- the cache (read-only objects) ----------------------------------------------------------------------
    def get(self, key: str) -> Obj | None:
        """The cached object for ``namespace/name`` (or ``name``), shared: do not mutate it."""
        return self._cache.get(key)

    def list(self, namespace: str | None = None) -> list[Obj]:
        """Every cached object, or those of one namespace; shared: do not mutate them."""
        if namespace is None:
            return list(self._cache.values())
        return self.by_index(NAMESPACE_INDEX, namespace)

    def by_index(self, name: str, value: str) -> builtins.list[Obj]:
        """The cached objects the index ``name`` puts under ``value`` (client-go's ByIndex); shared."""
        try:
            keys = self._indices[name].get(value)
        except KeyError:
            raise KeyError(f"the informer has no index named {name!r}") from None
        if not keys:
            return []
        cache = self._cache
        return [cache[key] for key in keys]

    def _index(self, key: str, old: Obj | None, new: Obj | None, names: Iterable[str] | None = None) -> None:
        """Move ``key`` from the index values of ``old`` to those of ``new`` (either may be None), in every index
        or those ``names``."""
        indexers = self._indexers
        for name in names if names is not None else indexers:
            func = indexers[name]
            before = tuple(func(old)) if old is not None else ()
            after = tuple(func(new)) if new is not None else ()
            if before == after:
                continue
            index = self._indices[name]
            for value in before:
                keys = index.get(value)
                if keys is not None:
                    keys.pop(key, None)
                    if not keys:
                        del index[value]
            for value in after:
                index.setdefault(value, {})[key] = None

    def _reindex(self) -> None:
        self._indices = {name: {} for name in self._indexers}
        for key, obj in self._cache.items():
            self._index(key, None, obj)

    def keys(self) -> builtins.list[str]:
        return list(self._cache)

    def __len__(self) -> int:
        return len(self._cache)

    @property
    def resource_version(self) -> str:
        """The last resourceVersion the informer saw (from a list, an event or a bookmark)."""
        return self._resource_version

    # -- list and watch -------------------------------------------------------------------------------------
    async def _run(self) -> None:
        relist = True
        while True:
            try:
                if relist or not self._resource_version:
                    await self._relist()
                    relist = False
                    self._backoff.reset()
                if await self._watch():
                    self._backoff.reset()
                    continue  # the watch ended (timeout, server shutting down): resume at once
                delay = self._backoff.next()  # ended without a single event: do not spin on a closing server
                self._log.debug("watch ended without events; backing off", seconds=round(delay, 3))
            except StatusError as exc:
                if exc.code == 410:
                    relist = True
                    self._log.info("resource version expired; relisting", message=exc.message)
                else:
                    self._log.warning("list/watch failed", code=exc.code, reason=exc.reason, message=exc.message)
                delay = self._backoff.next()
            except Exception as exc:  # noqa: BLE001 - a broken connection or a bug: log, back off, retry
                self._log.warning("list/watch failed", error=f"{type(exc).__name__}: {exc}")
                delay = self._backoff.next()
            await self._sleep(delay)

    async def _relist(self) -> None:
        listing = await self.client.list_all(self.resource, self.namespace, label_selector=self.label_selector,
                                             field_selector=self.field_selector, page_size=self.page_size)
        fresh = {object_key(obj): self._keep(obj) for obj in listing.get("items") or []}
        async with self._lock:
            old, self._cache = self._cache, fresh
            self._reindex()
            if self._holding:
                for obj in old.values():
                    SHARED.release(obj)
            self._resource_version = str((listing.get("metadata") or {}).get("resourceVersion") or "")
            for key, obj in fresh.items():
                previous = old.get(key)
                if previous is None:
                    await self._notify(self._on_add, obj)
                elif _resource_version(previous) != _resource_version(obj):
                    await self._notify(self._on_update, previous, obj)
            for key, obj in old.items():
                if key not in fresh:
                    await self._notify(self._on_delete, obj)
        if not self._synced:
            self._synced = True
            self._settled.set()
            self._log.debug("synced", objects=len(fresh), resource_version=self._resource_version)

    async def _watch(self) -> bool:
        """Watch from the last resourceVersion until the watch ends; True when it delivered any event."""
        delivered = False
        timeout = int(self.watch_timeout_seconds * (1 + random.random()))
        async with self.client.watch(self.resource, self.namespace, resource_version=self._resource_version,
                                     timeout_seconds=timeout, allow_bookmarks=True,
                                     label_selector=self.label_selector,
                                     field_selector=self.field_selector, decode=LINES.decode) as events:
            async for kind, obj in events:
                delivered = True
                await self._apply(kind, obj)
        return delivered

    async def _apply(self, kind: str, obj: Obj) -> None:
        version = _resource_version(obj)
        if kind == "BOOKMARK":
            if version:
                self._resource_version = version
            return
        key = object_key(obj)
        async with self._lock:
            if kind in ("ADDED", "MODIFIED"):
                obj = self._keep(obj)
                previous = self._cache.get(key)
                self._cache[key] = obj
                self._index(key, previous, obj)
                if previous is not None and self._holding:
                    SHARED.release(previous)
                self._resource_version = version or self._resource_version
                if previous is None:
                    await self._notify(self._on_add, obj)
                else:
                    await self._notify(self._on_update, previous, obj)
            elif kind == "DELETED":
                previous = self._cache.pop(key, None)
                if previous is not None:
                    self._index(key, previous, None)
                if previous is not None and self._holding:
                    SHARED.release(previous)
                if self.transform is not None:
                    obj = self.transform(obj)
                self._resource_version = version or self._resource_version
                await self._notify(self._on_delete, obj)
            else:
                self._log.warning("unknown watch event type", type=kind)

    def _keep(self, obj: Obj) -> Obj:
        """What the cache keeps of ``obj``: the shared copy, or what the transform makes of it."""
        return self.transform(obj) if self.transform is not None else SHARED.hold(obj)

    async def _resync(self) -> None:
        await self._settled.wait()
        while True:
            await self._sleep(self.resync_seconds)
            async with self._lock:
                for obj in list(self._cache.values()):
                    await self._notify(self._on_update, obj, obj)

    async def _notify(self, handlers: builtins.list[Any], *args: Obj) -> None:
        for handler in handlers:
            try:
                result = handler(*args)
                if result is not None and inspect.isawaitable(result):
                    await result
            except Exception:  # noqa: BLE001 - one handler's bug must not stop the informer
                self._log.exception("informer handler failed", handler=getattr(handler, "__qualname__",
                                                                              repr(handler)))
