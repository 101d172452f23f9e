"""Concurrent writers, watchers and compaction: every watcher's history is ordered, gap-free and faithful."""

from __future__ import annotations

from dataclasses import replace

from minik.store import Store, StoreSettings
from minik.testing import watch_history


async def test_watch_histories_match_acknowledged_writes_while_compaction_runs(store_settings: StoreSettings
                                                                                ) -> None:
    settings = replace(store_settings, compaction_min_revisions=300, compaction_window_seconds=0,
                       compaction_batch_rows=20, event_window=100, watcher_buffer=100_000)
    store = await Store.open(settings)
    try:
        report = await watch_history.run(store, writers=8, operations_per_writer=150, keys=30, watchers=6)
    finally:
        await store.close()
    assert report.ok, report.errors
    assert report.acknowledged > 800 and report.events_checked > 1000
    assert report.compacted_to > 0, "compaction never ran"
    assert report.resumed > 0


async def test_a_watch_resumed_after_restart_replays_exactly_the_writes_after_its_revision(
        store_settings: StoreSettings) -> None:
    store = await Store.open(replace(store_settings, event_window=10))
    try:
        report = await watch_history.run(store, writers=4, operations_per_writer=50, keys=10, watchers=2,
                                         compaction=False)
        assert report.ok, report.errors
        middle = store.revision // 2
        before = [e async for e in _drain(store, middle)]
    finally:
        await store.close()
    store = await Store.open(store_settings)
    try:
        after = [e async for e in _drain(store, middle)]
    finally:
        await store.close()
    assert [(e.revision, e.type, e.key, e.raw) for e in after] == [(e.revision, e.type, e.key, e.raw) for e in before]
    assert len(after) == before[-1].revision - middle


async def _drain(store: Store, after: int):  # type: ignore[no-untyped-def]
    watcher = store.watch("/core/", after)
    try:
        while True:
            batch = await watcher.next_batch(1000, timeout=0.05)
            if not batch:
                return
            for event in batch:
                yield event
    finally:
        await watcher.aclose()
