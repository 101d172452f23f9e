"""Termination messages: what an exited container wrote to its terminationMessagePath (a host file mounted
there), or with terminationMessagePolicy FallbackToLogsOnError, when it wrote nothing and failed, the end of its
log. Read once per exited container and kept (the container cannot change it any more)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

#: what Kubernetes reads of a termination message file
MAX_MESSAGE_BYTES = 4096
#: how much of the log FallbackToLogsOnError takes: 80 lines or 2048 bytes, whichever is smaller
FALLBACK_LINES = 80
FALLBACK_BYTES = 2048

LogTail = Callable[[str, int], Awaitable[bytes]]


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_MESSAGE_BYTES)
    except OSError:
        return b""


def create_message_file(path: Path) -> None:
    """An empty file for a container's termination message, writable whatever user the container runs as."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    path.chmod(0o666)


class TerminationMessages:
    def __init__(self, log_tail: LogTail) -> None:
        self.log_tail = log_tail
        self._read: dict[str, str] = {}  # container id -> its message

    async def read(self, container_id: str, file: str, policy: str, exit_code: int | None) -> str:
        """The message of an exited container ("" when it left none)."""
        known = self._read.get(container_id)
        if known is not None:
            return known
        message = (await asyncio.to_thread(_read, file)).decode("utf-8", "replace") if file else ""
        if not message and policy == "FallbackToLogsOnError" and exit_code not in (0, None):
            tail = await self.log_tail(container_id, FALLBACK_LINES)
            message = tail[-FALLBACK_BYTES:].decode("utf-8", "replace")
        if len(self._read) > 4096:  # containers come and go: forget the oldest
            self._read.pop(next(iter(self._read)))
        self._read[container_id] = message
        return message
