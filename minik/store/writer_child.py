"""The store's write connection as a process of its own: the loop of the child process (standard library only,
run as ``python -I -S writer_child.py FD``).

It reads frames (a 4-byte big-endian length, then a ``marshal``-encoded ``(operation, arguments)``) from the socket
it inherits, runs each on its SQLite connection in order, and answers each with a frame of ``(True, result)`` or
``(False, (exception class name, message))``. When the socket ends (the parent closed it or died) it exits; a
transaction it was in the middle of is finished or rolled back by SQLite, never acknowledged.
"""

import marshal
import signal
import socket
import sqlite3
import struct
import sys
from collections.abc import Iterator
from typing import Any

_HEAD = struct.Struct(">I")


def transaction(connection: sqlite3.Connection, statements: list[tuple[str, Any]]) -> None:
    """``statements`` as one transaction on a connection in autocommit mode: a single statement is its own (SQLite
    takes the write lock, writes and commits, fsync included, in one step); several run between BEGIN IMMEDIATE and
    COMMIT, rolled back if one fails."""
    if len(statements) == 1:
        sql, parameters = statements[0]
        connection.execute(sql, parameters).close()
        return None
    connection.execute("BEGIN IMMEDIATE")
    try:
        for sql, parameters in statements:
            connection.execute(sql, parameters).close()
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    return None


def frame(value: Any) -> bytes:
    """``value`` as a frame: its length, then its marshal encoding."""
    payload = marshal.dumps(value)
    return _HEAD.pack(len(payload)) + payload


def take_frames(buffer: bytearray) -> Iterator[Any]:
    """The values of the whole frames at the front of ``buffer`` (a bytearray), removed from it as they are read."""
    while len(buffer) >= 4:
        (size,) = _HEAD.unpack_from(buffer)
        if len(buffer) < 4 + size:
            return
        value = marshal.loads(bytes(buffer[4:4 + size]))
        del buffer[:4 + size]
        yield value


def _run(connection: sqlite3.Connection | None, operation: str, arguments: Any) -> sqlite3.Connection | None:
    """One operation on the connection; the connection it leaves (``connect`` makes it, ``close`` ends it)."""
    if operation == "connect":
        path, isolation_level = arguments
        return sqlite3.connect(path, isolation_level=isolation_level, check_same_thread=False)
    if operation == "close":
        if connection is not None:
            connection.close()
        return None
    if connection is None:
        raise ValueError(f"{operation!r} before 'connect'")
    if operation == "transaction":
        transaction(connection, arguments)
    elif operation == "execute":
        sql, parameters = arguments
        connection.execute(sql, parameters).close()
    elif operation == "executescript":
        connection.executescript(arguments).close()
    elif operation == "commit":
        connection.commit()
    else:
        raise ValueError(f"unknown operation {operation!r}")
    return connection


def _serve(sock: socket.socket) -> None:
    connection: sqlite3.Connection | None = None
    buffer = bytearray()
    while True:
        data = sock.recv(1 << 20)
        if not data:
            return
        buffer += data
        replies = []
        for operation, arguments in take_frames(buffer):
            try:
                connection = _run(connection, operation, arguments)
                reply: tuple[bool, Any] = (True, None)
            except Exception as exc:  # answered to the parent, which raises it there
                reply = (False, (type(exc).__name__, str(exc)))
            replies.append(frame(reply))
        if replies:
            sock.sendall(b"".join(replies))


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it, by closing the socket
    sock = socket.socket(fileno=int(sys.argv[1]))
    try:
        _serve(sock)
    finally:
        sock.close()


if __name__ == "__main__":
    main()
