"""The store's write connection: a child process by default, a thread when asked; both commit the same way."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minik.store import Store, StoreSettings
from minik.store.writer import WriterProcess


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


async def gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


def cm(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


async def test_the_store_commits_through_a_child_process_that_ends_with_it(tmp_path: Path) -> None:
    store = await Store.open(StoreSettings(path=tmp_path / "state.db"))
    writer = store._db
    assert isinstance(writer, WriterProcess)
    pid = writer._process.pid
    assert alive(pid) and pid != os.getpid()
    record = await store.create("/configmaps/default/a", cm("a"))
    await store.close()
    assert await gone(pid)
    reopened = await Store.open(StoreSettings(path=tmp_path / "state.db"))
    try:
        assert reopened.get("/configmaps/default/a").mod_revision == record.mod_revision
    finally:
        await reopened.close()


async def test_a_failed_statement_raises_its_sqlite_error_in_the_caller_and_the_writer_goes_on(
        tmp_path: Path) -> None:
    writer = await WriterProcess.open(tmp_path / "w.db", isolation_level=None)
    try:
        with pytest.raises(sqlite3.OperationalError, match="no such table: missing"):
            await writer.execute("DELETE FROM missing")
        await writer.executescript("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        with pytest.raises(sqlite3.IntegrityError):  # the second row collides: the whole transaction is undone
            await writer.transaction([("INSERT INTO t VALUES (?)", (1,)), ("INSERT INTO t VALUES (?)", (1,))])
        await writer.transaction([("INSERT INTO t VALUES (?)", (2,))])
    finally:
        await writer.close()
    with sqlite3.connect(tmp_path / "w.db") as check:
        assert check.execute("SELECT x FROM t").fetchall() == [(2,)]


async def test_ctrl_c_meant_for_minik_does_not_stop_the_writer(tmp_path: Path) -> None:
    store = await Store.open(StoreSettings(path=tmp_path / "state.db"))
    try:
        pid = store._db._process.pid  # type: ignore[attr-defined]
        assert os.getpgid(pid) != os.getpgid(0)  # a terminal's Ctrl-C goes to minik's process group only
        os.kill(pid, signal.SIGINT)  # and even sent to it, it is ignored
        await asyncio.sleep(0.2)
        await store.create("/configmaps/default/after", cm("after"))
    finally:
        await store.close()


async def test_the_writer_process_ends_when_its_parent_is_killed(tmp_path: Path) -> None:
    script = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from minik.store.writer import WriterProcess\n"
        "async def main():\n"
        "    w = await WriterProcess.open(Path(sys.argv[1]), isolation_level=None)\n"
        "    print(w._process.pid, flush=True)\n"
        "    await asyncio.sleep(3600)\n"
        "asyncio.run(main())\n")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    parent = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "p.db")], stdout=subprocess.PIPE,
                              env=env, text=True)
    try:
        assert parent.stdout is not None
        child = int(await asyncio.wait_for(asyncio.to_thread(parent.stdout.readline), 30))
        assert alive(child)
        parent.kill()
        parent.wait()
        assert await gone(child)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


async def test_a_store_with_its_writer_in_a_thread_commits_the_same_way(tmp_path: Path) -> None:
    store = await Store.open(StoreSettings(path=tmp_path / "state.db", writer_process=False))
    try:
        assert not isinstance(store._db, WriterProcess)
        created = await store.create("/configmaps/default/t", cm("t"))
        updated = await store.update("/configmaps/default/t", {**cm("t"), "data": {"k": "v"}},
                                     expected_revision=created.mod_revision)
        assert updated.mod_revision == created.mod_revision + 1
        await store.delete("/configmaps/default/t")
        assert store.get("/configmaps/default/t") is None
    finally:
        await store.close()


async def test_a_huge_environment_does_not_stop_the_writer_from_starting(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIK_TEST_HUGE", "x" * (4 * 1024 * 1024))  # over what exec takes in one variable
    store = await Store.open(StoreSettings(path=tmp_path / "state.db"))
    try:
        await store.create("/configmaps/default/e", cm("e"))
    finally:
        await store.close()


@pytest.mark.parametrize("share, batches", [(0.5, [["a"], ["b", "c", "d"]]), (1.0, [["a"], ["b"], ["c"], ["d"]])],
                         ids=["paced", "unpaced"])
async def test_a_costly_fan_out_makes_the_writes_behind_it_share_the_next_commit(
        tmp_path: Path, share: float, batches: list[list[str]]) -> None:
    store = await Store.open(StoreSettings(path=tmp_path / "state.db", publish_share=share))
    published: list[list[str]] = []
    publish = store._hub.publish

    def costly(events: list) -> None:  # as telling a hundred watch connections takes
        published.append([event.key.rsplit("/", 1)[1] for event in events])
        time.sleep(0.05)
        publish(events)

    store._hub.publish = costly  # type: ignore[method-assign]
    try:
        await store.create("/configmaps/default/a", cm("a"))
        writes = []
        for name in "bcd":  # a write every 2 ms, all within the 50 ms pause the first commit earned
            writes.append(asyncio.ensure_future(store.create(f"/configmaps/default/{name}", cm(name))))
            await asyncio.sleep(0.002)
        await asyncio.gather(*writes)
    finally:
        await store.close()
    assert published == batches


async def test_the_log_has_one_index_besides_its_row_id_even_in_a_data_directory_made_before(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with sqlite3.connect(path) as old:  # the schema of earlier versions had a second, unique index
        old.executescript("CREATE TABLE log (rev INTEGER PRIMARY KEY, key TEXT NOT NULL, type INTEGER NOT NULL, "
                          "create_rev INTEGER NOT NULL, prev_rev INTEGER NOT NULL, ts REAL NOT NULL, value BLOB "
                          "NOT NULL); CREATE UNIQUE INDEX log_key_prev ON log (key, prev_rev);")
    store = await Store.open(StoreSettings(path=path))
    try:
        record = await store.create("/configmaps/default/a", {"metadata": {"name": "a"}})
        await store.delete("/configmaps/default/a")
        await store.create("/configmaps/default/a", {"metadata": {"name": "a"}})  # chained to the deletion
    finally:
        await store.close()
    with sqlite3.connect(path) as check:
        indexes = [row[0] for row in check.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'log'")]
        assert indexes == ["log_key_rev"]
        assert check.execute("SELECT COUNT(*) FROM log").fetchone() == (record.mod_revision + 2,)
