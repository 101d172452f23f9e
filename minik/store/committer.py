"""Group commit: every write goes through one task, which takes the queued writes in a batch, checks each against
the current state (compare-and-swap on the revision), gives each the next revision, has the backend make the batch
durable in one transaction, and only then applies it: the current state, the event window, the watchers (in
revision order), the waiters on a revision, and last the writers' acknowledgements.

Publish pacing: telling the watchers of a commit runs on the event loop. After a commit whose fan-out took P
seconds (``PACED_PUBLISH_SECONDS`` or more), the next batch is taken P * (1 / publish_share - 1) later, so that
telling watchers takes at most that share of the loop, and the writes that arrive meanwhile share one commit and
one fan-out (one write to a watcher's socket costs about the same for one event as for ten).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import structlog

from minik.jsonbytes import dumps_kept
from minik.store.backend import Backend, Row
from minik.store.current import CurrentState
from minik.store.errors import Conflict, KeyExists, KeyNotFound, ObjectTooLarge, StoreClosed, StoreError
from minik.store.records import Event, EventType, Record
from minik.store.settings import StoreSettings
from minik.store.watch import WatchHub
from minik.store.window import EventWindow

log = structlog.get_logger("minik.store")

#: a commit whose fan-out took at least this long paces the next one (``StoreSettings.publish_share``); below it
#: (in-process watchers, a few connections) the pause would cost more latency than it saves
PACED_PUBLISH_SECONDS = 0.0005


@dataclass
class _Write:
    type: EventType
    key: str
    obj: dict[str, Any] | None
    expected_revision: int | None
    future: asyncio.Future[Record]
    #: the writer compared ``obj`` with the object at ``expected_revision`` and found it differs
    changed: bool = False


@dataclass
class _Checked:
    """A batch checked against the current state: what to commit, and what to apply once it is committed."""

    #: the log's rows of the writes that passed, on consecutive revisions
    rows: list[Row]
    events: list[Event]
    #: the newest record of each key the batch writes (None: deleted)
    changed: dict[str, Record | None]
    #: the deletion markers the batch writes, by key
    deleted: dict[str, int]
    #: the revision of the batch's last write
    revision: int
    #: each write's record, or the error it gets
    outcomes: list[tuple[_Write, Record | StoreError]]


def _set_revision(obj: dict[str, Any], revision: int) -> None:
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)


class Committer:
    """The one writer: takes the queued writes in batches and commits them in order."""

    def __init__(self, settings: StoreSettings, backend: Backend, current: CurrentState, window: EventWindow,
                 hub: WatchHub) -> None:
        self._settings = settings
        self._backend = backend
        self._current = current
        self._window = window
        self._hub = hub
        self._queue: asyncio.Queue[_Write | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._draining = False
        #: how long telling the watchers of the last commit took, and the pause it earns per second of it
        self._published_seconds = 0.0
        share = min(max(settings.publish_share, 0.05), 1.0)
        self._publish_pause = 1.0 / share - 1.0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="minik-store-writer")

    async def submit(self, typ: EventType, key: str, obj: dict[str, Any] | None, expected: int | None,
                     changed: bool) -> Record:
        """Queue a write and wait for its record, once committed (or its StoreError)."""
        if self._draining:
            raise StoreClosed("the store is closing")
        future: asyncio.Future[Record] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Write(typ, key, obj, expected, future, changed))
        return await future

    async def drain(self) -> None:
        """Take no more writes; commit those queued so far, then stop."""
        self._draining = True
        await self._queue.put(None)
        if self._task is not None:
            await self._task

    async def _run(self) -> None:
        stopping = False
        while not stopping:
            first = await self._queue.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < self._settings.max_batch and not self._queue.empty():
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
        checked = self._check(batch)
        if checked.rows:
            await self._backend.append(checked.rows)
            self._publish(checked)
        for write, outcome in checked.outcomes:
            if write.future.done():
                continue
            if isinstance(outcome, StoreError):
                write.future.set_exception(outcome)
            else:
                write.future.set_result(outcome)

    def _check(self, batch: list[_Write]) -> _Checked:
        """Each write against the state as the writes before it in the batch leave it: a create only where no
        object is, an update or delete only of an object there (at ``expected_revision``, when given); an update
        that changes nothing keeps the revision and tells no one."""
        max_bytes = self._settings.max_object_bytes
        state = self._current.records
        tombstones = self._current.tombstones
        changed: dict[str, Record | None] = {}
        deleted: dict[str, int] = {}
        rows: list[Row] = []
        events: list[Event] = []
        outcomes: list[tuple[_Write, Record | StoreError]] = []
        revision = self._current.revision
        now = time.time()
        for write in batch:
            key = write.key
            current = changed[key] if key in changed else state.get(key)
            try:
                if write.type is EventType.ADDED:
                    if current is not None:
                        raise KeyExists(key)
                    assert write.obj is not None
                    revision += 1
                    _set_revision(write.obj, revision)
                    raw = dumps_kept(write.obj)
                    if len(raw) > max_bytes:
                        revision -= 1
                        raise ObjectTooLarge(key, len(raw), max_bytes)
                    record = Record(key, raw, revision, revision)
                    marker = deleted[key] if key in deleted else tombstones.get(key, 0)
                    rows.append((revision, key, int(EventType.ADDED), revision, marker, now, raw))
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
                        if len(raw) > max_bytes:
                            revision -= 1
                            raise ObjectTooLarge(key, len(raw), max_bytes)
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
                    changed[key] = None
                    deleted[key] = revision
                else:
                    changed[key] = record
                outcomes.append((write, record))
            except StoreError as exc:
                outcomes.append((write, exc))
        return _Checked(rows, events, changed, deleted, revision, outcomes)

    def _publish(self, checked: _Checked) -> None:
        """Make a committed batch visible: the state, the event window, the watchers, then the waiters on the
        revision; the fan-out's time paces the next batch."""
        self._current.apply(checked.changed, checked.deleted, checked.events, checked.revision)
        self._window.extend(checked.events)
        began = time.perf_counter()
        self._hub.publish(checked.events)
        self._published_seconds = time.perf_counter() - began
        self._current.notify()
