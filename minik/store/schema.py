"""The SQL of the store, and nothing else.

The log is append-only, as kine's: the revision is the row id, every write is a row, and the current state of a
key is its newest row. The log has one index besides the row id, (key, rev), for reads by key at a revision. Kine
also has a unique index on (key, prev_revision), so that two writers from one revision collide in SQL; minik has
one writer, which checks every write against the state in memory before the batch goes to SQLite, and that second
index on random keys doubled what each commit wrote (at 100,000 pods, 20 KB of log and checkpoint writes per pod
create instead of 11), so it is gone (``DROP INDEX`` below, for data directories made before).
"""

import functools

PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA foreign_keys=OFF",
    "PRAGMA temp_store=MEMORY",
    "PRAGMA wal_autocheckpoint=4000",
)

CREATE = """
CREATE TABLE IF NOT EXISTS log (
    rev          INTEGER PRIMARY KEY,
    key          TEXT    NOT NULL,
    type         INTEGER NOT NULL,
    create_rev   INTEGER NOT NULL,
    prev_rev     INTEGER NOT NULL,
    ts           REAL    NOT NULL,
    value        BLOB    NOT NULL
);
DROP INDEX IF EXISTS log_key_prev;
CREATE INDEX IF NOT EXISTS log_key_rev ON log (key, rev);
CREATE TABLE IF NOT EXISTS meta (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
"""

INSERT = "INSERT INTO log (rev, key, type, create_rev, prev_rev, ts, value) VALUES (?, ?, ?, ?, ?, ?, ?)"


@functools.lru_cache(maxsize=64)
def insert_rows(rows: int) -> str:
    """One INSERT of ``rows`` rows (parameters flattened row after row): SQLite takes a whole batch in one step."""
    return INSERT + ", (?, ?, ?, ?, ?, ?, ?)" * (rows - 1)

# SQLite returns the bare columns of the row holding MAX(rev) in each group.
LOAD_CURRENT = "SELECT key, MAX(rev), type, create_rev, value FROM log GROUP BY key"

MAX_REVISION = "SELECT COALESCE(MAX(rev), 0) FROM log"

GET_META = "SELECT value FROM meta WHERE name = ?"
SET_META = "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value"

# The state of every key in [start, end) as of revision :rev, in key order.
LIST_AT = """
SELECT key, MAX(rev), type, create_rev, value FROM log
WHERE key > ? AND key < ? AND rev <= ?
GROUP BY key ORDER BY key
"""

@functools.lru_cache(maxsize=64)
def keys_at(count: int) -> str:
    """The state of ``count`` given keys as of a revision (parameters: the keys, then the revision); keys that
    did not exist then are missing or come back as deletion markers."""
    return ("SELECT key, MAX(rev), type, create_rev, value FROM log WHERE key IN (" + ", ".join("?" * count) +
            ") AND rev <= ? GROUP BY key")


# Writes after a revision in a key range, with the value each replaced.
EVENTS_AFTER = """
SELECT l.rev, l.key, l.type, l.value, p.value FROM log AS l LEFT JOIN log AS p ON p.rev = l.prev_rev
WHERE l.rev > ? AND l.rev <= ? AND l.key >= ? AND l.key < ?
ORDER BY l.rev LIMIT ?
"""

# The newest revision older than a point in time.
REVISION_BEFORE = "SELECT COALESCE(MAX(rev), 0) FROM log WHERE ts < ?"

# Compaction of a window of revisions (lo, hi], hi at most the compact revision. After it, no row at or below hi
# is superseded by a row at or below hi, and no deletion marker at or below hi is left: the row each write in the
# window replaced goes, then the window's deletion markers. The newest row of a key at or below the compact
# revision stays, so every read from the compact revision on still finds the state and the previous value.
COMPACT_REPLACED = "DELETE FROM log WHERE rev IN (SELECT prev_rev FROM log WHERE rev > ? AND rev <= ? AND prev_rev > 0)"
COMPACT_TOMBSTONES = "DELETE FROM log WHERE rev > ? AND rev <= ? AND type = 2"
