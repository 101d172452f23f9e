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

_HEAD = struct.Struct(">I")


def transaction(connection, statements):
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


def _serve(sock):
    connection = None
    buffer = bytearray()
    while True:
        data = sock.recv(1 << 20)
        if not data:
            return
        buffer += data
        replies = []
        while len(buffer) >= 4:
            (size,) = _HEAD.unpack_from(buffer)
            if len(buffer) < 4 + size:
                break
            operation, arguments = marshal.loads(bytes(buffer[4:4 + size]))
            del buffer[:4 + size]
            try:
                if operation == "connect":
                    path, isolation_level = arguments
                    connection = sqlite3.connect(path, isolation_level=isolation_level, check_same_thread=False)
                    result = None
                elif operation == "transaction":
                    result = transaction(connection, arguments)
                elif operation == "execute":
                    sql, parameters = arguments
                    connection.execute(sql, parameters).close()
                    result = None
                elif operation == "executescript":
                    connection.executescript(arguments).close()
                    result = None
                elif operation == "commit":
                    connection.commit()
                    result = None
                elif operation == "close":
                    if connection is not None:
                        connection.close()
                        connection = None
                    result = None
                else:
                    raise ValueError("unknown operation %r" % (operation,))
                reply = marshal.dumps((True, result))
            except Exception as exc:  # answered to the parent, which raises it there
                reply = marshal.dumps((False, (type(exc).__name__, str(exc))))
            replies.append(_HEAD.pack(len(reply)) + reply)
        if replies:
            sock.sendall(b"".join(replies))


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it, by closing the socket
    sock = socket.socket(fileno=int(sys.argv[1]))
    try:
        _serve(sock)
    finally:
        sock.close()


if __name__ == "__main__":
    main()
