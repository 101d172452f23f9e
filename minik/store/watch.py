"""Watch fan-out: every committed event goes, in revision order, to each watcher whose prefix it matches.

A watcher is registered (subscribed) in the same synchronous step that fixes its backlog, so nothing committed
in between is lost: the backlog (from memory, or replayed lazily from SQLite) covers revisions up to the
subscription point and the live queue everything after it. A watcher that falls ``watcher_buffer`` events behind
is closed rather than allowed to slow the writers; its client re-watches from the last revision it saw.

A watcher's consumer may also give it a sink: while the consumer is parked waiting for events (so nothing is queued,
replayed or in its hands), the hub passes a commit's events straight to the sink, which writes them out in the
same step (a socket write) instead of waking the consumer's task. A sink that cannot take them (its socket's buffer
is full, or it is closing) says so and the events are queued as before, so the order never changes. The events of
one commit are matched once per distinct prefix and handed to every watcher of that prefix as the same list, so a
sink can encode them once for all of those watchers.

A watcher may have a trigger: one field's value it wants (a kubelet's watch of its node's pods, by spec.nodeName).
The hub reads that value of each event's object, before and after the write, once per commit, and hands such a
watcher only the events where it is the wanted one; its history (replay, backlog) still comes whole, for its
selector to filter.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from minik.store.records import Event

log = structlog.get_logger("minik.store.watch")

#: takes a commit's events for one watcher, in order, and delivers them at once; False when it cannot (nothing of
#: them was delivered then, and they are queued for the consumer instead)
Sink = Callable[[list[Event]], bool]

#: an object's value of one indexed field, from its JSON (a pod's spec.nodeName)
TriggerValue = Callable[[bytes], str]


@dataclass(frozen=True)
class Trigger:
    """A watcher that can only ever want objects whose ``value`` (say, their spec.nodeName) is ``wanted``, before
    or after a write: the hub hands it only the events where one of the two is, as Kubernetes' watch cache does
    with its trigger functions, instead of every event of its prefix for its selector to drop."""

    value: TriggerValue
    wanted: str


class Watcher:
    """An async iterator of events under one key prefix, after a revision.

    Iteration ends when the watcher is closed: by ``close()``, by the store shutting down, or because it fell too
    far behind (``overflowed`` is then True and the client must re-watch).
    """

    def __init__(self, hub: WatchHub, prefix: str, start_revision: int, buffer: int,
                 replay: AsyncIterator[list[Event]] | None, trigger: Trigger | None = None) -> None:
        self._hub = hub
        self.prefix = prefix
        self.trigger = trigger
        self.start_revision = start_revision
        #: the revision of the newest event handed out so far
        self.revision = start_revision
        self.overflowed = False
        self._buffer = buffer
        self._replay = replay
        self._replayed: deque[Event] = deque()
        self._queue: deque[Event] = deque()
        self._wakeup = asyncio.Event()
        self._closed = False
        self._poked = False
        #: the consumer is waiting in next_batch with nothing queued: events may go to the sink directly
        self._parked = False
        self._sink: Sink | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def replaying(self) -> bool:
        return self._replay is not None or bool(self._replayed)

    def _push(self, event: Event) -> None:
        if self._closed:
            return
        if len(self._queue) >= self._buffer:
            self.overflowed = True
            self.close()
            return
        self._queue.append(event)
        self._wakeup.set()

    def set_sink(self, sink: Sink | None) -> None:
        """Deliver events through ``sink`` whenever the consumer is parked in ``next_batch`` (see the module's
        docstring); the consumer still gets every event the sink refused, in order."""
        self._sink = sink

    def _deliver(self, events: list[Event]) -> None:
        """A commit's events under this watcher's prefix: to the sink when it may and can take them, else queued."""
        if self._closed:
            return
        # parked and nothing queued: everything before these events is out (a woken consumer that has not run yet
        # may still have refused events queued, which must go first)
        if self._parked and not self._queue and self._sink is not None:
            try:
                delivered = self._sink(events)
            except Exception as exc:  # noqa: BLE001 - a sink's bug must not fail the commit; the consumer gets them
                log.error("watch sink failed", error=repr(exc))
                self._sink = None
                delivered = False
            if delivered:
                self.revision = events[-1].revision
                return
        for event in events:
            self._push(event)

    def poke(self) -> None:
        """Make a waiting ``next_batch`` return [] now (a timer's way to get the consumer's attention)."""
        self._poked = True
        self._wakeup.set()

    def close(self) -> None:
        """Stop the watcher; iteration ends after nothing more (queued events are dropped)."""
        if not self._closed:
            self._closed = True
            self._queue.clear()
            self._replayed.clear()
            self._wakeup.set()
            self._hub.unsubscribe(self)

    async def aclose(self) -> None:
        """Close, and release the SQLite cursor of an unfinished replay."""
        self.close()
        await self._end_replay()

    async def _end_replay(self) -> None:
        replay, self._replay = self._replay, None
        if replay is not None:
            aclose = getattr(replay, "aclose", None)
            if aclose is not None:
                await aclose()
        self._hub.replay_finished(self)

    def __aiter__(self) -> Watcher:
        return self

    async def __anext__(self) -> Event:
        batch = await self.next_batch()
        if len(batch) != 1:  # next_batch(max_events=1) returns exactly one event or raises
            raise AssertionError("next_batch returned more than asked")
        return batch[0]

    async def next_batch(self, max_events: int = 1, timeout: float | None = None) -> list[Event]:
        """Up to ``max_events`` events in revision order, waiting for at least one. Returns [] when ``timeout``
        passes first or when ``poke()`` was called; raises StopAsyncIteration once the watcher is closed.
        Long-lived consumers should prefer one timer calling ``poke()`` or ``close()`` over a timeout per call."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            if self._closed:
                await self._end_replay()
                raise StopAsyncIteration
            if not self._replayed and self._replay is not None:
                try:
                    chunk = await anext(self._replay)
                except StopAsyncIteration:
                    await self._end_replay()
                else:
                    self._replayed.extend(chunk)
                continue
            source = self._replayed if self._replayed else self._queue
            if source:
                n = len(source)
                if n <= max_events and source is self._queue:
                    batch = list(source)
                    source.clear()
                else:
                    batch = [source.popleft() for _ in range(min(max_events, n))]
                self.revision = batch[-1].revision
                return batch
            if self._poked:
                self._poked = False
                return []
            self._wakeup.clear()
            self._parked = True
            try:
                if deadline is None:
                    await self._wakeup.wait()
                else:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        return []
                    # asyncio.timeout, unlike wait_for, does not wrap the wait in a new task at every wake-up
                    try:
                        async with asyncio.timeout(remaining):
                            await self._wakeup.wait()
                    except TimeoutError:
                        return []
            finally:
                self._parked = False


