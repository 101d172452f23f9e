"""Python's cyclic garbage collector, set for a long-running minik process (`minik up`, `minik scheduler`).

Such a process keeps every object its informers watch for as long as it runs, and makes and drops thousands of
small objects per request. With Python's default thresholds (a young-generation collection every 700 net
allocations) the collector ran about 2,000 times while 10,000 pods were scheduled, and each collection cost far
more than its young objects (measured on 2 vCPUs: 2 s of the API server's CPU in bench_scheduler.py's run, 0.2 ms
per pod in the scheduler process even after freezing). Collecting every 100,000 net allocations instead brings
that to a handful of collections; freezing what start-up made takes it out of every later full collection.
Objects that are garbage only through reference cycles wait a little longer to be freed, which is all it costs.

What a large cluster's caches gather while it runs (150,000 pods are some ten million dicts and lists) would still
be walked by every full collection, for seconds of the event loop under churn. These are plain JSON trees, freed
by reference counting, with no cycles to find; so `minik up` also freezes what has survived every 30 s
(``freeze_survivors``). A cycle made only of frozen objects is then never collected; such cycles are rare here
(request-scoped cycles die young).
"""

from __future__ import annotations

import asyncio
import gc

import structlog

log = structlog.get_logger("minik.collector")

#: young generation, then how many young collections per middle one and middle ones per full one
THRESHOLDS = (100_000, 10, 10)


def settle_after_start() -> None:
    """Call once a long-running process has started (its caches synced): what exists now stays, so the
    collector leaves it out from now on (``gc.freeze``), and it collects young objects less often."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)


#: how often ``freeze_survivors`` freezes what has survived (seconds)
FREEZE_INTERVAL_SECONDS = 30.0


class _FreezeAfterCollection:
    """A collector callback that freezes once asked, right after the collector's next collection of the middle
    or oldest generation: then the young generations are empty, so freezing costs nothing. Collecting them first
    ourselves (``gc.collect(1)``) stalled the event loop for about 0.4 s every 30 s under 1,000 writes/s."""

    def __init__(self) -> None:
        self.due = False

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and self.due and info.get("generation", 0) >= 1:
            gc.freeze()
            self.due = False


async def freeze_survivors(interval: float = FREEZE_INTERVAL_SECONDS) -> None:
    """Freeze what has survived, every ``interval`` seconds, until cancelled; unfreeze on the way out. The
    freeze waits for the collector's own next collection of the older generations; a process that allocates too
    little to have one in a whole interval collects its few young objects itself."""
    freezer = _FreezeAfterCollection()
    gc.callbacks.append(freezer)
    try:
        while True:
            await asyncio.sleep(interval)
            if freezer.due:
                gc.collect(1)  # the young garbage first, so that only live objects are frozen
                gc.freeze()
                log.debug("survivors frozen after a quiet interval", frozen=gc.get_freeze_count())
            freezer.due = True
    finally:
        gc.callbacks.remove(freezer)
        gc.unfreeze()
