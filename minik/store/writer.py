"""The store's write connection: a SQLite connection that lives in a thread of its own.

Each call runs a whole function in that thread (a batch's INSERT, a compaction step), so a commit costs the event
loop one hand-off and one wake-up. Every hand-off waits for a turn of the event loop, which under load is the time
to process everything else that is ready; with aiosqlite's one hand-off per statement a commit took two turns, and
the writes waiting for it waited that much longer. The thread is a plain loop over a queue, lighter than an
executor's futures.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from queue import SimpleQueue
from typing import Any, TypeVar

T = TypeVar("T")

_Call = tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]


def _resolve(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class WriteConnection:
    """Runs functions of a ``sqlite3.Connection`` in the connection's own thread, one at a time, in order."""

    def __init__(self, path: Path, isolation_level: str | None) -> None:
        self._path = path
        self._isolation_level = isolation_level
        self._calls: SimpleQueue[_Call | None] = SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="minik-store-writer", daemon=True)
        self._connection: sqlite3.Connection | None = None

    @classmethod
    async def open(cls, path: Path, *, isolation_level: str | None) -> "WriteConnection":
        connection = cls(path, isolation_level)
        connection._thread.start()
        try:
            await connection.run(connection._connect)
        except BaseException:
            connection._stop()
            raise
        return connection

    def _connect(self, _connection: sqlite3.Connection) -> None:
        self._connection = sqlite3.connect(self._path, isolation_level=self._isolation_level,
                                           check_same_thread=False)

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            fn, future = call
            result: Any = None
            error: BaseException | None = None
            try:
                result = fn(self._connection)  # type: ignore[arg-type]  # None only for _connect
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                error = exc
            try:
                future.get_loop().call_soon_threadsafe(_resolve, future, result, error)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` in the connection's thread."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._calls.put((fn, future))
        return await future

    async def execute(self, sql: str, parameters: tuple[Any, ...] = ()) -> None:
        await self.run(lambda c: c.execute(sql, parameters).close())

    async def executescript(self, script: str) -> None:
        await self.run(lambda c: c.executescript(script).close())

    async def commit(self) -> None:
        await self.run(sqlite3.Connection.commit)

    async def close(self) -> None:
        try:
            if self._connection is not None:
                await self.run(sqlite3.Connection.close)
        finally:
            self._stop()

    def _stop(self) -> None:
        """End the thread; every call was awaited before, so it is idle and exits at once."""
        self._calls.put(None)
        self._thread.join(timeout=5)


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
