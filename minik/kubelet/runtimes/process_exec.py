"""Commands run "inside" a process-runtime container: a local process with the container's environment and
working directory (there is no isolation to enter). A tty request merges stderr into stdout; there is no
terminal to resize."""

from __future__ import annotations

import asyncio
import collections
import os
import subprocess
from typing import Any

from minik.aio import start_task, stop_task
from minik.kubelet.runtimes.base import RuntimeFailure

_CHUNK = 64 * 1024
_BACKLOG = 64


class ProcessExec:
    """One command as a local process: an ExecSession (minik.kubelet.runtimes.base)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self._output: collections.deque[tuple[int, bytes]] = collections.deque()
        self._changed = asyncio.Event()  # output arrived, a stream ended, or output was consumed
        streams = [(1, process.stdout), (2, process.stderr)]
        self._open = sum(1 for _, reader in streams if reader is not None)
        self._readers = [start_task(self._pump(channel, reader), f"exec output {channel}")
                         for channel, reader in streams if reader is not None]

    @classmethod
    async def start(cls, command: list[str], env: dict[str, str], cwd: str | None, *, stdin: bool,
                    tty: bool, options: dict[str, Any] | None = None) -> ProcessExec:
        """``options``: further subprocess options (the container's user and groups, as its process has)."""
        if not command:
            raise RuntimeFailure("ExecError", "no command given")
        workdir: str | None = None
        if cwd:
            is_dir: bool = await asyncio.to_thread(os.path.isdir, cwd)
            workdir = cwd if is_dir else None
        try:
            process = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT if tty else asyncio.subprocess.PIPE,
                env=env, cwd=workdir,
                start_new_session=True, **(options or {}))
        except (OSError, subprocess.SubprocessError) as exc:
            raise RuntimeFailure("ExecError",
                                 f"cannot run {command[0]!r}: {getattr(exc, 'strerror', None) or exc}") from None
        return cls(process)

    async def _pump(self, channel: int, reader: asyncio.StreamReader) -> None:
        try:
            while chunk := await reader.read(_CHUNK):
                while len(self._output) >= _BACKLOG:  # the reader is slow: let the pipe fill instead
                    self._changed.clear()
                    await self._changed.wait()
                self._output.append((channel, chunk))
                self._changed.set()
        finally:
            self._open -= 1
            self._changed.set()

    async def read(self) -> tuple[int, bytes] | None:
        while not self._output:
            if self._open == 0:
                return None
            self._changed.clear()
            await self._changed.wait()
        piece = self._output.popleft()
        self._changed.set()
        return piece

    async def write(self, data: bytes) -> None:
        if self._process.stdin is not None and not self._process.stdin.is_closing():
            self._process.stdin.write(data)
            try:
                await self._process.stdin.drain()
            except ConnectionError:
                pass  # the command no longer reads its stdin

    async def close_stdin(self) -> None:
        if self._process.stdin is not None and not self._process.stdin.is_closing():
            self._process.stdin.close()

    async def resize(self, width: int, height: int) -> None:
        return None

    async def exit_code(self) -> int | None:
        code = await self._process.wait()
        return 128 - code if code < 0 else code  # killed by signal N: 128+N, as a shell reports it

    async def close(self) -> None:
        if self._process.returncode is None:
            try:
                self._process.kill()
            except ProcessLookupError:
                pass
        await self.close_stdin()
        for reader in self._readers:
            await stop_task(reader)
        await self._process.wait()
