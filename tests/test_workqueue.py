"""The controllers' work queue: dedupe, one worker per key, delayed and rate-limited retries, shutdown."""

from __future__ import annotations

import asyncio

import pytest

from minik.workqueue import ItemExponentialRateLimiter, ShutDown, WorkQueue


async def test_a_key_added_twice_while_queued_is_handed_out_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("default/a")
    queue.add("default/b")
    queue.add("default/a")
    assert len(queue) == 2
    assert await queue.get() == "default/a"
    assert await queue.get() == "default/b"
    assert len(queue) == 0


async def test_a_key_being_processed_is_not_handed_to_another_worker_until_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert await queue.get() == "a"
    queue.add("a")  # an event arrives while a worker syncs "a"
    assert len(queue) == 0
    second_worker = asyncio.create_task(queue.get())
    await asyncio.sleep(0.01)
    assert not second_worker.done()
    queue.done("a")
    assert await asyncio.wait_for(second_worker, 1) == "a"


async def test_a_key_added_several_times_while_processing_is_queued_once_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    await queue.get()
    queue.add("a")
    queue.add("a")
    queue.done("a")
    assert len(queue) == 1
    assert await queue.get() == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_done_without_a_readd_does_not_queue_the_key_again() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    await queue.get()
    queue.done("a")
    assert len(queue) == 0


async def test_concurrent_workers_never_process_the_same_key_at_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    active: set[str] = set()
    overlaps: list[str] = []
    processed: list[str] = []

    async def worker() -> None:
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            if key in active:
                overlaps.append(key)
            active.add(key)
            await asyncio.sleep(0.001)
            active.discard(key)
            processed.append(key)
            queue.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(4)]
    for round_ in range(20):
        for key in ("a", "b", "c"):
            queue.add(key)
        await asyncio.sleep(0.0005 * (round_ % 3))
    while len(queue) or active:
        await asyncio.sleep(0.005)
    queue.shutdown()
    await asyncio.gather(*workers)
    assert overlaps == []
    assert set(processed) == {"a", "b", "c"}


async def test_add_after_hands_the_key_out_only_once_the_delay_has_passed() -> None:
    queue: WorkQueue[str] = WorkQueue()
    loop = asyncio.get_running_loop()
    began = loop.time()
    queue.add_after("a", 0.05)
    assert len(queue) == 0
    assert await asyncio.wait_for(queue.get(), 1) == "a"
    assert loop.time() - began >= 0.045


async def test_add_after_keeps_the_earliest_of_two_delays_for_one_key() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 10)
    queue.add_after("a", 0.01)
    queue.add_after("a", 5)
    assert await asyncio.wait_for(queue.get(), 1) == "a"
    queue.done("a")
    queue.shutdown()  # cancels nothing left: the later delays were merged into the earliest


async def test_rate_limited_retries_back_off_exponentially_per_key_until_forgotten() -> None:
    limiter: ItemExponentialRateLimiter[str] = ItemExponentialRateLimiter(base=0.005, maximum=1000)
    assert [limiter.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    assert limiter.when("b") == 0.005
    assert limiter.num_requeues("a") == 4
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.005


async def test_the_rate_limiter_caps_the_delay_at_its_maximum() -> None:
    limiter: ItemExponentialRateLimiter[str] = ItemExponentialRateLimiter(base=0.005, maximum=1000)
    delays = [limiter.when("a") for _ in range(100)]
    assert max(delays) == 1000 and delays[-1] == 1000


async def test_a_failed_key_is_retried_after_its_backoff_and_counted() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    key = await queue.get()
    queue.add_rate_limited(key)  # the sync failed
    queue.done(key)
    assert queue.num_requeues("a") == 1
    assert await asyncio.wait_for(queue.get(), 1) == "a"
    queue.add_rate_limited("a")
    queue.done("a")
    assert queue.num_requeues("a") == 2
    assert await asyncio.wait_for(queue.get(), 1) == "a"
    queue.forget("a")  # the sync succeeded
    queue.done("a")
    assert queue.num_requeues("a") == 0


async def test_shutdown_wakes_waiting_workers_with_shut_down() -> None:
    queue: WorkQueue[str] = WorkQueue()
    waiting = [asyncio.create_task(queue.get()) for _ in range(3)]
    await asyncio.sleep(0)
    queue.shutdown()
    results = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(r, ShutDown) for r in results)
    with pytest.raises(ShutDown):
        await queue.get()


async def test_after_shutdown_queued_keys_are_dropped_and_adds_are_ignored() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.shutdown()
    queue.add("b")
    queue.add_after("c", 0.01)
    assert len(queue) == 0 and queue.shutting_down
    with pytest.raises(ShutDown):
        await queue.get()


async def test_shutdown_cancels_pending_delayed_adds() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 0.02)
    queue.add_rate_limited("b")
    queue.shutdown()
    await asyncio.sleep(0.05)
    assert len(queue) == 0


async def test_a_cancelled_worker_does_not_swallow_the_wake_up_meant_for_another() -> None:
    queue: WorkQueue[str] = WorkQueue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("a")  # wakes the first worker...
    first.cancel()  # ...which is cancelled before it runs
    assert await asyncio.wait_for(second, 1) == "a"
    with pytest.raises(asyncio.CancelledError):
        await first
