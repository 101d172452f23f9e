"""The shared back-off and clock: windows that double to a cap and start over after a quiet spell, and a fake
clock whose sleeps and delayed adds end only when it is moved."""

from __future__ import annotations

import asyncio

from minik.aio.backoff import Backoff, KeyedBackoff, exponential
from minik.testing.clock import FakeClock
from minik.workqueue import WorkQueue


def test_exponential_delays_double_from_the_first_to_the_cap_even_after_countless_failures() -> None:
    assert [exponential(0.5, 3.0, step) for step in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert exponential(0.005, 1000.0, 10_000) == 1000.0
    backoff = Backoff(initial=1.0, maximum=5.0)
    assert [backoff.next() for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    backoff.reset()
    assert backoff.next() == 1.0


def test_a_keyed_back_off_doubles_each_window_up_to_the_cap_and_starts_over_after_twice_the_cap() -> None:
    backoff: KeyedBackoff[str] = KeyedBackoff(10.0, 40.0)
    assert backoff.remaining("a", 0.0) == 0.0 and backoff.delay("a") is None
    assert backoff.step("a", 0.0) == 10.0
    assert backoff.remaining("a", 4.0) == 6.0 and backoff.remaining("b", 4.0) == 0.0
    assert [backoff.step("a", t) for t in (10.0, 30.0, 70.0, 110.0)] == [20.0, 40.0, 40.0, 40.0]
    assert backoff.step("a", 110.0 + 81.0) == 10.0  # quiet for more than twice the cap
    backoff.reset("a")
    assert backoff.remaining("a", 191.0) == 0.0 and backoff.step("a", 191.0) == 10.0
    backoff.step("b", 0.0)
    backoff.reset_where(lambda key: key == "b")
    assert backoff.delay("b") is None and backoff.delay("a") == 10.0


async def test_a_fake_clock_ends_sleeps_and_delayed_adds_only_when_moved_past_them() -> None:
    clock = FakeClock(100.0)
    queue: WorkQueue[str] = WorkQueue(name="test")
    clock.add_after(queue, "later", 5.0)
    clock.add_after(queue, "now", 0.0)
    sleeper = asyncio.ensure_future(clock.sleep(5.0))
    await asyncio.sleep(0)
    clock.step(4.0)
    await asyncio.sleep(0)
    assert not sleeper.done() and len(queue) == 1
    clock.step(1.0)
    await asyncio.wait_for(sleeper, 1.0)
    assert len(queue) == 2 and clock.now() == clock.monotonic() == 105.0
    queue.shutdown()
