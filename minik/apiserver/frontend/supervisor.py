"""The front end in the API server's process: its own listener, and the worker processes that take it over."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
from aiohttp import web

import minik
from minik.apiserver.frontend.backend import WorkerLink
from minik.apiserver.frontend.wire import WorkerOptions

if TYPE_CHECKING:
    from minik.apiserver.server import ApiServer

log = structlog.get_logger("minik.apiserver.frontend")

#: how long a worker that died waits before it is started again, at most (doubling from 0.5 s)
MAX_RESTART_BACKOFF_SECONDS = 30.0


@dataclass(frozen=True)
class FrontendSettings:
    workers: int = 0
    """HTTP worker processes in front of the API server; 0 serves HTTP in the API server's own process."""

    shutdown_timeout_seconds: float = 10.0
    """How long requests in flight may take to finish at shutdown."""

    ready_timeout_seconds: float = 15.0
    """How long ``wait_ready`` waits for the workers; the API server serves by itself meanwhile (and after)."""


def listen(host: str, port: int, backlog: int = 1024) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: any free port). OSError (address in use...) as ``bind``
    raises it; SO_REUSEADDR only, so a port another program holds stays an error."""
    family, kind, proto, _name, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


class Frontend:
    """How the API server meets its clients.

    With no workers, the API server's own aiohttp site accepts on ``listener``. With workers, the API server
    still starts accepting at once (so it answers as soon as it can), then starts the worker processes; they
    inherit the listening socket, and once one is ready the API server stops accepting itself and leaves new
    connections to them. Connections it took before stay with it. If every worker is gone, it accepts again
    while they are restarted.
    """

    def __init__(self, api: "ApiServer", runner: web.BaseRunner, listener: socket.socket,
                 settings: FrontendSettings) -> None:
        self.api = api
        self.settings = settings
        self._runner = runner
        self._listener = listener
        self._site: web.SockSite | None = None
        self._workers = [_Worker(i, self) for i in range(settings.workers)]
        self._private_dir: Path | None = None
        self._ready = asyncio.Event()
        self._changed = asyncio.Event()
        self.stopping = asyncio.Event()
        self._control: asyncio.Task[None] | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._listener.getsockname()[:2]
        return str(host), int(port)

    @property
    def accepting_itself(self) -> bool:
        """Whether the API server's own process takes new connections (no worker is ready)."""
        return self._site is not None

    @property
    def worker_pids(self) -> list[int]:
        """The process ids of the workers that accept connections."""
        return [w.pid for w in self._workers if w.ready and w.pid is not None]

    @property
    def private_path(self) -> Path:
        assert self._private_dir is not None
        return self._private_dir / "api.sock"

    async def start(self) -> None:
        await self._accept()
        if not self._workers:
            return
        # the private listener relays what cannot travel as frames (WebSockets); a directory only this user may
        # enter keeps other users out
        self._private_dir = Path(tempfile.mkdtemp(prefix="minik-api-"))
        await web.UnixSite(self._runner, str(self.private_path)).start()
        self._control = asyncio.create_task(self._control_accepting(), name="minik-frontend-accepting")
        for worker in self._workers:
            worker.start()

    async def wait_ready(self) -> bool:
        """Wait (at most the ready timeout) until a worker accepts connections; False if none did."""
        if not self._workers:
            return True
        try:
            await asyncio.wait_for(self._ready.wait(), self.settings.ready_timeout_seconds)
        except asyncio.TimeoutError:
            log.warning("no api worker became ready; the API server keeps serving HTTP itself",
                        seconds=self.settings.ready_timeout_seconds)
            return False
        return True

    async def stop(self) -> None:
        """Stop the workers (each stops accepting, ends its streams and lets what is in flight finish). The API
        server's own listener is stopped with its runner."""
        self.stopping.set()
        await asyncio.gather(*(worker.stop() for worker in self._workers))
        if self._control is not None:
            self._changed.set()
            await self._control
        if self._private_dir is not None:
            shutil.rmtree(self._private_dir, ignore_errors=True)
        self._listener.close()  # the API server's own site listens on a duplicate until its runner stops

    def worker_changed(self) -> None:
        """A worker became ready or went away: accept here exactly when none is ready."""
        self._changed.set()

    # -- accepting -----------------------------------------------------------------------------------------
    async def _control_accepting(self) -> None:
        while not self.stopping.is_set():
            await self._changed.wait()
            self._changed.clear()
            if self.stopping.is_set():
                return
            if any(worker.ready for worker in self._workers):
                await self._leave_accepting()
                self._ready.set()
            else:
                self._ready.clear()
                await self._accept()

    async def _accept(self) -> None:
        if self._site is None:
            self._site = web.SockSite(self._runner, self._listener.dup())
            await self._site.start()
            log.info("api server accepting connections itself", address=self.address)

    async def _leave_accepting(self) -> None:
        if self._site is not None:
            site, self._site = self._site, None
            await site.stop()
            log.info("api workers accept the connections", address=self.address)

    def _worker_options(self, channel: socket.socket) -> WorkerOptions:
        return WorkerOptions(listen_fd=self._listener.fileno(), channel_fd=channel.fileno(), parent=os.getpid(),
                             private_path=str(self.private_path),
                             shutdown_timeout_seconds=self.settings.shutdown_timeout_seconds)


