"""The one clock components read the time from and wait on. Production code uses ``SYSTEM_CLOCK``; tests pass
``minik.testing.clock.FakeClock``, whose time moves only when the test moves it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

K = TypeVar("K")
K_contra = TypeVar("K_contra", contravariant=True)


class DelayingQueue(Protocol[K_contra]):
    """What ``Clock.add_after`` hands keys to (minik.workqueue.WorkQueue)."""

    def add(self, key: K_contra) -> None: ...

    def add_after(self, key: K_contra, seconds: float) -> None: ...


class Clock:
    """The system's time. ``now`` is the wall clock, seconds since the epoch: what timestamps record and are
    compared with. ``monotonic`` never goes back: for intervals and deadlines within this process. ``sleep`` and
    ``add_after`` wait on it: a FakeClock ends them when the test moves it past their time."""

    # the system's own functions, so that reading the time costs no more than calling them directly
    now: Callable[[], float] = staticmethod(time.time)
    monotonic: Callable[[], float] = staticmethod(time.monotonic)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def add_after(self, queue: DelayingQueue[K], key: K, seconds: float) -> None:
        """Add ``key`` to ``queue`` once ``seconds`` have passed (with the system clock, the queue's own timer)."""
        queue.add_after(key, seconds)


SYSTEM_CLOCK = Clock()
