"""minik.collector: what survives is frozen out of the collector's walks, until it stops."""

from __future__ import annotations

import asyncio
import gc

from minik import collector
from minik.aio import start_task, stop_task


async def test_survivors_are_frozen_each_interval_and_unfrozen_when_the_policy_stops() -> None:
    survivor = [{"metadata": {"name": f"pod-{i}"}} for i in range(100)]
    assert gc.get_freeze_count() == 0
    task = start_task(collector.freeze_survivors(0.01), "freeze survivors")
    try:
        async with asyncio.timeout(10):
            while gc.get_freeze_count() == 0:
                await asyncio.sleep(0.01)
        assert gc.get_freeze_count() >= len(survivor)
    finally:
        await stop_task(task)
    assert gc.get_freeze_count() == 0


def test_a_due_freeze_comes_right_after_the_collectors_own_collection_of_the_older_generations() -> None:
    freezer = collector._FreezeAfterCollection()
    gc.callbacks.append(freezer)
    try:
        freezer.due = True
        kept = []
        for i in range(300_000):  # enough allocations for the collector to reach the middle generation
            kept.append({"n": [i]})
            if not freezer.due:
                break
        assert not freezer.due
        assert gc.get_freeze_count() > 0
        gc.unfreeze()
        freezer("stop", {"generation": 1})  # not due any more: nothing is frozen again
        assert gc.get_freeze_count() == 0
    finally:
        gc.callbacks.remove(freezer)
        gc.unfreeze()
