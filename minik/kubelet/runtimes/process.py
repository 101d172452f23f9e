"""The process runtime: each container's command runs as a local process (no image, no isolation, the node's
network), for machines without Docker. Env, restart policy, probes and logs work as on Docker; images do not exist
here (a container needs a command). Volumes are written as on Docker, in the pod's directory
(DATA_DIR/kubelet/pods/UID/volumes/NAME; the service account token volume too, its token kept renewed), but
nothing is mounted: a process sees the host's file system, so an in-cluster client does not find its token at
/var/run/secrets/kubernetes.io/serviceaccount. The processes belong to the kubelet: they stop with it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import structlog

from minik.aio import start_task, stop_task
from minik.kubelet.node import host_address
from minik.kubelet.runtimes.base import (
    ContainerConfig,
    ContainerInfo,
    ExecSession,
    OnChange,
    PodRecord,
    RuntimeFailure,
    SandboxInfo,
)
from minik.kubelet.runtimes.process_exec import ProcessExec
from minik.kubelet.runtimes.process_security import popen_options, unsupported
from minik.kubelet.runtimes.security import SecurityConfig, verify_run_as_non_root
from minik.pki.files import open_private

log = structlog.get_logger("minik.kubelet.process")

Obj = dict[str, Any]


def _read_range(path: Path, offset: int, length: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.read(length)


class ProcessRuntime:
    name = "process"
    simulated = False
    needs_config = True

    def __init__(self, kubelet_id: str, logs_dir: Path) -> None:
        self.kubelet_id = kubelet_id
        self.logs_dir = logs_dir
        self._pods: dict[str, PodRecord] = {}
        self._processes: dict[str, asyncio.subprocess.Process] = {}
        self._waiters: dict[str, asyncio.Task[None]] = {}
        self._log_paths: dict[str, Path] = {}
        #: container id -> (env, working dir, subprocess options): what an exec in the container runs with
        self._contexts: dict[str, tuple[dict[str, str], str | None, dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._on_change: OnChange = lambda uid: None
        self._address = host_address()

    def unsupported(self, security: SecurityConfig) -> list[str]:
        return unsupported(security)

    async def start(self, on_change: OnChange) -> None:
        self._on_change = on_change

    async def stop(self) -> None:
        for uid in list(self._pods):
            await self.remove_pod(uid, 2.0)

    async def version(self) -> str:
        return "process://1.0.0"

    async def pods(self) -> dict[str, PodRecord]:
        return dict(self._pods)

    async def pod(self, uid: str) -> PodRecord | None:
        return self._pods.get(uid)

    async def ensure_image(self, image: str, policy: str) -> bool | None:
        return None  # no images: the command runs on the host

    async def run_sandbox(self, pod: Obj) -> SandboxInfo:
        meta = pod["metadata"]
        record = self._pods.setdefault(meta["uid"], PodRecord(meta["uid"], meta.get("namespace", ""), meta["name"],
                                                              (pod.get("spec") or {}).get("nodeName", "")))
        record.sandbox = SandboxInfo(f"process-sandbox-{meta['uid']}", self._address, True)
        return record.sandbox

    async def start_container(self, pod: Obj, sandbox: SandboxInfo, config: ContainerConfig, attempt: int) -> str:
        argv = config.command + config.args
        if not argv:
            raise RuntimeFailure("RunContainerError", "the process runtime runs a container's command; "
                                                      f"container {config.name!r} has none")
        verify_run_as_non_root(pod, config.name, config.security, str(os.geteuid()))  # the "image" runs as we do
        uid = pod["metadata"]["uid"]
        container_id = f"{self.kubelet_id}-{next(self._ids)}"
        log_path = self.logs_dir / uid / f"{config.name}-{attempt}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOSTNAME": pod["metadata"]["name"],
               **config.env}
        cwd: str | None = None
        if config.working_dir:
            is_dir: bool = await asyncio.to_thread(os.path.isdir, config.working_dir)
            cwd = config.working_dir if is_dir else None
        options = popen_options(config.security)
        with os.fdopen(open_private(log_path), "ab") as output:  # a container's output: owner only
            try:
                process = await asyncio.create_subprocess_exec(
                    *argv, stdin=asyncio.subprocess.DEVNULL, stdout=output, stderr=output, env=env, cwd=cwd,
                    start_new_session=True, **options)
            except (OSError, subprocess.SubprocessError) as exc:
                raise RuntimeFailure("RunContainerError",
                                     f"cannot run {argv[0]!r}: {getattr(exc, 'strerror', None) or exc}") from None
        info = ContainerInfo(container_id, config.name, attempt, "running", started_at=time.time(),
                             image=config.image, image_id="", init=config.init)
        record = self._pods[uid]
        record.containers = [c for c in record.containers if c.name != config.name or c.attempt >= attempt - 1]
        record.containers.append(info)
        self._processes[container_id] = process
        self._log_paths[container_id] = log_path
        self._contexts[container_id] = (env, config.working_dir, options)
        self._waiters[container_id] = start_task(self._wait(uid, info, process), f"process {container_id}")
        return container_id

    async def _wait(self, uid: str, info: ContainerInfo, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        info.state, info.finished_at = "exited", time.time()
        info.exit_code = 128 - code if code < 0 else code  # killed by signal N: 128+N, as Docker reports
        info.reason = "Completed" if info.exit_code == 0 else "Error"
        self._processes.pop(info.id, None)
        self._waiters.pop(info.id, None)
        self._on_change(uid)

    async def stop_container(self, container_id: str, grace_seconds: float) -> None:
        process = self._processes.get(container_id)
        if process is None or process.returncode is not None:
            return
        waiter = self._waiters.get(container_id)
        for sig, wait in ((signal.SIGTERM, grace_seconds), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                await asyncio.wait_for(asyncio.shield(process.wait()), wait)
                break
            except TimeoutError:
                continue
        if waiter is not None:
            await asyncio.wait([waiter], timeout=1.0)

    async def remove_container(self, container_id: str) -> None:
        await self.stop_container(container_id, 0)
        for record in self._pods.values():
            record.containers = [c for c in record.containers if c.id != container_id]
        self._log_paths.pop(container_id, None)
        self._contexts.pop(container_id, None)

    async def remove_pod(self, uid: str, grace_seconds: float) -> None:
        record = self._pods.get(uid)
        if record is None:
            return
        await asyncio.gather(*(self.stop_container(c.id, grace_seconds) for c in record.containers))
        for info in record.containers:
            await stop_task(self._waiters.pop(info.id, None))
            self._log_paths.pop(info.id, None)
            self._contexts.pop(info.id, None)
        self._pods.pop(uid, None)

    async def exec(self, container_id: str, command: list[str], *, stdin: bool = False,
                   tty: bool = False) -> ExecSession:
        if container_id not in self._processes:
            raise RuntimeFailure("ExecError", f"container {container_id} is not running")
        env, cwd, options = self._contexts[container_id]
        return await ProcessExec.start(command, env, cwd, stdin=stdin, tty=tty, options=options)

    async def attach(self, container_id: str, *, stdin: bool = False, tty: bool = False) -> ExecSession:
        """A process's streams go to its log file, not to a terminal anyone could attach to."""
        raise RuntimeFailure("AttachError", "the process runtime cannot attach to a container: its output goes to "
                                            "its log (kubectl logs -f)")

    async def logs(self, container_id: str, *, follow: bool = False, tail_lines: int | None = None,
                   since_seconds: int | None = None, timestamps: bool = False) -> AsyncIterator[bytes]:
        path = self._log_paths.get(container_id)
        if path is None:
            raise RuntimeFailure("NotFound", f"container {container_id} not found")
        data = path.read_bytes()
        if tail_lines is not None:
            data = b"".join(data.splitlines(keepends=True)[-tail_lines:]) if tail_lines else b""
        if data:
            yield data
        offset = path.stat().st_size
        while follow and container_id in self._processes:
            await asyncio.sleep(0.2)
            size = path.stat().st_size
            if size > offset:
                yield await asyncio.to_thread(_read_range, path, offset, size - offset)
                offset = size
