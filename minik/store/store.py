"""The store: current state in memory, history in a revision log (SQLite), writes group-committed.

``Store`` is the facade the rest of minik uses; its parts, each in a module of its own:

- the backend (backend.py; sqlite_log.py): the revision log, below a narrow interface in kine's shape;
- the current state (current.py): every key's newest record, so that gets and lists never wait on the log;
- the event window (window.py): the newest events, so that a watch from a recent revision starts from memory;
- the watch hub (watch.py): fans each commit's events out to the watchers;
- the committer (committer.py): takes the writes in batches, checks each against the state (compare-and-swap on
  the revision), has the backend commit them in one transaction, and only then applies them, tells the watchers
  in revision order and acknowledges; it paces the next batch by how long telling the watchers took;
- the compactor (compactor.py): drops history no reader may still need;
- reads at an older revision (at_revision.py): a paged list's later pages, from memory and the log.
"""

from __future__ import annotations

import builtins
import time
from typing import Any

import structlog

from minik.store.at_revision import list_at
from minik.store.backend import Backend, Loaded
from minik.store.committer import Committer
from minik.store.compactor import Compactor
from minik.store.current import CurrentState
from minik.store.errors import Compacted, FutureRevision, StoreClosed
from minik.store.records import EventType, ListResult, Predicate, Record
from minik.store.settings import StoreSettings
from minik.store.sqlite_log import SqliteLog
from minik.store.watch import Trigger, Watcher, WatchHub
from minik.store.window import EventWindow
from minik.store.writer import Writer

__all__ = ["COMPACTION_CATCH_UP_PAUSE_SECONDS", "ListResult", "Predicate", "Store"]

log = structlog.get_logger("minik.store")

#: the pause between compaction passes while history is behind its target (writers get the lock in between);
#: given to the compactor when the store opens
COMPACTION_CATCH_UP_PAUSE_SECONDS = 0.5


class Store:
    """A versioned key-value store of Kubernetes objects (dicts) under string keys."""

    def __init__(self, settings: StoreSettings, backend: Backend, loaded: Loaded) -> None:
        self.settings = settings
        self._backend = backend
        self._current = CurrentState(loaded)
        self._window = EventWindow(settings.event_window, loaded.revision)
        self._hub = WatchHub(settings.watcher_buffer)
        self._committer = Committer(settings, backend, self._current, self._window, self._hub)
        self._compactor = Compactor(settings, backend, self._current, self._hub, loaded.compact_revision)
        self._closing = False

    # -- life cycle ----------------------------------------------------------------------------------------
    @classmethod
    async def open(cls, settings: StoreSettings, *, compactor: bool = True) -> Store:
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
        store._committer.start()
        if compactor:
            store._compactor.start(store.compact, COMPACTION_CATCH_UP_PAUSE_SECONDS)
        return store

    async def close(self) -> None:
        """Stop taking writes, commit those already queued, end every watch, close the files."""
        if self._closing:
            return
        self._closing = True
        self._compactor.halt()
        await self._committer.drain()  # new writes get StoreClosed; those queued are committed
        await self._compactor.stop()
        self._hub.close_all()
        await self._backend.close()
        log.info("store closed", revision=self._current.revision)

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
        return self._current.revision

    @property
    def compact_revision(self) -> int:
        """Reads and watches from revisions below this one get Compacted."""
        return self._compactor.compact_revision

    def get(self, key: str) -> Record | None:
        return self._current.records.get(key)

    @property
    def watcher_count(self) -> int:
        """How many watchers are open."""
        return len(self._hub)

    def changed_at(self, type_prefix: str) -> int:
        """A revision that changes whenever anything under ``type_prefix`` ("/group/plural/", as the registry makes
        keys) is written: the newest such write since the store opened, else the revision it opened at. What is
        worked out from a type's objects stays valid while this stays the same."""
        return self._current.changed_at(type_prefix)

    def count(self, prefix: str) -> int:
        return self._current.count(prefix)

    async def wait_for_revision(self, revision: int, timeout: float = 3.0) -> None:
        """Wait until the store has reached ``revision``; FutureRevision after ``timeout`` seconds."""
        await self._current.wait_for(revision, timeout)

    def _check_revision(self, revision: int) -> None:
        if revision < self._compactor.compact_revision:
            raise Compacted(revision, self._compactor.compact_revision)
        if revision > self._current.revision:
            raise FutureRevision(revision, self._current.revision)

    async def list(self, prefix: str, *, revision: int | None = None, after: str | None = None, limit: int = 0,
                   predicate: Predicate | None = None) -> ListResult:
        """The objects under ``prefix`` (which must end in '/'), in key order, after key ``after``.

        With ``revision``, the list is exactly the state at that revision (Compacted if it is gone); without, the
        current state. ``limit`` > 0 caps the items; ``predicate`` filters before the cap counts.
        """
        if not prefix.endswith("/"):
            raise ValueError(f"a list prefix must end in '/': {prefix!r}")
        if revision is None or revision == self._current.revision:
            return self._current.list_range(prefix, after, limit, predicate)
        self._check_revision(revision)
        with self._compactor.pinned(revision):
            return await list_at(self._current, self._backend, prefix, revision, after, limit, predicate)

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
        if self._window.holds(after):
            return self._hub.subscribe(prefix, after, self._window.since(prefix, after), trigger=trigger)
        replay = self._backend.events(prefix, after, self._current.revision)
        return self._hub.subscribe(prefix, after, [], replay, trigger=trigger)

    def snapshot_and_watch(self, prefix: str, trigger: Trigger | None = None
                           ) -> tuple[builtins.list[Record], Watcher]:
        """The current objects under ``prefix`` and a watcher for every change after them, taken atomically."""
        result = self._current.list_range(prefix, None, 0, None)
        return result.items, self.watch(prefix, result.revision, trigger)

    # -- writes --------------------------------------------------------------------------------------------
    async def create(self, key: str, obj: dict[str, Any]) -> Record:
        """Store a new object under ``key``; KeyExists if one is there. ``obj`` gets its resourceVersion set."""
        return await self._committer.submit(EventType.ADDED, key, obj, None, False)

    async def update(self, key: str, obj: dict[str, Any], expected_revision: int | None = None, *,
                     changed: bool = False) -> Record:
        """Replace the object under ``key``. With ``expected_revision``, only if the stored object is still at
        that revision (Conflict otherwise). An update that changes nothing returns the stored record as it is;
        ``changed`` (with ``expected_revision``) says the caller has already compared ``obj`` with the object at
        that revision and found it differs, so the store does not decode it to compare again."""
        if changed and expected_revision is None:
            raise ValueError("changed=True needs the expected_revision it was compared at")
        return await self._committer.submit(EventType.MODIFIED, key, obj, expected_revision, changed)

    async def delete(self, key: str, expected_revision: int | None = None) -> Record:
        """Remove the object under ``key``; returns its last state, carrying the deletion's revision."""
        return await self._committer.submit(EventType.DELETED, key, None, expected_revision, False)

    # -- compaction ----------------------------------------------------------------------------------------
    async def compaction_target(self) -> int:
        """The newest revision history may be compacted to now: older than the window, at least
        ``compaction_min_revisions`` behind, and behind every reader still using older revisions."""
        return await self._compactor.target()

    async def compact(self, target: int | None = None, deadline_seconds: float = 1.0) -> int:
        """Drop history up to ``target`` (default: ``compaction_target()``) in small transactions, for at most
        about ``deadline_seconds``. Returns the compact revision reached; a later call carries on."""
        return await self._compactor.compact(target, deadline_seconds)
