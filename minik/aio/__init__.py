"""Small asyncio helpers every long-running component uses: guarded tasks and exponential backoff."""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Coroutine
from typing import Any, TypeVar

import structlog

log = structlog.get_logger("minik.aio")

T = TypeVar("T")


class Backoff:
    """Exponential backoff: ``next()`` returns ``initial``, then ``initial * factor``, ... capped at ``maximum``.

    ``jitter`` adds up to that fraction of each delay at random, so many clients retrying together spread out.
    """

    def __init__(self, initial: float = 0.2, maximum: float = 30.0, factor: float = 2.0, jitter: float = 0.0) -> None:
        if initial <= 0 or maximum < initial or factor < 1:
            raise ValueError("need 0 < initial <= maximum and factor >= 1")
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self._current = initial

    def next(self) -> float:
        delay = self._current
        self._current = min(self._current * self.factor, self.maximum)
        if self.jitter:
            delay = min(delay * (1 + random.random() * self.jitter), self.maximum)
        return delay

    def reset(self) -> None:
        self._current = self.initial


def _log_failure(task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        return
    exc = task.exception()  # also marks the exception as retrieved
    if exc is not None:
        log.error("task failed", task=task.get_name(), exc_info=exc)


def start_task(coro: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
    """Start ``coro`` as a named task whose failure is logged rather than lost.

    The caller owns the task and must end it with ``stop_task`` (or await it): a guarded task is never fire-and-forget.
    """
    task = asyncio.get_running_loop().create_task(coro, name=name)
    task.add_done_callback(_log_failure)
    return task


async def stop_task(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` and wait until it has finished. Its own failure was logged by ``start_task``; a cancellation
    of the task calling this one still propagates."""
    if task is None:
        return
    if not task.done():
        task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
    except Exception:  # noqa: BLE001 - logged by the done callback
        pass


def wake_one(waiters: deque[asyncio.Future[None]]) -> bool:
    """Resolve the first of ``waiters`` that still waits (dropping those cancelled meanwhile); False when none."""
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(None)
            return True
    return False
