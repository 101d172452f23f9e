"""The store's backend in one SQLite file: the append-only log (schema.py), its write connection (writer.py) and a
read connection for reads at older revisions, watch history and compaction's bounds.

Both connections are in autocommit mode: a write connection's transaction is one statement, or BEGIN IMMEDIATE ...
COMMIT, run whole in its process (or thread); the reader never writes. Appends and compaction steps take turns on
the write connection under one lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiosqlite

from minik.store import schema
from minik.store.backend import Loaded, Row
from minik.store.keys import prefix_end
from minik.store.records import Event, EventType, Record
from minik.store.settings import StoreSettings
from minik.store.writer import WriteConnection, Writer, WriterProcess

#: the write connection's page cache (SQLite's own default is 2 MB); it grows only as far as the log does
WRITER_CACHE_KIB = 32 * 1024

#: keys per read of their state at a revision (SQLite's bound on a statement's parameters is 32,766)
KEYS_PER_READ = 500

#: events per chunk of a watch's history
EVENTS_PER_READ = 1000


class SqliteLog:
    """The revision log in SQLite (a ``Backend``)."""

    def __init__(self, writer: Writer, reader: aiosqlite.Connection) -> None:
        #: the write connection (a child process by default)
        self.writer = writer
        self._reader = reader
        self._write_lock = asyncio.Lock()

    @classmethod
    async def open(cls, settings: StoreSettings) -> SqliteLog:
        """Open (or create) the file and its two connections, with the schema and the settings' pragmas."""
        settings.path.parent.mkdir(parents=True, exist_ok=True)
        writer: Writer = await (WriterProcess if settings.writer_process else WriteConnection).open(
            settings.path, isolation_level=None)
        try:
            reader = await aiosqlite.connect(settings.path, isolation_level=None)
        except BaseException:
            await writer.close()
            raise
        opened = cls(writer, reader)
        try:
            for db in (writer, reader):
                await db.execute(f"PRAGMA busy_timeout={int(settings.busy_timeout_ms)}")
                for pragma in schema.PRAGMAS:
                    await db.execute(pragma)
            synchronous = settings.synchronous.upper()
            if synchronous not in ("FULL", "NORMAL", "EXTRA"):
                raise ValueError(f"synchronous must be FULL, NORMAL or EXTRA, not {settings.synchronous!r}")
            await writer.execute(f"PRAGMA synchronous={synchronous}")
            # the index's pages on random keys stay cached as the log grows: SQLite's default 2 MB re-read about
            # 15 KB per pod create from the file at 100,000 pods
            await writer.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
            await writer.executescript(schema.CREATE)
            await writer.commit()
        except BaseException:
            await opened.close()
            raise
        return opened

    async def load(self) -> Loaded:
        records: list[Record] = []
        tombstones: dict[str, int] = {}
        async with self._reader.execute(schema.LOAD_CURRENT) as cursor:
            async for key, rev, typ, create_rev, value in cursor:
                if typ != EventType.DELETED:
                    records.append(Record(key, bytes(value), rev, create_rev))
                else:
                    tombstones[key] = rev
        async with self._reader.execute(schema.MAX_REVISION) as cursor:
            row = await cursor.fetchone()
            max_rev = int(row[0]) if row else 0
        async with self._reader.execute(schema.GET_META, ("compact_revision",)) as cursor:
            row = await cursor.fetchone()
            compact_revision = int(row[0]) if row else 0
        # compaction may have removed the newest deletion marker, but never past the compact revision
        return Loaded(records, tombstones, max(max_rev, compact_revision), compact_revision)

    async def append(self, rows: list[Row]) -> None:
        """One multi-row INSERT: the write connection commits it, fsync included, in one step."""
        async with self._write_lock:
            await self.writer.transaction([(schema.insert_rows(len(rows)), [value for row in rows for value in row])])

    async def records_at(self, keys: list[str], revision: int) -> list[Record]:
        records: list[Record] = []
        for i in range(0, len(keys), KEYS_PER_READ):
            part = keys[i:i + KEYS_PER_READ]
            async with self._reader.execute(schema.keys_at(len(part)), (*part, revision)) as cursor:
                for key, rev, typ, create_rev, value in await cursor.fetchall():
                    if typ != EventType.DELETED:
                        records.append(Record(key, bytes(value), rev, create_rev))
        return records

    async def events(self, prefix: str, after: int, upto: int) -> AsyncIterator[list[Event]]:
        end = prefix_end(prefix)
        position = after
        while position < upto:
            async with self._reader.execute(schema.EVENTS_AFTER, (position, upto, prefix, end, EVENTS_PER_READ)
                                            ) as cursor:
                rows = await cursor.fetchall()
            if not rows:
                return
            chunk = [Event(EventType(typ), key, rev, bytes(value), bytes(prev) if prev is not None else None)
                     for rev, key, typ, value, prev in rows]
            position = chunk[-1].revision
            yield chunk

    async def revision_before(self, timestamp: float) -> int:
        async with self._reader.execute(schema.REVISION_BEFORE, (timestamp,)) as cursor:
            row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def compact(self, low: int, high: int) -> None:
        """One small transaction, so that appends never wait long behind it."""
        async with self._write_lock:
            await self.writer.transaction([(schema.COMPACT_REPLACED, (low, high)),
                                           (schema.COMPACT_TOMBSTONES, (low, high)),
                                           (schema.SET_META, ("compact_revision", high))])

    async def compacted(self) -> None:
        """A passive checkpoint of the WAL (it waits for no reader), after compaction's deletes."""
        async with self._write_lock:
            await self.writer.execute("PRAGMA wal_checkpoint(PASSIVE)")

    async def close(self) -> None:
        await self.writer.close()
        await self._reader.close()
