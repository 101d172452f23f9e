"""A watch-history checker for the store, after etcd's robustness tests.

Concurrent writers create, compare-and-swap update and delete a small key space while compaction runs; several
watchers follow from different starting points, and some stop and resume from the last revision they saw. Then
every watcher's history is checked against what the writers were acknowledged:

- ordered and unique: revisions strictly increase;
- gap-free and complete: exactly the acknowledged writes under the watcher's prefix in its revision range;
- faithful: each event's type, key and object are those of the acknowledged write at that revision;
- resumable: a watcher that stops and resumes from the last revision it saw has the same gap-free history;
- the revision is one sequence: acknowledged writes hold every revision from the first to the last once.

Used by the test suite at a small size and by scripts/bench_watch_history.py at 100,000 operations.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

from minik.store import Compacted, Conflict, Event, EventType, KeyExists, KeyNotFound, Store


@dataclass(frozen=True)
class Write:
    type: EventType
    key: str
    revision: int
    raw: bytes


@dataclass
class Report:
    operations: int = 0
    acknowledged: int = 0
    rejected: int = 0
    watchers: int = 0
    events_checked: int = 0
    resumed: int = 0
    compacted_to: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass
class _Seen:
    prefix: str
    start: int
    events: list[Event] = field(default_factory=list)
    expired: bool = False


async def _writer(store: Store, rng: random.Random, keys: list[str], operations: int, acked: list[Write],
                  report: Report) -> None:
    for i in range(operations):
        key = rng.choice(keys)
        record = store.get(key)
        report.operations += 1
        try:
            if record is None:
                obj = {"metadata": {"name": key.rsplit("/", 1)[1]}, "data": {"n": str(i)}}
                result = await store.create(key, obj)
                acked.append(Write(EventType.ADDED, key, result.mod_revision, result.raw))
            elif rng.random() < 0.2:
                result = await store.delete(key, expected_revision=record.mod_revision)
                acked.append(Write(EventType.DELETED, key, result.mod_revision, result.raw))
            else:
                obj = record.object()
                obj["data"] = {"n": str(i), "w": str(id(acked) % 97)}
                result = await store.update(key, obj, expected_revision=record.mod_revision)
                if result.mod_revision != record.mod_revision:
                    acked.append(Write(EventType.MODIFIED, key, result.mod_revision, result.raw))
            report.acknowledged += 1
        except (KeyExists, KeyNotFound, Conflict):
            report.rejected += 1
        if i % 16 == 0:
            await asyncio.sleep(0)


async def _follow(store: Store, seen: _Seen, until: asyncio.Event, stop_after: int | None) -> None:
    watcher = store.watch(seen.prefix, seen.start)
    try:
        while True:
            batch = await watcher.next_batch(256, timeout=0.05)
            seen.events.extend(batch)
            if stop_after is not None and len(seen.events) >= stop_after:
                return
            if not batch and until.is_set() and not watcher.replaying:
                return
    except StopAsyncIteration:
        return
    finally:
        await watcher.aclose()


async def _follow_and_resume(store: Store, seen: _Seen, until: asyncio.Event, stop_after: int | None,
                             pause: float, report: Report) -> None:
    """Follow; with ``stop_after``, stop after that many events, pause (so the in-memory window may move on and
    the resume has to read SQLite), and resume from the last revision seen into the same history."""
    await _follow(store, seen, until, stop_after)
    if stop_after is None or len(seen.events) < stop_after:
        return
    await asyncio.sleep(pause)
    resumed = _Seen(seen.prefix, seen.events[-1].revision)
    try:
        await _follow(store, resumed, until, None)
    except Compacted:
        seen.expired = True  # compaction passed it while it was away: the client would relist
        return
    seen.events.extend(resumed.events)
    report.resumed += 1


async def _compactor(store: Store, until: asyncio.Event, report: Report) -> None:
    while not until.is_set():
        await asyncio.sleep(0.01)
        report.compacted_to = await store.compact(deadline_seconds=0.05)


def check(acked: list[Write], seen: _Seen, label: str, report: Report) -> None:
    """Compare one watcher's events with the acknowledged writes."""
    revisions = [e.revision for e in seen.events]
    if any(b <= a for a, b in zip(revisions, revisions[1:])):
        report.errors.append(f"{label}: revisions not strictly increasing")
        return
    if revisions and revisions[0] <= seen.start:
        report.errors.append(f"{label}: event at {revisions[0]} not after start {seen.start}")
    last = revisions[-1] if revisions else seen.start
    expected = [w for w in acked if seen.start < w.revision <= last and w.key.startswith(seen.prefix)]
    if len(expected) != len(seen.events):
        report.errors.append(f"{label}: {len(seen.events)} events for {len(expected)} acknowledged writes in "
                             f"({seen.start}, {last}]")
        return
    for write, event in zip(expected, seen.events):
        if (write.revision, write.type, write.key, write.raw) != (event.revision, event.type, event.key, event.raw):
            report.errors.append(f"{label}: event at {event.revision} is {event.type.name} {event.key}, "
                                 f"acknowledged {write.type.name} {write.key} at {write.revision}")
            return
    report.events_checked += len(seen.events)


