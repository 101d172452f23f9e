"""The scheduling queue (kube-scheduler's PriorityQueue): three places a pending pod can wait.

- active: a heap ordered by priority (higher first), then by when the pod entered the queue (older first);
  ``pop()`` hands out its head.
- backoff: pods whose last attempt failed wait 1 s, doubling with each attempt up to 10 s, then go back to
  active (checked every second, as kube-scheduler's flush).
- unschedulable: pods no node fitted wait here until an event that could make them fit (a node added or
  changed, a pod deleted, ...) moves them out, and at the latest after ``max_unschedulable_seconds``.

A pod is in at most one place. Single event loop, not thread-safe.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from dataclasses import dataclass, field

import structlog

from minik.aio import start_task, stop_task
from minik.aio.backoff import exponential
from minik.aio.clock import SYSTEM_CLOCK, Clock
from minik.scheduler.framework import PodInfo

log = structlog.get_logger("minik.scheduler")

#: events that move unschedulable pods, and the plugins whose rejection they can undo (None: any plugin)
NODE_ADD = "NodeAdd"
NODE_UPDATE = "NodeUpdate"
ASSIGNED_POD_ADD = "AssignedPodAdd"
ASSIGNED_POD_UPDATE = "AssignedPodUpdate"
ASSIGNED_POD_DELETE = "AssignedPodDelete"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
VOLUME_CHANGE = "VolumeChange"
EVENT_PLUGINS: dict[str, frozenset[str] | None] = {
    NODE_ADD: None,
    NODE_UPDATE: None,
    ASSIGNED_POD_ADD: frozenset({"InterPodAffinity", "PodTopologySpread"}),
    ASSIGNED_POD_UPDATE: frozenset({"InterPodAffinity", "PodTopologySpread"}),
    ASSIGNED_POD_DELETE: frozenset({"NodeResourcesFit", "NodePorts", "InterPodAffinity", "PodTopologySpread",
                                    "DefaultPreemption", "VolumeRestrictions"}),
    VOLUME_CHANGE: frozenset({"VolumeBinding", "VolumeRestrictions"}),
}


@dataclass(eq=False)
class QueuedPod:
    info: PodInfo
    timestamp: float
    """When the pod (re-)entered the queue: the age that orders equal priorities."""
    attempts: int = 0
    backoff_until: float = 0.0
    unschedulable_since: float = 0.0
    unschedulable_plugins: set[str] = field(default_factory=set)

    @property
    def key(self) -> str:
        return self.info.key


@dataclass(frozen=True)
class QueueSettings:
    initial_backoff_seconds: float = 1.0
    """The wait before a pod whose attempt failed is tried again; it doubles with each attempt."""
    max_backoff_seconds: float = 10.0
    """The longest such wait."""
    max_unschedulable_seconds: float = 60.0
    """The longest an unschedulable pod waits for an event before it is tried again anyway."""
    flush_interval_seconds: float = 1.0
    """How often backed-off and long-unschedulable pods are moved back to active."""


class SchedulingQueue:
    def __init__(self, settings: QueueSettings | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.settings = settings or QueueSettings()
        self._now = clock.monotonic  # intervals only: never the wall clock
        self._active: dict[str, QueuedPod] = {}
        self._heap: list[tuple[int, float, int, QueuedPod]] = []
        self._backoff: dict[str, QueuedPod] = {}
        self._unschedulable: dict[str, QueuedPod] = {}
        self._in_flight: dict[str, QueuedPod] = {}
        self._seq = itertools.count()
        self._ready = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._flusher = start_task(self._flush_forever(), name="scheduler queue flush")

    async def stop(self) -> None:
        self._closed = True
        self._ready.set()
        await stop_task(self._flusher)
        self._flusher = None

    # -- counts ---------------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._active) + len(self._backoff) + len(self._unschedulable)

    def __contains__(self, key: str) -> bool:
        return key in self._active or key in self._backoff or key in self._unschedulable

    def counts(self) -> dict[str, int]:
        return {"active": len(self._active), "backoff": len(self._backoff),
                "unschedulable": len(self._unschedulable)}

    def get(self, key: str) -> QueuedPod | None:
        return (self._active.get(key) or self._backoff.get(key) or self._unschedulable.get(key)
                or self._in_flight.get(key))

    # -- adding ---------------------------------------------------------------------------------------------------
    def _push_active(self, qp: QueuedPod) -> None:
        self._active[qp.key] = qp
        heapq.heappush(self._heap, (-qp.info.priority, qp.timestamp, next(self._seq), qp))
        self._ready.set()

    def add(self, info: PodInfo) -> None:
        """A new pending pod: straight to active."""
        if info.key in self or info.key in self._in_flight:
            self.update(info)
            return
        self._push_active(QueuedPod(info, self._now()))

    def update(self, info: PodInfo, retry: bool = True) -> None:
        """The pod changed: keep its place, but an unschedulable pod gets another try (it may fit now) unless
        ``retry`` is False (only its status changed: the scheduler's own writes, the nomination...)."""
        key = info.key
        if key in self._in_flight:
            self._in_flight[key].info = info
            return
        for place in (self._active, self._backoff):
            qp = place.get(key)
            if qp is not None:
                if place is self._active and qp.info.priority != info.priority:
                    del self._active[key]
                    qp.info = info
                    self._push_active(qp)
                else:
                    qp.info = info
                return
        if not retry and key in self._unschedulable:
            self._unschedulable[key].info = info
            return
        qp = self._unschedulable.pop(key, None)
        if qp is None:
            self.add(info)
            return
        qp.info = info
        self._requeue(qp)

    def delete(self, key: str) -> None:
        """The pod was deleted or bound: it leaves the queue (heap entries are skipped lazily)."""
        self._active.pop(key, None)
        self._backoff.pop(key, None)
        self._unschedulable.pop(key, None)
        self._in_flight.pop(key, None)

    def _requeue(self, qp: QueuedPod) -> None:
        """Back to active, or to backoff while its backoff lasts."""
        if qp.backoff_until > self._now():
            self._backoff[qp.key] = qp
        else:
            self._push_active(qp)

    def _backoff_duration(self, attempts: int) -> float:
        s = self.settings
        return exponential(s.initial_backoff_seconds, s.max_backoff_seconds, max(attempts - 1, 0))

    def done(self, qp: QueuedPod) -> None:
        """The pod's cycle ended and it is not coming back (scheduled, or gone)."""
        self._in_flight.pop(qp.key, None)

    def add_unschedulable(self, qp: QueuedPod, plugins: set[str]) -> None:
        """No node fitted: wait for an event that could help (or the periodic flush)."""
        if self._in_flight.pop(qp.key, None) is None:
            return  # deleted or bound while it was being scheduled
        now = self._now()
        qp.backoff_until = now + self._backoff_duration(qp.attempts)
        qp.unschedulable_since = now
        qp.unschedulable_plugins = plugins
        self._unschedulable[qp.key] = qp

    def add_backoff(self, qp: QueuedPod) -> None:
        """The attempt failed for another reason (an error, a failed bind): retry after the backoff."""
        self._in_flight.pop(qp.key, None)
        if qp.key in self:
            return
        qp.backoff_until = self._now() + self._backoff_duration(qp.attempts)
        self._backoff[qp.key] = qp

    def move_all(self, event: str) -> int:
        """An event that may make unschedulable pods fit: move those it could help. Returns how many moved."""
        plugins = EVENT_PLUGINS.get(event)
        moved = [qp for qp in self._unschedulable.values()
                 if plugins is None or not qp.unschedulable_plugins or qp.unschedulable_plugins & plugins]
        for qp in moved:
            del self._unschedulable[qp.key]
            self._requeue(qp)
        return len(moved)

    # -- taking ---------------------------------------------------------------------------------------------------
    def pop_nowait(self) -> QueuedPod | None:
        while self._heap:
            _, _, _, qp = heapq.heappop(self._heap)
            if self._active.get(qp.key) is qp:
                del self._active[qp.key]
                qp.attempts += 1
                self._in_flight[qp.key] = qp
                return qp
        self._ready.clear()
        return None

    async def pop(self) -> QueuedPod:
        """The head of the active queue, waiting for one. The pod is in flight until ``done``,
        ``add_unschedulable`` or ``add_backoff``."""
        while True:
            qp = self.pop_nowait()
            if qp is not None:
                return qp
            if self._closed:
                raise asyncio.CancelledError
            await self._ready.wait()

    # -- flushing -------------------------------------------------------------------------------------------------
    def flush(self) -> None:
        """Backoff pods whose time is up go to active; pods unschedulable for too long get another try."""
        now = self._now()
        for qp in [qp for qp in self._backoff.values() if qp.backoff_until <= now]:
            del self._backoff[qp.key]
            self._push_active(qp)
        limit = self.settings.max_unschedulable_seconds
        for qp in [qp for qp in self._unschedulable.values() if now - qp.unschedulable_since >= limit]:
            del self._unschedulable[qp.key]
            self._requeue(qp)

    async def _flush_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.flush_interval_seconds)
            self.flush()
