"""The controllers' work queue, with client-go's workqueue semantics.

- ``add(key)`` is a no-op while the key is already waiting: many events for one object become one sync.
- A key handed out by ``get()`` is *processing* until ``done(key)``; adding it meanwhile marks it dirty, and it is
  queued again only at ``done``, so no two workers ever sync the same key at once.
- ``add_after(key, seconds)`` adds later (the earliest of several pending delays wins);
  ``add_rate_limited(key)`` adds after a per-key exponential delay (5 ms doubling up to 1000 s) that grows with
  each retry until ``forget(key)``.

Shutting down is final: ``get()`` then raises ``ShutDown`` in every waiting and later caller, keys still queued
are dropped (client-go hands out what is left first; here workers stop at once), later adds are ignored, and
pending delayed adds are cancelled, so the queue leaves no timers or tasks behind.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from minik.aio import wake_one
from minik.aio.backoff import exponential

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)


class ShutDown(Exception):
    """Raised by ``WorkQueue.get()`` once the queue has been shut down: the worker should return."""


class RateLimiter(Protocol[K_contra]):
    def when(self, key: K_contra) -> float:
        """How long to wait before the key's next retry (and count the retry)."""
        ...

    def forget(self, key: K_contra) -> None: ...

    def num_requeues(self, key: K_contra) -> int: ...


class ItemExponentialRateLimiter(Generic[K]):
    """``base * 2**failures`` seconds per key, capped at ``maximum`` (client-go's default item limiter)."""

    def __init__(self, base: float = 0.005, maximum: float = 1000.0) -> None:
        self.base = base
        self.maximum = maximum
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        return exponential(self.base, self.maximum, failures)

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        return self._failures.get(key, 0)


class WorkQueue(Generic[K]):
    """A deduplicating FIFO of keys, with delayed and rate-limited adds. Single event loop, not thread-safe."""

    def __init__(self, rate_limiter: RateLimiter[K] | None = None, name: str = "") -> None:
        self.name = name
        self.rate_limiter: RateLimiter[K] = rate_limiter or ItemExponentialRateLimiter()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._getters: deque[asyncio.Future[None]] = deque()
        self._waiting: dict[K, asyncio.TimerHandle] = {}
        self._shutting_down = False

    def __len__(self) -> int:
        """Keys ready to be handed out (not those processing or waiting for a delay)."""
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return  # queued again by done()
        self._queue.append(key)
        self._wake_one()

    async def get(self) -> K:
        """The next key, waiting for one; it is processing until ``done(key)``. Raises ``ShutDown``."""
        while not self._queue or self._shutting_down:
            if self._shutting_down:
                raise ShutDown(self.name)
            waiter = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                woken = waiter.done() and not waiter.cancelled()
                waiter.cancel()
                try:
                    self._getters.remove(waiter)
                except ValueError:
                    pass
                if woken:
                    self._wake_one()  # pass on the wake-up this getter will not use
                raise
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        return key

    def done(self, key: K) -> None:
        """The worker has finished with ``key``; if it was added meanwhile, it is queued again now."""
        self._processing.discard(key)
        if key in self._dirty and not self._shutting_down:
            self._queue.append(key)
            self._wake_one()

    def add_after(self, key: K, seconds: float) -> None:
        """Add ``key`` after ``seconds``. A key already waiting keeps the earlier of the two times."""
        if self._shutting_down:
            return
        if seconds <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        pending = self._waiting.get(key)
        if pending is not None:
            if pending.when() <= loop.time() + seconds:
                return
            pending.cancel()
        self._waiting[key] = loop.call_later(seconds, self._ready, key)

    def _ready(self, key: K) -> None:
        self._waiting.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: K) -> None:
        """Retry ``key`` after its backoff: 5 ms, 10 ms, 20 ms, ... until ``forget(key)``."""
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: K) -> None:
        """The key succeeded: its next failure starts the backoff from the beginning again."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self.rate_limiter.num_requeues(key)

    def shutdown(self) -> None:
        """Stop: waiting and future ``get()`` calls raise ``ShutDown``; delayed adds are cancelled."""
        self._shutting_down = True
        for handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        self._queue.clear()
        self._dirty.clear()
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _wake_one(self) -> None:
        wake_one(self._getters)
