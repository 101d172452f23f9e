#!/usr/bin/env python3
"""The watch-history checker at scale: 100,000 operations by concurrent writers, several watchers, compaction
running, durable commits. Prints the counts, the throughput and whether every history checked out.

    python scripts/bench_watch_history.py [--operations 100000] [--writers 32] [--watchers 8]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import benchlib

from minik.store import Store, StoreSettings
from minik.testing import watch_history


async def main(operations: int, writers: int, watchers: int, synchronous: str, json_path: Path | None = None
               ) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        settings = StoreSettings(path=Path(tmp) / "state.db", synchronous=synchronous, compaction_min_revisions=5000,
                                 compaction_window_seconds=0, compaction_interval_seconds=3600,
                                 event_window=500, watcher_buffer=1_000_000)
        store = await Store.open(settings)
        began = time.perf_counter()
        try:
            report = await watch_history.run(store, writers=writers, operations_per_writer=operations // writers,
                                             keys=500, watchers=watchers, resume_pause=0.05)
        finally:
            await store.close()
        seconds = time.perf_counter() - began
    print(f"operations       {report.operations}")
    print(f"acknowledged     {report.acknowledged}  ({report.acknowledged / seconds:,.0f}/s, sync={synchronous})")
    print(f"rejected (CAS)   {report.rejected}")
    print(f"watchers         {report.watchers}  (resumed mid-run: {report.resumed})")
    print(f"events checked   {report.events_checked}")
    print(f"compacted to     {report.compacted_to}")
    print(f"seconds          {seconds:.1f}")
    print("result           " + ("OK: every history ordered, unique, gap-free, faithful and resumable"
                                 if report.ok else "FAILED"))
    for error in report.errors[:20]:
        print("  " + error)
    benchlib.write_json(json_path, [
        benchlib.row(f"watch-history checker acknowledged ops/s ({report.operations:,} ops, sync={synchronous})",
                     report.acknowledged / seconds),
        benchlib.row("watch-history checker: every history exact", report.ok, goal="all histories exact",
                     met=report.ok)],
        {"operations": report.operations, "acknowledged": report.acknowledged, "rejected": report.rejected,
         "watchers": report.watchers, "events_checked": report.events_checked, "seconds": seconds,
         "errors": report.errors[:20]})
    return 0 if report.ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--operations", type=int, default=100_000)
    parser.add_argument("--writers", type=int, default=32)
    parser.add_argument("--watchers", type=int, default=8)
    parser.add_argument("--sync", default="FULL", choices=["FULL", "NORMAL"])
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.operations, args.writers, args.watchers, args.sync, args.json)))
