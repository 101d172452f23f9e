"""The store's backend: the revision log below the store, behind a narrow interface in kine's shape.

Above it, once for any backend: the current state in memory, the event window, the watch hub, group commit with
its checks of each write against the state, and publish pacing. Below it, what only the log can answer: making a
batch of writes durable, the state of keys at an older revision, the events after a revision that the window no
longer holds, which revisions are old enough to drop, and dropping them. ``SqliteLog`` (sqlite_log.py) is the
backend today.

The writes come down checked and numbered: minik has one writer, which compares each write with the state in
memory (create if absent, update and delete if the mod revision matches) and gives it the next revision before the
batch reaches the log, so the log only appends. A backend shared between servers (etcd) numbers the writes itself
and makes those comparisons in its transactions; that step moves below this line then.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from minik.store.records import Event, Record

#: one write as the log keeps it (kine's row): (revision, key, EventType, create revision, previous revision, unix
#: time, the object's JSON). The previous revision is that of the row the write replaces: for an update or a
#: delete the key's last write; for a create, the key's deletion marker while compaction has not dropped it, else
#: 0. A delete's JSON is the object's last state, carrying the deletion's revision.
Row = tuple[int, str, int, int, int, float, bytes]


@dataclass
class Loaded:
    """What the log holds when the store opens."""

    #: the newest record of every key that exists
    records: list[Record]
    #: the revision of each deleted key's deletion marker that compaction has not dropped yet
    tombstones: dict[str, int]
    #: the newest revision written
    revision: int
    #: reads and watches from revisions below this one are Compacted
    compact_revision: int


class Backend(Protocol):
    """What the store asks of the log it keeps its history in."""

    async def load(self) -> Loaded:
        """The current state, read once when the store opens."""

    async def append(self, rows: list[Row]) -> None:
        """Make ``rows`` (checked, on consecutive revisions after the newest) durable in one transaction, all or
        none; the store applies them only after this returns."""

    async def records_at(self, keys: list[str], revision: int) -> list[Record]:
        """The records of ``keys`` as they were at ``revision`` (not older than the compact revision), in any
        order; keys that did not exist then are left out."""

    def events(self, prefix: str, after: int, upto: int) -> AsyncIterator[list[Event]]:
        """The events under ``prefix`` after revision ``after`` up to ``upto``, in revision order and in chunks,
        read lazily (a watch's history from before the event window)."""

    async def revision_before(self, timestamp: float) -> int:
        """The newest revision written before ``timestamp`` (unix time); 0 if none."""

    async def compact(self, low: int, high: int) -> None:
        """Drop the history in revisions (``low``, ``high``], ``low`` being the compact revision, and make
        ``high`` the compact revision: every row a write up to ``high`` replaced, and every deletion marker up
        to it. The newest row of each key up to ``high`` stays, so reads from ``high`` on stay exact."""

    async def compacted(self) -> None:
        """Compaction has caught up with its target: a moment to give space back."""

    async def close(self) -> None:
        """Wait for nothing more; close the log."""
