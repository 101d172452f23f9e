"""Watch streams: newline-delimited JSON events (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR).

Selectors are applied per event with the object before and after it, as Kubernetes' watch cache does: an object
that starts matching arrives as ADDED, one that stops matching as DELETED. An expired starting revision is an
HTTP 200 with one ERROR event carrying a 410 Status.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

from minik.api.errors import StatusError
from minik.api.registry import ResourceType
from minik.apiserver.lists import FieldSets, ListOptions, ObjectPredicate, object_predicate
from minik.apiserver.rest import parse_resource_version
from minik.apiserver.storeerrors import too_large_resource_version, too_old_resource_version
from minik.store import Compacted, Event, EventType, FutureRevision, Record, Store, Trigger, Watcher

DEFAULT_TIMEOUT_SECONDS = 1800
BOOKMARK_INTERVAL_SECONDS = 30.0
MAX_EVENTS_PER_WRITE = 500

_TYPES = {EventType.ADDED: b"ADDED", EventType.MODIFIED: b"MODIFIED", EventType.DELETED: b"DELETED"}


def event_line(kind: bytes, raw: bytes) -> bytes:
    return b'{"type":"' + kind + b'","object":' + raw + b"}\n"


def error_line(error: StatusError) -> bytes:
    return event_line(b"ERROR", orjson.dumps(error.to_status()))


def _with_revision(raw: bytes, revision: int) -> bytes:
    obj: dict[str, Any] = orjson.loads(raw)
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
    return orjson.dumps(obj)


class _SharedDecodes:
    """The objects of the events being encoded for watchers with selectors, decoded once for all of them.

    The store hands a commit's events to every watcher of a prefix as one list, so while encode_batch is called
    with the same list, an event's JSON decoded for one watcher's selector serves the next: a hundred watches
    selecting pods by label cost one decode of each pod event, not a hundred (watches by spec.nodeName get only
    their node's events in the first place: the store's triggers). The selectors only read what they are given,
    and keep the field set of each object kept here in ``field_sets`` for the next selector. Both are emptied when
    another list comes, and objects are kept only up to ``BUDGET`` bytes of JSON: the rest are decoded, and their
    fields worked out, for each watcher, and nothing holds them after."""

    BUDGET = 1024 * 1024

    def __init__(self) -> None:
        self.events: list[Event] | None = None
        #: id(raw) -> (raw, its object); the raw bytes are held so that their id stays theirs
        self.objects: dict[int, tuple[bytes, dict[str, Any]]] = {}
        self.field_sets: FieldSets = {}
        self.kept_bytes = 0

    def use(self, events: list[Event]) -> None:
        if events is not self.events:
            self.events = events
            self.objects.clear()
            self.field_sets.clear()
            self.kept_bytes = 0

    def decode(self, raw: bytes) -> dict[str, Any]:
        entry = self.objects.get(id(raw))
        if entry is not None and entry[0] is raw:
            return entry[1]
        obj: dict[str, Any] = orjson.loads(raw)
        if self.kept_bytes + len(raw) <= self.BUDGET:
            self.objects[id(raw)] = (raw, obj)
            self.field_sets[id(obj)] = (obj, None)
            self.kept_bytes += len(raw)
        return obj


_shared = _SharedDecodes()


def translate(event: Event, predicate: ObjectPredicate | None) -> bytes | None:
    """The line a watcher with ``predicate`` gets for ``event``, or None when the event is not for it."""
    kind = _TYPES[event.type]
    if predicate is None:
        line = event.encoded
        if line is None:
            line = event.encoded = event_line(kind, event.raw)
        return line
    decode = _shared.decode
    now = predicate(decode(event.raw))
    if event.type is EventType.ADDED:
        return event_line(kind, event.raw) if now else None
    if event.type is EventType.DELETED:
        return event_line(kind, event.raw) if now else None
    before = predicate(decode(event.prev_raw)) if event.prev_raw is not None else now
    if now and before:
        return event_line(b"MODIFIED", event.raw)
    if now:
        return event_line(b"ADDED", event.raw)
    if before:
        assert event.prev_raw is not None
        return event_line(b"DELETED", _with_revision(event.prev_raw, event.revision))
    return None


def encode_batch(events: list[Event], predicate: ObjectPredicate | None) -> bytes:
    """The lines of ``events`` for a watcher with ``predicate`` (b"" when none is for it). Without a predicate, the
    bytes of the list the store hands to every watcher of a prefix are made once for all of them."""
    global _last_batch
    if predicate is None:
        if len(events) == 1:
            return translate(events[0], None) or b""
        last = _last_batch
        if last is not None and last[0] is events:
            return last[1]
        body = b"".join([translate(e, None) or b"" for e in events])
        _last_batch = (events, body)
        return body
    _shared.use(events)
    return b"".join([line for line in (translate(e, predicate) for e in events) if line is not None])


#: the last multi-event batch encoded without a predicate (the store passes one list to every watcher of a prefix)
_last_batch: tuple[list[Event], bytes] | None = None


class WatchStream:
    """Opens the store watch (errors surface before the response starts) and then streams it."""

    def __init__(self, store: Store, resource: ResourceType, namespace: str | None, options: ListOptions,
                 bookmark_interval: float = BOOKMARK_INTERVAL_SECONDS) -> None:
        self.store = store
        self.resource = resource
        self.prefix = resource.prefix(namespace)
        self.options = options
        #: for the events, whose objects every watch's selector tests (see _SharedDecodes)
        self.predicate = object_predicate(options, resource, field_sets=_shared.field_sets)
        #: for the objects listed at the start, each decoded for this watch alone
        self.list_predicate = object_predicate(options, resource)
        strategy = resource.strategy
        wanted = options.field_selector.exact(strategy.trigger_field) if strategy.trigger_field else None
        self.trigger = Trigger(strategy.trigger_value, wanted) if wanted is not None else None
        self.bookmark_interval = bookmark_interval
        self.watcher: Watcher | None = None
        self.initial: list[Record] = []
        self.error: StatusError | None = None

    async def open(self) -> None:
        """Start watching. A bad starting revision becomes an ERROR event, as Kubernetes sends it."""
        options = self.options
        wanted = parse_resource_version(options.resource_version, "resourceVersion")
        initial_events = options.send_initial_events
        if initial_events is None:
            initial_events = not wanted
        try:
            if initial_events:
                if wanted:
                    await self.store.wait_for_revision(wanted)
                self.initial, self.watcher = self.store.snapshot_and_watch(self.prefix, self.trigger)
            else:
                assert wanted is not None
                await self.store.wait_for_revision(wanted)
                self.watcher = self.store.watch(self.prefix, wanted, self.trigger)
        except Compacted as exc:
            self.error = too_old_resource_version(exc)
        except FutureRevision as exc:
            self.error = too_large_resource_version(exc)

    def attach(self, write: Callable[[bytes], bool]) -> None:
        """Let ``write`` (a transport's synchronous chunk writer) take live events while ``lines()`` waits."""
        if self.watcher is None:
            return
        predicate = self.predicate

        def sink(events: list[Event]) -> bool:
            body = encode_batch(events, predicate)
            return write(body) if body else True

        self.watcher.set_sink(sink)

    def _bookmark(self, revision: int, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return event_line(b"BOOKMARK", orjson.dumps({"kind": self.resource.kind,
                                                     "apiVersion": self.resource.api_version, "metadata": meta}))

    async def lines(self) -> AsyncIterator[bytes]:
        """The body, chunk by chunk; ends at timeoutSeconds, when the watcher closes, or on cancellation."""
        if self.error is not None:
            yield error_line(self.error)
            return
        watcher = self.watcher
        assert watcher is not None
        loop = asyncio.get_running_loop()
        seconds = self.options.timeout_seconds
        # one timer ends the stream at its deadline and one asks for bookmarks: no timeout per wait
        deadline = loop.call_later(seconds if seconds else DEFAULT_TIMEOUT_SECONDS, watcher.close)
        bookmarks = self.options.allow_bookmarks
        ticker: asyncio.TimerHandle | None = None

        def tick() -> None:
            nonlocal ticker
            watcher.poke()
            ticker = loop.call_later(self.bookmark_interval, tick)

        if bookmarks:
            ticker = loop.call_later(self.bookmark_interval, tick)
        try:
            if self.initial:
                chunk = []
                for record in self.initial:
                    if self.list_predicate is None or self.list_predicate(record.object()):
                        chunk.append(event_line(b"ADDED", record.raw))
                    if len(chunk) >= MAX_EVENTS_PER_WRITE:
                        yield b"".join(chunk)
                        chunk = []
                if chunk:
                    yield b"".join(chunk)
            if self.options.send_initial_events and bookmarks:
                yield self._bookmark(watcher.revision, initial_end=True)
            while True:
                try:
                    batch = await watcher.next_batch(MAX_EVENTS_PER_WRITE)
                except StopAsyncIteration:
                    return
                if not batch:  # the ticker: nothing is queued, so everything up to now has been delivered
                    if bookmarks and not watcher.replaying:
                        yield self._bookmark(max(watcher.revision, self.store.revision))
                    continue
                body = encode_batch(batch, self.predicate)
                if body:
                    yield body
        finally:
            deadline.cancel()
            if ticker is not None:
                ticker.cancel()
            await watcher.aclose()

    async def close(self) -> None:
        if self.watcher is not None:
            await self.watcher.aclose()
