"""Commands run inside Docker containers (`docker exec` through the API): one ``DockerExec`` per command, its
output demultiplexed into stdout and stderr, stdin half-closed on request, its terminal resized. A
``DockerAttach`` is the same over `docker attach`: the streams of the container's main process."""

from __future__ import annotations

import asyncio

import aiodocker
from aiodocker.containers import DockerContainer
from aiodocker.execs import Exec
from aiodocker.stream import Stream

from minik.kubelet.runtimes.base import RuntimeFailure

#: how long to wait for Docker to record an exec's exit code once its output ended
_EXIT_CODE_WAIT_SECONDS = 2.0


def docker_message(exc: aiodocker.DockerError) -> str:
    """Docker's own words for a failure (what Kubernetes shows in ErrImagePull and the like)."""
    return str(exc.message if hasattr(exc, "message") else exc).strip()


class _Streams:
    """A hijacked Docker connection carrying a process's stdin, stdout and stderr."""

    def __init__(self, stream: Stream, stdin: bool) -> None:
        self._stream = stream
        self._stdin_open = stdin

    async def read(self) -> tuple[int, bytes] | None:
        try:
            message = await self._stream.read_out()
        except (aiodocker.DockerError, OSError):
            return None
        if message is None:
            return None
        return (2 if message.stream == 2 else 1), bytes(message.data)

    async def write(self, data: bytes) -> None:
        if self._stdin_open and data:
            await self._stream.write_in(data)

    async def close_stdin(self) -> None:
        """Half-close the hijacked connection: the process reads EOF, its output keeps coming."""
        if not self._stdin_open:
            return
        self._stdin_open = False
        # aiodocker closes both directions in Stream.close(); the write side alone is its response's transport
        response = getattr(self._stream, "_resp", None)
        transport = response.connection.transport if response is not None and response.connection else None
        if transport is not None and transport.can_write_eof():
            transport.write_eof()

    async def close(self) -> None:
        await self._stream.close()


class DockerExec(_Streams):
    """One running `docker exec`: an ExecSession (minik.kubelet.runtimes.base)."""

    def __init__(self, execution: Exec, stream: Stream, stdin: bool) -> None:
        super().__init__(stream, stdin)
        self._exec = execution

    @classmethod
    async def start(cls, docker: aiodocker.Docker, container_id: str, command: list[str], *, stdin: bool,
                    tty: bool) -> DockerExec:
        try:
            execution = await docker.containers.container(container_id).exec(
                command, stdout=True, stderr=True, stdin=stdin, tty=tty)
            stream = execution.start(detach=False)
            await stream.__aenter__()  # connects: the command runs from here on
        except aiodocker.DockerError as exc:
            raise RuntimeFailure("ExecError", docker_message(exc)) from None
        return cls(execution, stream, stdin)

    async def resize(self, width: int, height: int) -> None:
        if width > 0 and height > 0:
            try:
                await self._exec.resize(w=width, h=height)
            except aiodocker.DockerError:
                pass  # the command ended, or it has no terminal

    async def exit_code(self) -> int | None:
        deadline = asyncio.get_running_loop().time() + _EXIT_CODE_WAIT_SECONDS
        while True:
            try:
                details = await self._exec.inspect()
            except aiodocker.DockerError:
                return None
            if not details.get("Running") and details.get("ExitCode") is not None:
                return int(details["ExitCode"])
            if asyncio.get_running_loop().time() > deadline:
                return None
            await asyncio.sleep(0.02)


class DockerAttach(_Streams):
    """An attachment to a running container's main process: an ExecSession whose end is a detach."""

    def __init__(self, container: DockerContainer, stream: Stream, stdin: bool) -> None:
        super().__init__(stream, stdin)
        self._container = container

    @classmethod
    async def start(cls, docker: aiodocker.Docker, container_id: str, *, stdin: bool) -> DockerAttach:
        container = docker.containers.container(container_id)
        try:
            stream = container.attach(stdout=True, stderr=True, stdin=stdin)
            await stream.__aenter__()  # connects: output from here on reaches the session
        except aiodocker.DockerError as exc:
            raise RuntimeFailure("AttachError", docker_message(exc)) from None
        return cls(container, stream, stdin)

    async def resize(self, width: int, height: int) -> None:
        if width > 0 and height > 0:
            try:
                await self._container.resize(w=width, h=height)
            except aiodocker.DockerError:
                pass  # the container stopped, or it has no terminal

    async def exit_code(self) -> int | None:
        return None  # an attachment has no exit code of its own: the container's shows in the pod's status