def _worker_env() -> dict[str, str]:
    """The environment of a worker: this one, with the minik this process runs first on the path."""
    env = dict(os.environ)
    root = str(Path(minik.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


class _Worker:
    """One worker process, started again (with back-off) whenever it exits while the front end runs."""

    def __init__(self, index: int, frontend: Frontend) -> None:
        self.name = f"api-worker-{index}"
        self.frontend = frontend
        self.ready = False
        self.pid: int | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._link: WorkerLink | None = None
        self._task: asyncio.Task[None] | None = None
        self._log = log.bind(worker=self.name)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"minik-{self.name}")

    async def _run(self) -> None:
        backoff = 0.5
        stopping = self.frontend.stopping
        while not stopping.is_set():
            try:
                code: int | None = await self._run_once()
            except OSError as exc:
                self._log.error("cannot start an api worker", error=str(exc))
                code = None
            if stopping.is_set():
                return
            self._log.error("api worker exited; starting it again", exit_code=code, seconds=backoff)
            try:
                await asyncio.wait_for(stopping.wait(), backoff)
            except asyncio.TimeoutError:
                backoff = min(backoff * 2, MAX_RESTART_BACKOFF_SECONDS)

    async def _run_once(self) -> int:
        ours, theirs = socket.socketpair()
        link = WorkerLink(self.frontend.api, self.name, on_ready=self._became_ready)
        try:
            await link.open(ours)
            options = self.frontend._worker_options(theirs)
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "minik.apiserver.frontend.worker", options.encode(),
                pass_fds=(options.listen_fd, options.channel_fd), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, env=_worker_env(), start_new_session=True)
        except BaseException:
            await link.close()
            raise
        finally:
            theirs.close()
        self._link, self._process, self.pid = link, process, process.pid
        try:
            return await process.wait()
        finally:
            self.ready = False
            self._link = None
            await link.close()
            self.frontend.worker_changed()

    def _became_ready(self) -> None:
        self.ready = True
        self._log.info("api worker accepting connections", pid=self.pid)
        self.frontend.worker_changed()

    async def stop(self) -> None:
        """Ask the worker to stop, wait for it to exit (killing it when it takes too long), and for its task."""
        process, link = self._process, self._link
        if link is not None:
            link.stop()
        if process is not None and process.returncode is None:
            try:
                await asyncio.wait_for(process.wait(), self.frontend.settings.shutdown_timeout_seconds + 5)
            except asyncio.TimeoutError:
                self._log.warning("api worker did not stop in time; killing it")
                process.send_signal(signal.SIGKILL)
        if self._task is not None:
            await self._task
