"""The garbage collector's policy for a long-running `minik up`: survivors are frozen out of its reach.

CPython's full collection walks every tracked object, and runs whenever the objects that survived since the last
one reach a quarter of those that had: with the informers' caches of a large cluster (150,000 pods are some ten
million dicts and lists) each full pass takes seconds of the event loop, again and again under churn. The cached
objects are plain JSON trees, freed by reference counting, with no cycles for the collector to find. So every
``interval`` seconds the objects that have lived that long are frozen (``gc.freeze()``, which only moves them to
the permanent generation): the collector keeps running, but over what is younger. The price is that a cycle made
only of objects that were frozen is never collected; such cycles are rare here (request-scoped cycles die young).
"""

from __future__ import annotations

import asyncio
import gc

import structlog

log = structlog.get_logger("minik.gcpolicy")

#: how often survivors are frozen (seconds)
FREEZE_INTERVAL_SECONDS = 30.0


async def freeze_survivors(interval: float = FREEZE_INTERVAL_SECONDS) -> None:
    """Freeze what has survived, every ``interval`` seconds, until cancelled; unfreeze on the way out."""
    try:
        while True:
            await asyncio.sleep(interval)
            gc.collect(1)  # the young garbage first, so that only live objects are frozen
            gc.freeze()
            log.debug("survivors frozen", frozen=gc.get_freeze_count())
    finally:
        gc.unfreeze()
