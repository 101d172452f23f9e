"""The current state: every key's newest record in memory, the revision it is at, and the deletion markers the log
still keeps.

Gets, counts and lists of the current state, and the writer's checks of each write, read it without waiting on the
backend; only the committer changes it, after the backend has made a batch durable (``apply``).
"""

from __future__ import annotations

import asyncio

from minik.store.backend import Loaded
from minik.store.errors import FutureRevision
from minik.store.keys import prefix_end, type_prefix
from minik.store.records import Event, ListResult, Predicate, Record
from minik.store.state import State


class CurrentState:
    """The records and revision that reads of the current state see."""

    def __init__(self, loaded: Loaded) -> None:
        self.records = State()
        for record in loaded.records:
            self.records[record.key] = record
        #: the revision of the newest committed write
        self.revision = loaded.revision
        #: the revision the store opened at
        self.opened_revision = loaded.revision
        #: the revision of each deleted key's deletion marker until compaction drops it: a re-create chains to it
        #: (its previous revision), so compaction drops the marker with the rows the window replaced; and a read at
        #: an older revision finds here the keys deleted since
        self.tombstones = loaded.tombstones
        #: the revision of the newest write under each type prefix ("/group/plural/") since the store opened
        self._type_revisions: dict[str, int] = {}
        self._revision_changed = asyncio.Event()

    def count(self, prefix: str) -> int:
        end = prefix_end(prefix)
        return int(self.records.bisect_left(end) - self.records.bisect_left(prefix))

    def changed_at(self, type_prefix: str) -> int:
        """The newest write under ``type_prefix`` since the store opened, else the revision it opened at."""
        return self._type_revisions.get(type_prefix, self.opened_revision)

    def list_range(self, prefix: str, after: str | None, limit: int, predicate: Predicate | None) -> ListResult:
        """The records under ``prefix`` after key ``after``, at most ``limit`` (> 0) of them, those ``predicate``
        keeps."""
        end = prefix_end(prefix)
        state = self.records
        keys = state.irange(minimum=after if after is not None else prefix, maximum=end,
                            inclusive=(after is None, False))
        items: list[Record] = []
        more = False
        last: str | None = None
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
            remaining = (state.bisect_left(end) - state.bisect_right(last)) if more and last else 0
        return ListResult(items, self.revision, more, remaining)

    async def wait_for(self, revision: int, timeout: float) -> None:
        """Wait until the state has reached ``revision``; FutureRevision after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.revision < revision:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise FutureRevision(revision, self.revision)
            changed = self._revision_changed
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                pass

    def apply(self, changed: dict[str, Record | None], deleted: dict[str, int], events: list[Event],
              revision: int) -> None:
        """Make a committed batch current: the newest record of each key it wrote (None: deleted), its deletion
        markers, its revision. Its waiters are woken by ``notify``, once the watchers have its events."""
        state = self.records
        for key, record in changed.items():
            if record is None:
                state.pop(key)
            else:
                state[key] = record
        if deleted:
            self.tombstones.update(deleted)
        self.revision = revision
        types = self._type_revisions
        for event in events:
            types[type_prefix(event.key)] = event.revision

    def notify(self) -> None:
        """Wake everyone waiting for a revision the state has now reached (or not yet: they wait again)."""
        changed, self._revision_changed = self._revision_changed, asyncio.Event()
        changed.set()

    def drop_tombstones(self, upto: int) -> None:
        """Forget the deletion markers compaction has dropped, those at revisions up to ``upto``."""
        self.tombstones = {key: rev for key, rev in self.tombstones.items() if rev > upto}
