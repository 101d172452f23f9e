"""The SQLite backend keeps the backend's contract: appends are durable and whole, reads at a revision and the
history after one are exact, compaction drops only what no read from its revision needs."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from minik.store import EventType, StoreSettings, sqlite_log
from minik.store.backend import Row
from minik.store.sqlite_log import SqliteLog


def raw(name: str, revision: int) -> bytes:
    return orjson.dumps({"metadata": {"name": name, "resourceVersion": str(revision)}})


#: a created at 1, b created at 2, a updated at 3, b deleted at 4 (each row replacing the key's previous one)
ROWS: list[Row] = [
    (1, "/k/a", int(EventType.ADDED), 1, 0, 100.0, raw("a", 1)),
    (2, "/k/b", int(EventType.ADDED), 2, 0, 200.0, raw("b", 2)),
    (3, "/k/a", int(EventType.MODIFIED), 1, 1, 300.0, raw("a", 3)),
    (4, "/k/b", int(EventType.DELETED), 2, 2, 400.0, raw("b", 4)),
]


@pytest.fixture
def settings(tmp_path: Path) -> StoreSettings:
    return StoreSettings(path=tmp_path / "log.db", synchronous="NORMAL")


@pytest.fixture
async def log(settings: StoreSettings) -> AsyncIterator[SqliteLog]:
    opened = await SqliteLog.open(settings)
    try:
        await opened.append(ROWS)
        yield opened
    finally:
        await opened.close()


async def test_appended_rows_are_the_state_when_the_log_is_opened_again(log: SqliteLog,
                                                                         settings: StoreSettings) -> None:
    reopened = await SqliteLog.open(settings)
    try:
        loaded = await reopened.load()
    finally:
        await reopened.close()
    assert [(r.key, r.mod_revision, r.create_revision, r.raw) for r in loaded.records] == [("/k/a", 3, 1,
                                                                                            raw("a", 3))]
    assert loaded.tombstones == {"/k/b": 4}
    assert (loaded.revision, loaded.compact_revision) == (4, 0)


async def test_a_batch_whose_row_cannot_be_written_leaves_nothing_of_itself(log: SqliteLog) -> None:
    with pytest.raises(sqlite3.IntegrityError):  # revision 4 is taken: the batch's first row must not stay either
        await log.append([(5, "/k/c", int(EventType.ADDED), 5, 0, 500.0, raw("c", 5)),
                          (4, "/k/d", int(EventType.ADDED), 4, 0, 500.0, raw("d", 4))])
    assert (await log.load()).revision == 4


async def test_records_at_a_revision_are_the_keys_as_they_were_then(log: SqliteLog) -> None:
    at_two = await log.records_at(["/k/a", "/k/b", "/k/c"], 2)
    assert sorted((r.key, r.mod_revision) for r in at_two) == [("/k/a", 1), ("/k/b", 2)]
    at_four = await log.records_at(["/k/a", "/k/b"], 4)
    assert [(r.key, r.mod_revision) for r in at_four] == [("/k/a", 3)]  # b was deleted by then


async def test_the_events_after_a_revision_come_in_order_in_chunks_with_the_values_they_replaced(
        log: SqliteLog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_log, "EVENTS_PER_READ", 2)
    chunks = [chunk async for chunk in log.events("/k/", 1, 4)]
    assert [[(e.type, e.key, e.revision) for e in chunk] for chunk in chunks] == [
        [(EventType.ADDED, "/k/b", 2), (EventType.MODIFIED, "/k/a", 3)], [(EventType.DELETED, "/k/b", 4)]]
    assert [e.prev_raw for chunk in chunks for e in chunk] == [None, raw("a", 1), raw("b", 2)]
    assert [e.revision for chunk in [c async for c in log.events("/k/a", 0, 2)] for e in chunk] == [1]


async def test_the_revision_before_a_time_is_the_newest_written_before_it(log: SqliteLog) -> None:
    assert [await log.revision_before(t) for t in (50.0, 100.0, 250.0, 1000.0)] == [0, 0, 2, 4]


async def test_compaction_drops_replaced_rows_and_deletion_markers_and_reads_from_its_revision_stay_exact(
        log: SqliteLog, settings: StoreSettings) -> None:
    await log.compact(0, 4)
    await log.compacted()
    assert [(r.key, r.mod_revision) for r in await log.records_at(["/k/a", "/k/b"], 4)] == [("/k/a", 3)]
    loaded = await log.load()
    assert [r.key for r in loaded.records] == ["/k/a"] and loaded.tombstones == {}
    # the newest revision was a deletion marker compaction dropped: the revision does not go back
    assert (loaded.revision, loaded.compact_revision) == (4, 4)
    with sqlite3.connect(settings.path) as check:
        assert check.execute("SELECT rev FROM log").fetchall() == [(3,)]
