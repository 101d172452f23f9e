"""The store's contract: one global revision, compare-and-swap, prefix lists, no-op updates, restart."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import orjson
import pytest

from minik.store import Compacted, Conflict, EventType, KeyExists, KeyNotFound, Store, StoreSettings, Trigger, Watcher


def pod(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns1"}, "spec": dict(spec)}


async def test_every_write_gets_the_next_global_revision(store: Store) -> None:
    a = await store.create("/core/pods/ns1/a", pod("a"))
    b = await store.create("/core/configmaps/ns1/b", {"metadata": {"name": "b"}})
    c = await store.update("/core/pods/ns1/a", pod("a", x=1))
    assert (a.mod_revision, b.mod_revision, c.mod_revision) == (1, 2, 3)
    assert c.create_revision == 1
    assert c.object()["metadata"]["resourceVersion"] == "3"
    assert store.revision == 3


async def test_create_of_an_existing_key_is_refused(store: Store) -> None:
    await store.create("/core/pods/ns1/a", pod("a"))
    with pytest.raises(KeyExists):
        await store.create("/core/pods/ns1/a", pod("a"))
    assert store.revision == 1


async def test_update_with_stale_revision_is_a_conflict(store: Store) -> None:
    first = await store.create("/core/pods/ns1/a", pod("a"))
    await store.update("/core/pods/ns1/a", pod("a", x=1), expected_revision=first.mod_revision)
    with pytest.raises(Conflict):
        await store.update("/core/pods/ns1/a", pod("a", x=2), expected_revision=first.mod_revision)
    assert store.get("/core/pods/ns1/a").object()["spec"] == {"x": 1}


async def test_update_and_delete_of_a_missing_key_are_not_found(store: Store) -> None:
    with pytest.raises(KeyNotFound):
        await store.update("/core/pods/ns1/a", pod("a"))
    with pytest.raises(KeyNotFound):
        await store.delete("/core/pods/ns1/a")


async def test_a_noop_update_keeps_the_revision_and_emits_no_event(store: Store) -> None:
    first = await store.create("/core/pods/ns1/a", pod("a", x=1))
    watcher = store.watch("/core/pods/", first.mod_revision)
    same = await store.update("/core/pods/ns1/a", pod("a", x=1))
    assert same.mod_revision == first.mod_revision
    assert store.revision == first.mod_revision
    assert await watcher.next_batch(timeout=0.05) == []
    await watcher.aclose()


async def test_delete_with_a_stale_precondition_is_a_conflict(store: Store) -> None:
    first = await store.create("/core/pods/ns1/a", pod("a"))
    await store.update("/core/pods/ns1/a", pod("a", x=1))
    with pytest.raises(Conflict):
        await store.delete("/core/pods/ns1/a", expected_revision=first.mod_revision)
    gone = await store.delete("/core/pods/ns1/a")
    assert gone.mod_revision == 3
    assert gone.object()["metadata"]["resourceVersion"] == "3"
    assert store.get("/core/pods/ns1/a") is None


async def test_a_namespace_prefix_never_matches_a_longer_namespace(store: Store) -> None:
    await store.create("/core/pods/ns1/a", pod("a"))
    await store.create("/core/pods/ns10/b", pod("b"))
    listed = await store.list("/core/pods/ns1/")
    assert [r.key for r in listed.items] == ["/core/pods/ns1/a"]
    assert len((await store.list("/core/pods/")).items) == 2


async def test_pages_continue_at_the_revision_of_the_first_page(store: Store) -> None:
    for name in "abcde":
        await store.create(f"/core/pods/ns1/{name}", pod(name))
    first = await store.list("/core/pods/", limit=2)
    assert [r.key[-1] for r in first.items] == ["a", "b"]
    assert first.more and first.remaining == 3
    # writes after the first page must not show up in later pages
    await store.delete("/core/pods/ns1/c")
    await store.create("/core/pods/ns1/bb", pod("bb"))
    await store.update("/core/pods/ns1/d", pod("d", changed=True))
    second = await store.list("/core/pods/", revision=first.revision, after=first.items[-1].key, limit=2)
    assert [r.key[-1] for r in second.items] == ["c", "d"]
    assert second.items[1].object()["spec"] == {}
    third = await store.list("/core/pods/", revision=first.revision, after=second.items[-1].key, limit=2)
    assert [r.key[-1] for r in third.items] == ["e"] and not third.more


async def test_a_predicate_filters_before_the_limit_counts(store: Store) -> None:
    for i in range(6):
        await store.create(f"/core/pods/ns1/p{i}", pod(f"p{i}", even=i % 2 == 0))
    result = await store.list("/core/pods/", limit=2, predicate=lambda r: r.object()["spec"]["even"])
    assert [r.key[-2:] for r in result.items] == ["p0", "p2"]
    assert result.more


async def test_concurrent_writers_are_group_committed_in_one_revision_order(store: Store) -> None:
    records = await asyncio.gather(*(store.create(f"/core/pods/ns1/p{i}", pod(f"p{i}")) for i in range(200)))
    assert sorted(r.mod_revision for r in records) == list(range(1, 201))
    assert store.revision == 200


async def test_only_one_of_two_concurrent_swaps_from_one_revision_wins(store: Store) -> None:
    first = await store.create("/core/pods/ns1/a", pod("a"))
    results = await asyncio.gather(
        store.update("/core/pods/ns1/a", pod("a", w=1), expected_revision=first.mod_revision),
        store.update("/core/pods/ns1/a", pod("a", w=2), expected_revision=first.mod_revision),
        return_exceptions=True)
    assert sum(isinstance(r, Conflict) for r in results) == 1


async def test_restart_keeps_every_object_and_the_revision(store_settings: StoreSettings) -> None:
    s = await Store.open(store_settings)
    await s.create("/core/pods/ns1/a", pod("a"))
    b = await s.create("/core/pods/ns1/b", pod("b"))
    await s.delete("/core/pods/ns1/a")
    await s.close()
    s = await Store.open(store_settings)
    try:
        assert s.revision == 3
        assert s.get("/core/pods/ns1/a") is None
        assert s.get("/core/pods/ns1/b") == b
        watcher = s.watch("/core/pods/", 1)
        events = [await anext(watcher), await anext(watcher)]
        assert [(e.type, e.revision) for e in events] == [(EventType.ADDED, 2), (EventType.DELETED, 3)]
        await watcher.aclose()
    finally:
        await s.close()


async def test_compaction_keeps_current_state_and_expires_old_revisions(store_settings: StoreSettings) -> None:
    settings = replace(store_settings, compaction_min_revisions=2, compaction_window_seconds=0)
    s = await Store.open(settings)
    try:
        await s.create("/core/pods/ns1/a", pod("a"))
        for i in range(5):
            await s.update("/core/pods/ns1/a", pod("a", i=i))
        await s.create("/core/pods/ns1/b", pod("b"))
        await s.delete("/core/pods/ns1/b")
        await s.create("/core/pods/ns1/c", pod("c"))
        assert s.revision == 9
        reached = await s.compact()
        assert reached == 7
        with pytest.raises(Compacted):
            s.watch("/core/pods/", 3)
        with pytest.raises(Compacted):
            await s.list("/core/pods/", revision=5)
        at7 = await s.list("/core/pods/", revision=7)  # b was created at 7 and deleted at 8
        assert [r.key for r in at7.items] == ["/core/pods/ns1/a", "/core/pods/ns1/b"]
        assert at7.items[0].object()["spec"] == {"i": 4}
        watcher = s.watch("/core/pods/", 7)  # the deletion of b is still there for a watcher from 7
        events = [await anext(watcher), await anext(watcher)]
        assert [(e.type, e.key[-1]) for e in events] == [(EventType.DELETED, "b"), (EventType.ADDED, "c")]
        await watcher.aclose()
    finally:
        await s.close()
    s = await Store.open(settings)
    try:
        assert s.revision == 9 and s.compact_revision == 7
        assert sorted(r.key for r in (await s.list("/core/pods/")).items) == ["/core/pods/ns1/a", "/core/pods/ns1/c"]
    finally:
        await s.close()


async def test_a_watcher_that_falls_too_far_behind_is_closed_not_waited_for(store_settings: StoreSettings) -> None:
    s = await Store.open(replace(store_settings, watcher_buffer=10))
    try:
        slow = s.watch("/core/pods/", 0)
        for i in range(25):
            await s.create(f"/core/pods/ns1/p{i}", pod(f"p{i}"))  # the writer never waits for the slow watcher
        assert slow.closed and slow.overflowed
        with pytest.raises(StopAsyncIteration):
            await slow.next_batch()
        resumed = s.watch("/core/pods/", 0)  # its client re-watches from the last revision it saw
        assert len(await resumed.next_batch(100)) == 25
        await resumed.aclose()
    finally:
        await s.close()


async def test_close_commits_queued_writes_and_ends_watches(store_settings: StoreSettings) -> None:
    s = await Store.open(store_settings)
    watcher = s.watch("/core/pods/", 0)
    writes = [asyncio.ensure_future(s.create(f"/core/pods/ns1/p{i}", pod(f"p{i}"))) for i in range(50)]
    await asyncio.sleep(0)
    await s.close()
    assert all(w.done() and not w.exception() for w in writes)
    assert watcher.closed
    s = await Store.open(store_settings)
    try:
        assert s.count("/core/pods/") == 50
    finally:
        await s.close()


async def test_pages_at_an_older_revision_are_exactly_the_state_then_whatever_was_written_since(store: Store
                                                                                             ) -> None:
    import random

    rng = random.Random(9)
    names = [f"p{i:03d}" for i in range(120)]
    alive: dict[str, int] = {}
    for name in names[:90]:
        alive[name] = 0
        await store.create(f"/core/pods/ns1/{name}", pod(name, v=0))
    await store.delete("/core/pods/ns1/p005")  # deleted before the snapshot, recreated after it
    del alive["p005"]
    snapshot = (await store.list("/core/pods/", limit=1)).revision
    expected = dict(alive)
    for step in range(1, 200):  # updates, deletes, creates and re-creates after the snapshot
        name = rng.choice(names)
        if name in alive and rng.random() < 0.3:
            await store.delete(f"/core/pods/ns1/{name}")
            del alive[name]
        elif name in alive:
            await store.update(f"/core/pods/ns1/{name}", pod(name, v=step))
            alive[name] = step
        else:
            await store.create(f"/core/pods/ns1/{name}", pod(name, v=step))
            alive[name] = step
    for limit in (1, 7, 500, 0):
        seen: list[tuple[str, int]] = []
        after = None
        while True:
            page = await store.list("/core/pods/", revision=snapshot, after=after, limit=limit)
            seen += [(r.key.rsplit("/", 1)[1], r.object()["spec"]["v"]) for r in page.items]
            assert all(r.mod_revision <= snapshot for r in page.items)
            if not page.more:
                break
            after = page.items[-1].key
        assert seen == sorted(expected.items()), limit


async def test_a_long_list_at_an_older_revision_is_exact_while_writes_land_between_its_reads(store: Store) -> None:
    for i in range(2500):
        await store.create(f"/core/pods/ns1/p{i:04d}", pod(f"p{i:04d}", v=0))
    await store.update("/core/pods/ns1/p0000", pod("p0000", v=1))  # one key the list must read from the log
    snapshot = (await store.list("/core/pods/", limit=1)).revision
    await store.update("/core/pods/ns1/p0001", pod("p0001", v=2))
    listing = asyncio.create_task(store.list("/core/pods/", revision=snapshot))
    for i in range(2499, 1000, -3):  # deletes and re-creates ahead of the list's reads, and new keys
        await store.delete(f"/core/pods/ns1/p{i:04d}")
        await store.create(f"/core/pods/ns1/p{i:04d}x", pod(f"p{i:04d}x", v=3))
    result = await listing
    assert [r.key for r in result.items] == [f"/core/pods/ns1/p{i:04d}" for i in range(2500)]
    assert [r.object()["spec"]["v"] for r in result.items[:3]] == [1, 0, 0]


async def test_the_compactor_catches_up_without_waiting_whole_intervals_when_history_is_behind(
        store_settings: StoreSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    from minik.store import store as store_module

    monkeypatch.setattr(store_module, "COMPACTION_CATCH_UP_PAUSE_SECONDS", 0.01)
    one_transaction = Store.compact

    async def short_pass(self: Store, target: int | None = None, deadline_seconds: float = 1.0) -> int:
        return await one_transaction(self, target, deadline_seconds=0.000001)  # one batch of rows per pass

    monkeypatch.setattr(Store, "compact", short_pass)
    settings = replace(store_settings, compaction_min_revisions=1, compaction_window_seconds=0,
                       compaction_interval_seconds=2.0, compaction_batch_rows=5)
    s = await Store.open(settings)
    try:
        await s.create("/core/pods/ns1/a", pod("a"))
        for i in range(200):  # 40 passes of 5 rows: 80 s at one pass per interval
            await s.update("/core/pods/ns1/a", pod("a", i=i))
        async with asyncio.timeout(30):
            while s.compact_revision < s.revision - 1:
                await asyncio.sleep(0.05)
    finally:
        await s.close()


async def test_a_watchers_sink_and_its_consumer_together_get_every_event_once_in_order(store: Store) -> None:
    watcher = store.watch("/core/pods/", 0)
    delivered: list[tuple[str, int]] = []
    refuse = [False]

    def sink(events: list) -> bool:
        if refuse[0]:  # a full socket buffer: the events must wait in the watcher's queue, behind nothing
            return False
        delivered.extend(("sink", e.revision) for e in events)
        return True

    watcher.set_sink(sink)

    async def consume() -> None:
        while True:
            try:
                batch = await watcher.next_batch(100)
            except StopAsyncIteration:
                return
            delivered.extend(("consumer", e.revision) for e in batch)

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0)  # the consumer parks: from now on commits go to the sink
    for i in range(30):
        refuse[0] = 10 <= i < 20
        writes = [store.create(f"/core/pods/ns1/p{i}-{j}", pod(f"p{i}-{j}")) for j in range(3)]
        await asyncio.gather(*writes)
    await store.create("/core/configmaps/ns1/other", {"metadata": {"name": "other"}})  # not under the prefix
    while watcher.revision < 90:
        await asyncio.sleep(0.01)
    await watcher.aclose()
    await consumer
    assert [revision for _, revision in delivered] == list(range(1, 91))
    assert {who for who, _ in delivered} == {"sink", "consumer"}
    assert watcher.revision == 90


async def test_a_types_change_revision_moves_with_every_write_under_it_and_no_other(store: Store) -> None:
    opened = store.changed_at("/core/pods/")
    created = await store.create("/core/pods/ns1/a", {"metadata": {"name": "a"}})
    assert store.changed_at("/core/pods/") == created.mod_revision
    await store.create("/core/configmaps/ns1/b", {"metadata": {"name": "b"}})
    assert store.changed_at("/core/pods/") == created.mod_revision
    deleted = await store.delete("/core/pods/ns1/a")
    assert store.changed_at("/core/pods/") == deleted.mod_revision
    assert store.changed_at("/apps/deployments/") == opened == 0


async def test_a_watcher_with_a_trigger_gets_only_the_events_whose_object_has_its_value_before_or_after(
        store: Store) -> None:
    values: list[str] = []

    def node_name(raw: bytes) -> str:
        name = str((orjson.loads(raw).get("spec") or {}).get("nodeName") or "")
        values.append(name)
        return name

    watchers = {node: store.watch("/core/pods/", 0, Trigger(node_name, node)) for node in ("", "n1", "n2")}
    watchers.update({f"idle-{i}": store.watch("/core/pods/", 0, Trigger(node_name, f"n{i + 10}")) for i in range(50)})
    every = store.watch("/core/pods/", 0)
    a = await store.create("/core/pods/ns1/a", pod("a"))  # 1: unbound
    await store.update("/core/pods/ns1/a", pod("a", nodeName="n1"))  # 2: bound to n1
    await store.create("/core/pods/ns1/b", pod("b", nodeName="n2"))  # 3
    await store.update("/core/pods/ns1/a", pod("a", nodeName="n1", x=1))  # 4: stays on n1
    await store.delete("/core/pods/ns1/b")  # 5
    await store.delete("/core/pods/ns1/a")  # 6
    assert a.mod_revision == 1
    assert len(values) == 10  # each object's value read once per write (and once before it), not per watcher

    async def revisions(watcher: Watcher) -> list[int]:  # every event is queued before its write is acknowledged
        got = []
        while (batch := await watcher.next_batch(100, timeout=0)):
            got += [event.revision for event in batch]
        await watcher.aclose()
        return got

    assert await revisions(watchers[""]) == [1, 2]
    assert await revisions(watchers["n1"]) == [2, 4, 6]
    assert await revisions(watchers["n2"]) == [3, 5]
    assert await revisions(every) == [1, 2, 3, 4, 5, 6]
    assert [await revisions(w) for name, w in watchers.items() if name.startswith("idle")] == [[]] * 50


async def test_a_trigger_leaves_the_history_before_the_watch_whole(store: Store) -> None:
    """The history replayed to a watch that starts in the past is filtered by its selector, not by the index:
    the index only narrows the live events, after the watcher is registered."""
    await store.create("/core/pods/ns1/a", pod("a", nodeName="n9"))
    watcher = store.watch("/core/pods/", 0, Trigger(lambda raw: "x", "n1"))
    batch = await watcher.next_batch(100, timeout=1)
    await watcher.aclose()
    assert [event.revision for event in batch] == [1]


async def test_an_event_whose_trigger_value_cannot_be_read_goes_to_every_triggered_watcher(store: Store) -> None:
    def broken(raw: bytes) -> str:
        raise ValueError("a bug in a value function")

    watchers = [store.watch("/core/pods/", 0, Trigger(broken, node)) for node in ("n1", "n2")]
    created = await store.create("/core/pods/ns1/a", pod("a"))
    for watcher in watchers:
        batch = await watcher.next_batch(100, timeout=0)
        await watcher.aclose()
        assert [event.revision for event in batch] == [created.mod_revision]
