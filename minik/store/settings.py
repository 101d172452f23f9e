"""Store settings: one frozen dataclass, a docstring per field."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StoreSettings:
    path: Path
    """The SQLite file. Its directory is created when missing."""

    synchronous: str = "FULL"
    """SQLite's synchronous pragma in WAL mode. FULL fsyncs the WAL at every commit, so an acknowledged write
    survives power loss. NORMAL survives a crash of the process (kill -9) but may lose the last commits on power
    loss, in exchange for fewer fsyncs."""

    max_batch: int = 256
    """How many queued writes one transaction may commit together (group commit)."""

    max_object_bytes: int = 1536 * 1024
    """The largest serialized object the store takes (etcd's default request limit, 1.5 MiB); larger writes fail
    with ObjectTooLarge and leave the store as it was."""

    compaction_window_seconds: float = 300.0
    """History younger than this is kept (Kubernetes compacts every 5 minutes)."""

    compaction_min_revisions: int = 1000
    """At least this many of the newest revisions are always kept, however old."""

    compaction_interval_seconds: float = 30.0
    """How often the compactor looks for history to drop."""

    compaction_batch_rows: int = 500
    """Rows deleted per compaction transaction, so writers never wait long."""

    event_window: int = 10_000
    """How many recent events stay in memory to serve watch starts without touching SQLite."""

    watcher_buffer: int = 10_000
    """Events a watcher may fall behind by before it is closed (its client re-watches or relists)."""

    writer_process: bool = True
    """Run the write connection in a child process (the default) instead of a thread of this one. A thread's
    every step (waking for a batch, binding it, returning from the fsync) waits for this process's GIL, which a
    busy event loop hands over only once per switch interval, and takes it from the loop in turn; in a process
    the commit runs beside the loop. Measured on 2 vCPUs: about 25% more pod creates/s."""

    publish_share: float = 0.5
    """The largest share of the event loop's time that telling watchers of commits may take. After a commit whose
    fan-out took P seconds (at least half a millisecond: a hundred watch connections, say), the next batch is taken
    P * (1 / share - 1) later, and the writes that arrive meanwhile share its commit and its fan-out; one write to
    each watcher's socket costs the same for one event as for ten. 1.0 takes the next batch at once."""

    busy_timeout_ms: int = 30_000
    """How long SQLite waits for a lock held by another connection before failing."""