@dataclass
class _Group:
    """The watchers of one prefix (insertion-ordered dicts used as sets): those that take every event, and those
    with a trigger, by the trigger's value function and then the value they want."""

    every: dict[Watcher, None] = field(default_factory=dict)
    indexed: dict[TriggerValue, dict[str, dict[Watcher, None]]] = field(default_factory=dict)

    def add(self, watcher: Watcher) -> None:
        trigger = watcher.trigger
        if trigger is None:
            self.every[watcher] = None
        else:
            self.indexed.setdefault(trigger.value, {}).setdefault(trigger.wanted, {})[watcher] = None

    def remove(self, watcher: Watcher) -> None:
        trigger = watcher.trigger
        if trigger is None:
            self.every.pop(watcher, None)
            return
        by_value = self.indexed.get(trigger.value)
        if by_value is None:
            return
        wanting = by_value.get(trigger.wanted)
        if wanting is not None:
            wanting.pop(watcher, None)
            if not wanting:
                del by_value[trigger.wanted]
        if not by_value:
            del self.indexed[trigger.value]

    def __bool__(self) -> bool:
        return bool(self.every or self.indexed)


class WatchHub:
    """Keeps the watchers and fans each committed event out to them."""

    def __init__(self, buffer: int) -> None:
        self._buffer = buffer
        self._watchers: set[Watcher] = set()
        #: the watchers by prefix: a commit is matched once per prefix
        self._by_prefix: dict[str, _Group] = {}
        self._replaying: set[Watcher] = set()

    def __len__(self) -> int:
        return len(self._watchers)

    def subscribe(self, prefix: str, start_revision: int, backlog: list[Event],
                  replay: AsyncIterator[list[Event]] | None = None, trigger: Trigger | None = None) -> Watcher:
        """Register a watcher. Its history comes first from ``replay`` (read lazily from SQLite), then from
        ``backlog`` (already in memory), then live (with a ``trigger``, only the live events it can want). Call
        it in the synchronous step that fixed the backlog."""
        watcher = Watcher(self, prefix, start_revision, self._buffer, replay, trigger)
        watcher._queue.extend(backlog)
        if replay is not None:
            self._replaying.add(watcher)
        self._watchers.add(watcher)
        group = self._by_prefix.get(prefix)
        if group is None:
            group = self._by_prefix[prefix] = _Group()
        group.add(watcher)
        return watcher

    def unsubscribe(self, watcher: Watcher) -> None:
        self._watchers.discard(watcher)
        self._replaying.discard(watcher)
        group = self._by_prefix.get(watcher.prefix)
        if group is not None:
            group.remove(watcher)
            if not group:
                del self._by_prefix[watcher.prefix]

    def replay_finished(self, watcher: Watcher) -> None:
        self._replaying.discard(watcher)

    def replay_floor(self) -> int | None:
        """The oldest revision a watcher may still read from SQLite: compaction must not pass it."""
        if not self._replaying:
            return None
        return min(w.revision for w in self._replaying)

    def publish(self, events: list[Event]) -> None:
        """Hand a commit's events, in revision order, to every watcher whose prefix they match (to a watcher with
        a trigger, only those whose object wants its value before or after the write)."""
        for prefix, group in list(self._by_prefix.items()):
            matched = [event for event in events if event.key.startswith(prefix)]
            if not matched:
                continue
            for watcher in list(group.every):
                watcher._deliver(matched)
            for value, by_wanted in list(group.indexed.items()):
                for wanted, events_wanted in _by_trigger_value(matched, value, by_wanted).items():
                    for watcher in list(by_wanted.get(wanted, ())):
                        watcher._deliver(events_wanted)

    def close_all(self) -> None:
        for watcher in list(self._watchers):
            watcher.close()


def _by_trigger_value(events: list[Event], value: TriggerValue, wanted: dict[str, Any]) -> dict[str, list[Event]]:
    """The events each wanted value gets: those whose object has it before or after the write, in order. An event
    whose value cannot be read goes to every one of them (their selectors decide): the commit is already made, and
    a bug in a value function must not keep its events from anyone who may want them."""
    out: dict[str, list[Event]] = {}
    for event in events:
        try:
            values = {value(event.raw)}
            if event.prev_raw is not None:
                values.add(value(event.prev_raw))
        except Exception as exc:  # noqa: BLE001 - see above
            log.error("watch trigger failed", key=event.key, error=repr(exc))
            values = set(wanted)
        for one in values:
            if one in wanted:
                out.setdefault(one, []).append(event)
    return out