async def run(store: Store, *, writers: int = 8, operations_per_writer: int = 200, keys: int = 40,
              watchers: int = 4, seed: int = 1, compaction: bool = True, resume_pause: float = 0.01) -> Report:
    """Drive the store and check every watcher's history. The store should allow compaction of recent history
    (small compaction_min_revisions and compaction_window_seconds) for compaction to take part."""
    rng = random.Random(seed)
    report = Report()
    namespaces = ["ns1", "ns10", "ns2"]
    key_space = [f"/core/configmaps/{rng.choice(namespaces)}/k{i}" for i in range(keys)]
    prefixes = ["/core/configmaps/", "/core/configmaps/ns1/", "/core/configmaps/ns10/"]
    acked: list[Write] = []
    done = asyncio.Event()
    start_revision = store.revision
    seen: list[_Seen] = []
    followers: list[asyncio.Task[None]] = []
    for i in range(watchers):
        s = _Seen(prefixes[i % len(prefixes)], start_revision)
        seen.append(s)
        stop_after = 50 if i % 2 else None  # half of them stop early and are resumed later
        followers.append(asyncio.create_task(_follow_and_resume(store, s, done, stop_after, resume_pause, report),
                                             name=f"history-watch-{i}"))
    compactor = asyncio.create_task(_compactor(store, done, report), name="history-compactor") \
        if compaction else None
    write_tasks = [asyncio.create_task(_writer(store, random.Random(seed * 1000 + w), key_space,
                                               operations_per_writer, acked, report), name=f"history-writer-{w}")
                   for w in range(writers)]
    # a late watcher that joins mid-way, from the then-current revision
    await asyncio.sleep(0)
    late: _Seen | None = None
    try:
        await asyncio.gather(*write_tasks)
        late = _Seen("/core/configmaps/", store.revision)
        done.set()
        await asyncio.gather(*followers)
    finally:
        done.set()
        for task in [*write_tasks, *followers]:
            task.cancel()
        if compactor is not None:
            await asyncio.gather(compactor, return_exceptions=True)
        await asyncio.gather(*write_tasks, *followers, return_exceptions=True)
    acked.sort(key=lambda w: w.revision)
    revisions = [w.revision for w in acked]
    if revisions and revisions != list(range(start_revision + 1, start_revision + 1 + len(revisions))):
        report.errors.append("acknowledged revisions are not one gap-free sequence")
    report.watchers = len(seen)
    for i, s in enumerate(seen):
        if not s.expired:
            check(acked, s, f"watcher {i} ({s.prefix} from {s.start})", report)
    if late is not None:
        await _follow(store, late, done, None)
        check(acked, late, "late watcher", report)
        report.watchers += 1
    return report
