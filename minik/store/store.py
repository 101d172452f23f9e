"""The store: current state in memory, history in a revision log (the backend: SQLite), writes group-committed.

Reads of the current state (get, list) come from an in-memory sorted map that is updated only after a commit, so
they never wait on the log; reads at an older revision (a paged list's later pages) and watches that start before
the in-memory event window read the log. Every write goes through one writer task: it takes queued writes in a
batch, checks each against the state (compare-and-swap on the revision), has the backend commit them in one
transaction, and only then updates the state, notifies watchers in revision order and acknowledges.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections import Counter, deque
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import structlog

from minik.aio import stop_task
from minik.jsonbytes import dumps_kept
from minik.store.backend import Backend, Loaded, Row
from minik.store.errors import (Compacted, Conflict, FutureRevision, KeyExists, KeyNotFound, ObjectTooLarge,
                                StoreClosed, StoreError)
from minik.store.keys import prefix_end, type_prefix
from minik.store.records import Event, EventType, Record
from minik.store.settings import StoreSettings
from minik.store.sqlite_log import SqliteLog
from minik.store.state import State
from minik.store.watch import Trigger, Watcher, WatchHub
from minik.store.writer import Writer

log = structlog.get_logger("minik.store")

Predicate = Callable[[Record], bool]

#: the pause between compaction passes while history is behind its target (writers get the lock in between)
COMPACTION_CATCH_UP_PAUSE_SECONDS = 0.5

#: a commit whose fan-out took at least this long paces the next one (``StoreSettings.publish_share``); below it
#: (in-process watchers, a few connections) the pause would cost more latency than it saves
PACED_PUBLISH_SECONDS = 0.0005


@dataclass(frozen=True)
class ListResult:
    items: list[Record]
    revision: int
    #: whether keys remain in the range after the last item (a continue token is due)
    more: bool
    #: how many keys remain after the last item, when no predicate filtered the list
    remaining: int | None


@dataclass
class _Write:
    type: EventType
    key: str
    obj: dict[str, Any] | None
    expected_revision: int | None
    future: asyncio.Future[Record]
    #: the writer compared ``obj`` with the object at ``expected_revision`` and found it differs
    changed: bool = False


def _set_revision(obj: dict[str, Any], revision: int) -> None:
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)


class Store:
    """A versioned key-value store of Kubernetes objects (dicts) under string keys."""

    def __init__(self, settings: StoreSettings, backend: Backend, loaded: Loaded) -> None:
        self.settings = settings
        self._backend = backend
        self._state = State()
        for record in loaded.records:
            self._state[record.key] = record
        #: the revision of each deleted key's deletion marker until compaction drops it: a re-create chains to it
        #: (its prev_rev), so compaction drops the marker with the rows the window replaced
        self._tombstones: dict[str, int] = loaded.tombstones
        self._revision = loaded.revision
        #: the revision of the newest write under each type prefix ("/group/plural/") since the store opened
        self._type_revisions: dict[str, int] = {}
        self._opened_revision = loaded.revision
        self._compact_revision = loaded.compact_revision
        self._events: deque[Event] = deque(maxlen=settings.event_window)
        #: every event after this revision is in ``_events``
        self._events_floor = loaded.revision
        self._hub = WatchHub(settings.watcher_buffer)
        self._queue: asyncio.Queue[_Write | None] = asyncio.Queue()
        self._revision_changed = asyncio.Event()
        self._pins: Counter[int] = Counter()
        self._closing = False
        self._writer_task: asyncio.Task[None] | None = None
        #: how long telling the watchers of the last commit took, and the pause it earns per second of it
        self._published_seconds = 0.0
        share = min(max(settings.publish_share, 0.05), 1.0)
        self._publish_pause = 1.0 / share - 1.0
        self._compactor_task: asyncio.Task[None] | None = None

    # -- life cycle ----------------------------------------------------------------------------------------
    @classmethod
    async def open(cls, settings: StoreSettings, *, compactor: bool = True) -> "Store":
        """Open (or create) the store file, load the current state, and start the writer and compactor."""
        backend = await SqliteLog.open(settings)
        try:
            started = time.perf_counter()
            loaded = await backend.load()
            store = cls(settings, backend, loaded)
        except BaseException:
            await backend.close()
            raise
        log.info("store loaded", path=str(settings.path), objects=len(loaded.records), revision=loaded.revision,
                 compact_revision=loaded.compact_revision, seconds=round(time.perf_counter() - started, 3))
        store._writer_task = asyncio.create_task(store._run_writer(), name="minik-store-writer")
        if compactor:
            store._compactor_task = asyncio.create_task(store._run_compactor(), name="minik-store-compactor")
        return store

    async def close(self) -> None:
        """Stop taking writes, commit those already queued, end every watch, close the files."""
        if self._closing:
            return
        self._closing = True
        await self._queue.put(None)
        if self._writer_task is not None:
            await self._writer_task
        await stop_task(self._compactor_task)
        self._hub.close_all()
        await self._backend.close()
        log.info("store closed", revision=self._revision)

    def close_watches(self) -> None:
        """End every open watch (their clients re-watch); used first when a server shuts down."""
        self._hub.close_all()

    @property
    def _db(self) -> Writer:
        """The SQLite backend's write connection (tests look at its process)."""
        assert isinstance(self._backend, SqliteLog)
        return self._backend.writer

    # -- reads ---------------------------------------------------------------------------------------------
    @property
    def revision(self) -> int:
        """The revision of the newest committed write."""
        return self._revision

    @property
    def compact_revision(self) -> int:
        """Reads and watches from revisions below this one get Compacted."""
        return self._compact_revision

    def get(self, key: str) -> Record | None:
        result: Record | None = self._state.get(key)
        return result

    @property
    def watcher_count(self) -> int:
        """How many watchers are open."""
        return len(self._hub)

    def changed_at(self, type_prefix: str) -> int:
        """A revision that changes whenever anything under ``type_prefix`` ("/group/plural/", as the registry makes
        keys) is written: the newest such write since the store opened, else the revision it opened at. What is
        worked out from a type's objects stays valid while this stays the same."""
        return self._type_revisions.get(type_prefix, self._opened_revision)

    def count(self, prefix: str) -> int:
        end = prefix_end(prefix)
        return int(self._state.bisect_left(end) - self._state.bisect_left(prefix))

    async def wait_for_revision(self, revision: int, timeout: float = 3.0) -> None:
        """Wait until the store has reached ``revision``; FutureRevision after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self._revision < revision:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise FutureRevision(revision, self._revision)
            changed = self._revision_changed
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def _check_revision(self, revision: int) -> None:
        if revision < self._compact_revision:
            raise Compacted(revision, self._compact_revision)
        if revision > self._revision:
            raise FutureRevision(revision, self._revision)

    async def list(self, prefix: str, *, revision: int | None = None, after: str | None = None, limit: int = 0,
                   predicate: Predicate | None = None) -> ListResult:
        """The objects under ``prefix`` (which must end in '/'), in key order, after key ``after``.

        With ``revision``, the list is exactly the state at that revision (Compacted if it is gone); without, the
        current state. ``limit`` > 0 caps the items; ``predicate`` filters before the cap counts.
        """
        if not prefix.endswith("/"):
            raise ValueError(f"a list prefix must end in '/': {prefix!r}")
        if revision is None or revision == self._revision:
            return self._list_current(prefix, after, limit, predicate)
        self._check_revision(revision)
        with self._pinned(revision):
            return await self._list_at(prefix, revision, after, limit, predicate)

    def _list_current(self, prefix: str, after: str | None, limit: int, predicate: Predicate | None
                      ) -> ListResult:
        end = prefix_end(prefix)
        keys = self._state.irange(minimum=after if after is not None else prefix, maximum=end,
                                  inclusive=(after is None, False))
        items: list[Record] = []
        more = False
        last: str | None = None
        state = self._state
        for key in keys:
            if limit and len(items) >= limit:
                more = True
                break
            record = state[key]
            last = key
            if predicate is None or predicate(record):
                items.append(record)
        remaining = None
        if predicate is None:
            remaining = (self._state.bisect_left(end) - self._state.bisect_right(last)) if more and last else 0
        return ListResult(items, self._revision, more, remaining)

    async def _list_at(self, prefix: str, revision: int, after: str | None, limit: int,
                       predicate: Predicate | None) -> ListResult:
        """The state at an older ``revision`` (the later pages of a paged list): an object whose newest write is
        no newer than ``revision`` is served from memory as it is; only the keys written since (changed, created,
        deleted) are read from the log, in batches, so a page costs about what it would at the current revision."""
        end = prefix_end(prefix)
        state = self._state
        items: list[Record] = []
        last = after  # every key up to this one has been seen
        while True:
            # one more than a full page tells whether more remain; the keys are taken afresh after each read of the
            # log, since writes may change the state meanwhile
            want = min((limit - len(items) + 1) if limit else 1024, 1024)
            low = last if last is not None else prefix
            current = itertools.islice(state.irange(minimum=low, maximum=end, inclusive=(last is None, False)), want)
            gone = heapq.nsmallest(want, (key for key, rev in self._tombstones.items()
                                          if rev > revision and low <= key < end and key != last and key not in state))
            batch = [key for key, _ in itertools.groupby(heapq.merge(current, gone))][:want]
            if not batch:
                return ListResult(items, revision, False, None)
            last = batch[-1]
            for record in await self._records_at(batch, revision):
                if limit and len(items) >= limit:
                    return ListResult(items, revision, True, None)
                if predicate is None or predicate(record):
                    items.append(record)

    async def _records_at(self, keys: list[str], revision: int) -> list[Record]:
        """The records of ``keys`` (in key order) as they were at ``revision``, leaving out those absent then."""
        state = self._state
        found: dict[str, Record | None] = {}
        older: list[str] = []
        for key in keys:
            record = state.get(key)
            if record is not None and record.mod_revision <= revision:
                found[key] = record
            else:
                older.append(key)
        if older:
            for record in await self._backend.records_at(older, revision):
                found[record.key] = record
        return [record for key in keys if (record := found.get(key)) is not None]

    @contextmanager
    def _pinned(self, revision: int) -> Iterator[None]:
        """Keep compaction from passing ``revision`` while a reader needs it."""
        self._pins[revision] += 1
        try:
            yield
        finally:
            self._pins[revision] -= 1
            if not self._pins[revision]:
                del self._pins[revision]

    # -- watch ---------------------------------------------------------------------------------------------
    def watch(self, prefix: str, after: int, trigger: Trigger | None = None) -> Watcher:
        """Every event under ``prefix`` with a revision greater than ``after``, then live events, in order; with
        a ``trigger``, the live events only where the object has the wanted value before or after the write.

        Raises Compacted when ``after`` is older than the compacted history and FutureRevision when it is newer
        than the store (callers wait with ``wait_for_revision`` first when they want to).
        """
        if self._closing:
            raise StoreClosed("the store is closing")
        self._check_revision(after)
        if after >= self._events_floor:
            backlog: list[Event] = []
            for event in reversed(self._events):
                if event.revision <= after:
                    break
                if event.key.startswith(prefix):
                    backlog.append(event)
            backlog.reverse()
            return self._hub.subscribe(prefix, after, backlog, trigger=trigger)
        replay = self._backend.events(prefix, after, self._revision)
        return self._hub.subscribe(prefix, after, [], replay, trigger=trigger)

    def snapshot_and_watch(self, prefix: str, trigger: Trigger | None = None) -> tuple[list[Record], Watcher]:
        """The current objects under ``prefix`` and a watcher for every change after them, taken atomically."""
        result = self._list_current(prefix, None, 0, None)
        return result.items, self.watch(prefix, result.revision, trigger)

    # -- writes --------------------------------------------------------------------------------------------
    async def create(self, key: str, obj: dict[str, Any]) -> Record:
        """Store a new object under ``key``; KeyExists if one is there. ``obj`` gets its resourceVersion set."""
        return await self._submit(EventType.ADDED, key, obj, None)

    async def update(self, key: str, obj: dict[str, Any], expected_revision: int | None = None, *,
                     changed: bool = False) -> Record:
        """Replace the object under ``key``. With ``expected_revision``, only if the stored object is still at
        that revision (Conflict otherwise). An update that changes nothing returns the stored record as it is;
        ``changed`` (with ``expected_revision``) says the caller has already compared ``obj`` with the object at
        that revision and found it differs, so the store does not decode it to compare again."""
        if changed and expected_revision is None:
            raise ValueError("changed=True needs the expected_revision it was compared at")
        return await self._submit(EventType.MODIFIED, key, obj, expected_revision, changed)

    async def delete(self, key: str, expected_revision: int | None = None) -> Record:
        """Remove the object under ``key``; returns its last state, carrying the deletion's revision."""
        return await self._submit(EventType.DELETED, key, None, expected_revision)

    async def _submit(self, typ: EventType, key: str, obj: dict[str, Any] | None, expected: int | None,
                      changed: bool = False) -> Record:
        if self._closing:
            raise StoreClosed("the store is closing")
        future: asyncio.Future[Record] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Write(typ, key, obj, expected, future, changed))
        return await future

    async def _run_writer(self) -> None:
        stopping = False
        while not stopping:
            first = await self._queue.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < self.settings.max_batch and not self._queue.empty():
                item = self._queue.get_nowait()
                if item is None:
                    stopping = True
                    break
                batch.append(item)
            self._published_seconds = 0.0
            try:
                await self._commit(batch)
            except Exception as exc:  # the writer must outlive any one batch
                log.error("store commit failed", error=repr(exc), writes=len(batch))
                for write in batch:
                    if not write.future.done():
                        write.future.set_exception(StoreError(f"commit failed: {exc}"))
            if self._published_seconds >= PACED_PUBLISH_SECONDS and self._publish_pause and not stopping:
                await asyncio.sleep(self._published_seconds * self._publish_pause)

    async def _commit(self, batch: list[_Write]) -> None:
        overlay: dict[str, Record | None] = {}
        rows: list[Row] = []
        events: list[Event] = []
        outcomes: list[tuple[_Write, Record | StoreError]] = []
        revision = self._revision
        now = time.time()
        tombstones = dict(self._tombstones) if self._tombstones else {}
        for write in batch:
            key = write.key
            current = overlay[key] if key in overlay else self._state.get(key)
            try:
                if write.type is EventType.ADDED:
                    if current is not None:
                        raise KeyExists(key)
                    assert write.obj is not None
                    revision += 1
                    _set_revision(write.obj, revision)
                    raw = dumps_kept(write.obj)
                    if len(raw) > self.settings.max_object_bytes:
                        revision -= 1
                        raise ObjectTooLarge(key, len(raw), self.settings.max_object_bytes)
                    record = Record(key, raw, revision, revision)
                    rows.append((revision, key, int(EventType.ADDED), revision, tombstones.get(key, 0), now, raw))
                    events.append(Event(EventType.ADDED, key, revision, raw, None))
                else:
                    if current is None:
                        raise KeyNotFound(key)
                    if write.expected_revision is not None and write.expected_revision != current.mod_revision:
                        raise Conflict(key, write.expected_revision, current.mod_revision)
                    if write.type is EventType.MODIFIED:
                        assert write.obj is not None
                        _set_revision(write.obj, current.mod_revision)
                        if not write.changed and write.obj == current.object():
                            outcomes.append((write, current))  # a no-op keeps the revision and tells no one
                            continue
                        revision += 1
                        _set_revision(write.obj, revision)
                        raw = dumps_kept(write.obj)
                        if len(raw) > self.settings.max_object_bytes:
                            revision -= 1
                            raise ObjectTooLarge(key, len(raw), self.settings.max_object_bytes)
                        record = Record(key, raw, revision, current.create_revision)
                    else:
                        last = current.object()
                        revision += 1
                        _set_revision(last, revision)
                        raw = dumps_kept(last)
                        record = Record(key, raw, revision, current.create_revision)
                    rows.append((revision, key, int(write.type), current.create_revision, current.mod_revision, now,
                                 raw))
                    events.append(Event(write.type, key, revision, raw, current.raw))
                if write.type is EventType.DELETED:
                    overlay[key] = None
                    tombstones[key] = revision
                else:
                    overlay[key] = record
                outcomes.append((write, record))
            except StoreError as exc:
                outcomes.append((write, exc))
        if rows:
            await self._backend.append(rows)
            self._apply(overlay, events, revision)
            self._tombstones = tombstones
        for write, outcome in outcomes:
            if write.future.done():
                continue
            if isinstance(outcome, StoreError):
                write.future.set_exception(outcome)
            else:
                write.future.set_result(outcome)

    def _apply(self, overlay: dict[str, Record | None], events: list[Event], revision: int) -> None:
        """Make a committed batch visible: state, the event window, watchers, then waiters on the revision."""
        for key, record in overlay.items():
            if record is None:
                self._state.pop(key)
            else:
                self._state[key] = record
        window = self._events
        for event in events:
            if len(window) == window.maxlen:
                self._events_floor = window[0].revision
            window.append(event)
        self._revision = revision
        types = self._type_revisions
        for event in events:
            types[type_prefix(event.key)] = event.revision
        began = time.perf_counter()
        self._hub.publish(events)
        self._published_seconds = time.perf_counter() - began
        changed, self._revision_changed = self._revision_changed, asyncio.Event()
        changed.set()

    # -- compaction ----------------------------------------------------------------------------------------
    async def _run_compactor(self) -> None:
        """A pass every interval; while a pass ends short of its target (history grows faster than one pass of
        about a second drops it, as in a large cluster under churn), the next one follows after a short pause."""
        interval = self.settings.compaction_interval_seconds
        delay = interval
        while True:
            await asyncio.sleep(delay)
            try:
                target = await self.compaction_target()
                reached = await self.compact(target)
                delay = interval if reached >= target else min(interval, COMPACTION_CATCH_UP_PAUSE_SECONDS)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a failed pass is retried at the next interval
                log.warning("compaction failed; will retry", error=repr(exc))
                delay = interval

    async def compaction_target(self) -> int:
        """The newest revision history may be compacted to now: older than the window, at least
        ``compaction_min_revisions`` behind, and behind every reader still using older revisions."""
        cutoff = time.time() - self.settings.compaction_window_seconds
        target = min(await self._backend.revision_before(cutoff),
                     self._revision - self.settings.compaction_min_revisions)
        floor = self._hub.replay_floor()
        if floor is not None:
            target = min(target, floor)
        if self._pins:
            target = min(target, min(self._pins))
        return target

    async def compact(self, target: int | None = None, deadline_seconds: float = 1.0) -> int:
        """Drop history up to ``target`` (default: ``compaction_target()``) in small transactions, for at most
        about ``deadline_seconds``. Returns the compact revision reached; a later call carries on."""
        if target is None:
            target = await self.compaction_target()
        target = min(target, self._revision)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + deadline_seconds
        step = max(1, self.settings.compaction_batch_rows)
        while self._compact_revision < target and loop.time() < deadline and not self._closing:
            low = self._compact_revision
            high = min(target, low + step)
            floor = self._hub.replay_floor()
            if floor is not None:
                high = min(high, floor)
            if self._pins:
                high = min(high, min(self._pins))
            if high <= low:
                break
            await self._backend.compact(low, high)
            self._compact_revision = high
            self._tombstones = {k: r for k, r in self._tombstones.items() if r > high}
            await asyncio.sleep(0)
        if self._compact_revision >= target:
            await self._backend.compacted()
        return self._compact_revision
