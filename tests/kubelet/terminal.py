"""Real kubectl on a pseudo-terminal, as a user at a shell runs `kubectl attach -it`, `run -it` or `debug -it`:
type into it and wait for what it prints, with deadlines rather than sleeps."""

from __future__ import annotations

import asyncio
import fcntl
import os
import struct
import termios
import time

from tests.e2e.kubectl_helpers import Kubectl


class Terminal:
    def __init__(self, process: asyncio.subprocess.Process, leader: int) -> None:
        self.process = process
        self.leader = leader
        self.output = ""
        self._closed = False
        self._more = asyncio.Event()
        asyncio.get_running_loop().add_reader(leader, self._read)

    @classmethod
    async def start(cls, kubectl: Kubectl, *args: str, rows: int = 30, columns: int = 100) -> Terminal:
        leader, follower = os.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        process = await asyncio.create_subprocess_exec(*kubectl.command(*args), env=kubectl.env, stdin=follower,
                                                       stdout=follower, stderr=follower, start_new_session=True)
        os.close(follower)
        return cls(process, leader)

    def _read(self) -> None:
        try:
            chunk = os.read(self.leader, 4096)
        except OSError:  # kubectl exited: the other side of the terminal is gone
            chunk = b""
        if not chunk:
            self._closed = True
            asyncio.get_running_loop().remove_reader(self.leader)
        self.output += chunk.decode("utf-8", "replace")
        self._more.set()

    async def expect(self, text: str, timeout: float = 30.0, since: int = 0) -> int:
        """Wait until ``text`` shows in the output after position ``since``; the position after it."""
        deadline = time.monotonic() + timeout
        while (found := self.output.find(text, since)) < 0:
            if self._closed or time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never showed; the terminal shows:\n{self.output}")
            self._more.clear()
            try:
                await asyncio.wait_for(self._more.wait(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                pass
        return found + len(text)

    def send(self, text: str) -> None:
        os.write(self.leader, text.encode())

    async def wait(self, timeout: float = 30.0) -> int:
        """kubectl's exit code, once it exited (and the terminal's last output was read)."""
        code = await asyncio.wait_for(self.process.wait(), timeout)
        deadline = time.monotonic() + 5
        while not self._closed and time.monotonic() < deadline:
            self._more.clear()
            try:
                await asyncio.wait_for(self._more.wait(), 0.5)
            except TimeoutError:
                break
        return code

    def close(self) -> None:
        if not self._closed:
            asyncio.get_running_loop().remove_reader(self.leader)
            self._closed = True
        os.close(self.leader)
        if self.process.returncode is None:
            self.process.kill()
