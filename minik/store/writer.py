"""The store's write connection: a SQLite connection that lives in a thread of its own.

Each call runs a whole function in that thread (a batch's INSERT and COMMIT, a compaction step), so a commit
costs the event loop one hand-off and one wake-up. Every hand-off waits for a turn of the event loop, which under
load is the time to process everything else that is ready; with aiosqlite's one hand-off per statement a commit
took two turns, and the writes waiting for it waited that much longer.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class WriteConnection:
    """Runs functions of a ``sqlite3.Connection`` in the connection's own thread, one at a time."""

    def __init__(self, connection: sqlite3.Connection, executor: ThreadPoolExecutor) -> None:
        self._connection = connection
        self._executor = executor

    @classmethod
    async def open(cls, path: Path, *, isolation_level: str | None) -> "WriteConnection":
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="minik-store-writer")
        loop = asyncio.get_running_loop()
        try:
            connection = await loop.run_in_executor(executor, partial(
                sqlite3.connect, path, isolation_level=isolation_level, check_same_thread=False))
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(connection, executor)

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` in the connection's thread."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, self._connection)

    async def execute(self, sql: str, parameters: tuple[Any, ...] = ()) -> None:
        await self.run(lambda c: c.execute(sql, parameters).close())

    async def executescript(self, script: str) -> None:
        await self.run(lambda c: c.executescript(script).close())

    async def commit(self) -> None:
        await self.run(sqlite3.Connection.commit)

    async def close(self) -> None:
        try:
            await self.run(sqlite3.Connection.close)
        finally:
            self._executor.shutdown(wait=True)


def write_transaction(statements: list[tuple[str, tuple[Any, ...] | list[Any]]]) -> Callable[[sqlite3.Connection], None]:
    """A function that runs ``statements`` as one transaction on a connection in autocommit mode. A single
    statement is its own transaction (SQLite takes the write lock, writes and commits, fsync included, in one step,
    so the thread hands the GIL back once); several run between BEGIN IMMEDIATE and COMMIT, rolled back if one
    fails."""

    def run(connection: sqlite3.Connection) -> None:
        if len(statements) == 1:
            sql, parameters = statements[0]
            connection.execute(sql, parameters).close()
            return
        connection.execute("BEGIN IMMEDIATE")
        try:
            for sql, parameters in statements:
                connection.execute(sql, parameters).close()
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    return run
