"""Small asyncio helpers every long-running component uses: guarded tasks; and, in their own modules, exponential
back-off (``minik.aio.backoff``) and the clock (``minik.aio.clock``)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Coroutine
from typing import Any, TypeVar

import structlog

from minik.aio.backoff import Backoff

__all__ = ["Backoff", "start_task", "stop_task", "wake_one"]

log = structlog.get_logger("minik.aio")

T = TypeVar("T")


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
