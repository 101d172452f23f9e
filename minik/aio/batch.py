"""Bytes from many producers sent as one message per turn of the event loop.

A relay that carries many connections over one socket (port-forward) gets their pieces one at a time; sending
each as it comes costs a message, a TLS record and a system call apiece. A ``Batcher`` queues them and its task
sends whatever accumulated since it last ran in one go, in order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from minik.aio import start_task, stop_task

log = structlog.get_logger("minik.aio.batch")

#: what a send may raise when the other side is gone
GONE = (ConnectionError, OSError, RuntimeError)


class Batcher:
    def __init__(self, send: Callable[[bytes], Awaitable[object]], name: str, high_water: int = 1 << 20) -> None:
        """``send`` writes one message; ``high_water``: queued bytes above which ``room`` waits."""
        self._send = send
        self._high_water = high_water
        self._out: list[bytes] = []
        self._size = 0
        self._wake = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._idle = asyncio.Event()
        self._idle.set()
        #: the send failed (the other side is gone): what is added from then on is dropped
        self.failed = False
        self._task = start_task(self._run(), name)

    def add(self, data: bytes) -> None:
        if self.failed:
            return
        self._out.append(data)
        self._size += len(data)
        self._idle.clear()
        self._wake.set()
        if self._size > self._high_water:
            self._room.clear()

    async def room(self) -> None:
        """Wait while more than the high-water mark is queued (the producer's back-pressure)."""
        await self._room.wait()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            out, self._out, self._size = self._out, [], 0
            self._room.set()
            if out and not self.failed:
                try:
                    await self._send(out[0] if len(out) == 1 else b"".join(out))
                except GONE as exc:
                    log.debug("batch send failed", error=str(exc))
                    self.failed = True
            if not self._out:
                self._idle.set()

    async def close(self, flush_seconds: float = 1.0) -> None:
        """Send what is queued (for at most ``flush_seconds``), then stop."""
        if not self.failed:
            try:
                async with asyncio.timeout(flush_seconds):
                    await self._idle.wait()
            except TimeoutError:
                pass
        self.failed = True
        self._room.set()
        await stop_task(self._task)
