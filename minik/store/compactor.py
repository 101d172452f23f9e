"""The compactor: drops the history no reader may still need, in small steps, so that writers never wait long.

History younger than ``compaction_window_seconds`` and the newest ``compaction_min_revisions`` revisions are always
kept, and compaction never passes a revision that a watch is still replaying from the backend or that a list at an
older revision is reading (a pin). The newest row of every key stays, so reads and watches from the compact
revision on are exact.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import structlog

from minik.aio import stop_task
from minik.store.backend import Backend
from minik.store.current import CurrentState
from minik.store.settings import StoreSettings
from minik.store.watch import WatchHub

log = structlog.get_logger("minik.store")


class Compactor:
    """Keeps the compact revision and moves it forward: a pass every interval, and as many as a caller asks for."""

    def __init__(self, settings: StoreSettings, backend: Backend, current: CurrentState, hub: WatchHub,
                 compact_revision: int) -> None:
        self._settings = settings
        self._backend = backend
        self._current = current
        self._hub = hub
        #: reads and watches from revisions below this one get Compacted
        self.compact_revision = compact_revision
        #: the revisions lists are reading now, each with how many of them
        self._pins: Counter[int] = Counter()
        self._halted = False
        self._task: asyncio.Task[None] | None = None

    @contextmanager
    def pinned(self, revision: int) -> Iterator[None]:
        """Keep compaction from passing ``revision`` while a reader needs it."""
        self._pins[revision] += 1
        try:
            yield
        finally:
            self._pins[revision] -= 1
            if not self._pins[revision]:
                del self._pins[revision]

    def _floor(self, revision: int) -> int:
        """``revision``, or the oldest one a replaying watch or a pinned read still needs if that is older."""
        floor = self._hub.replay_floor()
        if floor is not None:
            revision = min(revision, floor)
        if self._pins:
            revision = min(revision, min(self._pins))
        return revision

    async def target(self) -> int:
        """The newest revision history may be compacted to now: older than the window, at least
        ``compaction_min_revisions`` behind, and behind every reader still using older revisions."""
        cutoff = time.time() - self._settings.compaction_window_seconds
        before = await self._backend.revision_before(cutoff)
        return self._floor(min(before, self._current.revision - self._settings.compaction_min_revisions))

    async def compact(self, target: int | None, deadline_seconds: float) -> int:
        """Drop history up to ``target`` (None: ``target()``) in steps of ``compaction_batch_rows`` revisions, for
        at most about ``deadline_seconds``. Returns the compact revision reached; a later call carries on."""
        if target is None:
            target = await self.target()
        target = min(target, self._current.revision)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + deadline_seconds
        step = max(1, self._settings.compaction_batch_rows)
        while self.compact_revision < target and loop.time() < deadline and not self._halted:
            low = self.compact_revision
            high = self._floor(min(target, low + step))
            if high <= low:
                break
            await self._backend.compact(low, high)
            self.compact_revision = high
            self._current.drop_tombstones(high)
            await asyncio.sleep(0)
        if self.compact_revision >= target:
            await self._backend.compacted()
        return self.compact_revision

    def start(self, compact: Callable[[int], Awaitable[int]], catch_up_pause: float) -> None:
        """Run ``compact(target())`` every ``compaction_interval_seconds``; while a pass ends short of its target
        (history grows faster than one pass of about a second drops it, as in a large cluster under churn), the
        next one follows after ``catch_up_pause`` seconds. ``compact`` is the store's, so that a pass is the same
        whoever starts it."""
        self._task = asyncio.create_task(self._run(compact, catch_up_pause), name="minik-store-compactor")

    async def _run(self, compact: Callable[[int], Awaitable[int]], catch_up_pause: float) -> None:
        interval = self._settings.compaction_interval_seconds
        delay = interval
        while True:
            await asyncio.sleep(delay)
            try:
                target = await self.target()
                reached = await compact(target)
                delay = interval if reached >= target else min(interval, catch_up_pause)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a failed pass is retried at the next interval
                log.warning("compaction failed; will retry", error=repr(exc))
                delay = interval

    def halt(self) -> None:
        """Begin no more steps: the store is closing (its writer still commits what is queued)."""
        self._halted = True

    async def stop(self) -> None:
        """Halt, and end the periodic passes."""
        self.halt()
        await stop_task(self._task)
