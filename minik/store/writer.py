"""The store's write connection: a SQLite connection in a process of its own (``WriterProcess``, the default) or
in a thread of this one (``WriteConnection``).

Each call runs a whole transaction there (a batch's INSERT, a compaction step), so a commit costs the event loop
one hand-off and one wake-up; with aiosqlite's one hand-off per statement a commit took two turns of a busy loop.

Why a process: a thread needs this process's GIL to wake for a batch, to bind its rows and to return from the
fsync, and a busy event loop hands the GIL over only once per switch interval; each of those waits made the
commit (and every write waiting for it) slower, and each hand-over stopped the loop. The child process runs
``writer_child.py`` on the standard library alone, takes frames over a socket pair and answers them in order;
it ends when its socket does, so it never outlives the store.
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import sqlite3
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from queue import SimpleQueue
from typing import Any, Literal, Protocol, TypeVar

from minik.store.writer_child import frame, take_frames, transaction

T = TypeVar("T")
IsolationLevel = Literal["DEFERRED", "EXCLUSIVE", "IMMEDIATE"] | None
"""sqlite3's isolation levels; None is autocommit mode, where the store runs its own BEGIN IMMEDIATE."""

_Call = tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]
Statements = list[tuple[str, tuple[Any, ...] | list[Any]]]


class Writer(Protocol):
    """What the store asks of its write connection."""

    async def transaction(self, statements: Statements) -> None: ...

    async def execute(self, sql: str, parameters: tuple[Any, ...] = ()) -> None: ...

    async def executescript(self, script: str) -> None: ...

    async def commit(self) -> None: ...

    async def close(self) -> None: ...


def _resolve(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class WriteConnection:
    """Runs functions of a ``sqlite3.Connection`` in the connection's own thread, one at a time, in order."""

    def __init__(self, path: Path, isolation_level: IsolationLevel) -> None:
        self._path = path
        self._isolation_level = isolation_level
        self._calls: SimpleQueue[_Call | None] = SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="minik-store-writer", daemon=True)
        self._connection: sqlite3.Connection | None = None

    @classmethod
    async def open(cls, path: Path, *, isolation_level: IsolationLevel) -> WriteConnection:
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

    async def transaction(self, statements: Statements) -> None:
        await self.run(write_transaction(statements))

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


def write_transaction(statements: Statements) -> Callable[[sqlite3.Connection], None]:
    """A function that runs ``statements`` as one transaction (``writer_child.transaction``) on a connection."""
    return functools.partial(transaction, statements=statements)


_CHILD = Path(__file__).with_name("writer_child.py")
_CHILD_ENVIRONMENT = ("TMPDIR", "SQLITE_TMPDIR", "TMP", "TEMP")


class _Channel(asyncio.Protocol):
    """The parent's end of the writer process's socket: frames out, answers in, in order."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.waiting: deque[asyncio.Future[Any]] = deque()
        self.buffer = bytearray()
        self.lost: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc or ConnectionResetError("the store's writer process ended")
        while self.waiting:
            future = self.waiting.popleft()
            if not future.done():
                future.set_exception(sqlite3.OperationalError(f"the store's writer process ended: {self.lost}"))

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        for ok, result in take_frames(self.buffer):
            future = self.waiting.popleft()
            if future.done():
                continue
            if ok:
                future.set_result(result)
            else:
                name, message = result
                error = getattr(sqlite3, name, None)
                if not (isinstance(error, type) and issubclass(error, Exception)):
                    error = sqlite3.OperationalError
                future.set_exception(error(message))

    def call(self, operation: str, arguments: Any) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.lost is not None or self.transport is None:
            future.set_exception(sqlite3.OperationalError("the store's writer process ended"))
            return future
        self.transport.write(frame((operation, arguments)))
        self.waiting.append(future)
        return future


class WriterProcess:
    """The write connection in a child process: a commit's SQLite work and fsync never wait for this process's
    GIL, and never make its event loop wait for them. Same calls as ``WriteConnection``."""

    def __init__(self, process: subprocess.Popen[bytes], channel: _Channel) -> None:
        self._process = process
        self._channel = channel

    @classmethod
    async def open(cls, path: Path, *, isolation_level: str | None) -> WriterProcess:
        parent, child = socket.socketpair()
        try:
            # its own session: a Ctrl-C meant for minik must not kill the writer under a graceful stop
            # and only the environment SQLite reads: Python in isolated mode ignores the rest, and a large one (a
            # caller's own variables) could exceed what exec takes
            # a plain Popen, not asyncio's: the writer is polled and killed from the writer thread as well, and its
            # start is a fork and exec that does not wait for the child
            process = subprocess.Popen([sys.executable, "-I", "-S", str(_CHILD), str(child.fileno())],  # noqa: ASYNC220
                                       pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, start_new_session=True,
                                       env={k: v for k, v in os.environ.items() if k in _CHILD_ENVIRONMENT})
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        _, channel = await asyncio.get_running_loop().create_unix_connection(_Channel, sock=parent)
        writer = cls(process, channel)
        try:
            await channel.call("connect", (str(path), isolation_level))
        except BaseException:
            await writer._stop()
            raise
        return writer

    async def transaction(self, statements: Statements) -> None:
        await self._channel.call("transaction", statements)

    async def execute(self, sql: str, parameters: tuple[Any, ...] = ()) -> None:
        await self._channel.call("execute", (sql, parameters))

    async def executescript(self, script: str) -> None:
        await self._channel.call("executescript", script)

    async def commit(self) -> None:
        await self._channel.call("commit", None)

    async def close(self) -> None:
        try:
            if self._channel.lost is None:
                await self._channel.call("close", None)
        finally:
            await self._stop()

    async def _stop(self) -> None:
        if self._channel.transport is not None:
            self._channel.transport.close()
        for _ in range(500):  # the child exits as soon as its socket ends
            if self._process.poll() is not None:
                return
            await asyncio.sleep(0.002)
        self._process.kill()
        self._process.wait()
