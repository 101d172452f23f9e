"""A clock for tests: it stands still until the test moves it (``step``, ``set``), and then ends the sleeps and
delayed adds whose time has come."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from minik.aio.clock import Clock, DelayingQueue, K


class FakeClock(Clock):
    """Wall-clock and monotonic time alike are ``now()``, which starts at ``start`` (default: the real time)."""

    def __init__(self, start: float | None = None) -> None:
        self._now = time.time() if start is None else start
        self._wakeups: list[tuple[float, DelayingQueue[Any], Any]] = []
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Return once the clock has been moved ``seconds`` on (at once for none)."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._now + seconds, woken))
        await woken

    def add_after(self, queue: DelayingQueue[K], key: K, seconds: float) -> None:
        if seconds <= 0:
            queue.add(key)
        else:
            self._wakeups.append((self._now + seconds, queue, key))

    def step(self, seconds: float) -> None:
        self.set(self._now + seconds)

    def set(self, when: float) -> None:
        self._now = when
        due = [w for w in self._wakeups if w[0] <= when]
        self._wakeups = [w for w in self._wakeups if w[0] > when]
        for _, queue, key in due:
            queue.add(key)
        woken = [s for s in self._sleepers if s[0] <= when]
        self._sleepers = [s for s in self._sleepers if s[0] > when]
        for _, sleeper in woken:
            if not sleeper.done():
                sleeper.set_result(None)
