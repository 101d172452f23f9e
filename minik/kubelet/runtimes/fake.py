"""The fake runtime: no containers, only their life cycle, so one process can hold thousands of nodes.

A container is ``created`` on start and ``running`` after ``start_delay_seconds``; by default it runs until it
is stopped. Two pod annotations make its app containers exit on their own (for Jobs and restart tests):

- ``fake.minik.io/exit-code: "N"`` — exit with code N ...
- ``fake.minik.io/run-seconds: "S"`` — ... S seconds after it started running (default 0).

Init containers exit 0 as soon as they run. Stopping a container ends it at once with 143 (SIGTERM). Pod IPs
come from 10.128.0.0/9, one per sandbox. Image names starting with ``fake.invalid/`` fail to pull, as a missing
image would.
"""

from __future__ import annotations

import asyncio
import ipaddress
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

from minik.kubelet.runtimes.base import (
    ContainerConfig,
    ContainerInfo,
    ExecSession,
    OnChange,
    PodRecord,
    RuntimeFailure,
    SandboxInfo,
)
from minik.kubelet.runtimes.security import SecurityConfig

Obj = dict[str, Any]

EXIT_CODE_ANNOTATION = "fake.minik.io/exit-code"
RUN_SECONDS_ANNOTATION = "fake.minik.io/run-seconds"
_FIRST_IP = int(ipaddress.IPv4Address("10.128.0.1"))


class _FakeExec:
    """A command in a fake container: it prints nothing and succeeds."""

    async def read(self) -> tuple[int, bytes] | None:
        return None

    async def write(self, data: bytes) -> None:
        return None

    async def close_stdin(self) -> None:
        return None

    async def resize(self, width: int, height: int) -> None:
        return None

    async def exit_code(self) -> int | None:
        return 0

    async def close(self) -> None:
        return None


class FakeRuntime:
    name = "fake"
    simulated = True
    needs_config = False

    def __init__(self, start_delay_seconds: float = 0.0) -> None:
        self.start_delay_seconds = start_delay_seconds
        self._pods: dict[str, PodRecord] = {}
        self._ids = itertools.count(1)
        self._ips = itertools.count(0)
        self._timers: dict[str, asyncio.TimerHandle] = {}  # container id -> its next transition
        self._on_change: OnChange = lambda uid: None

    def unsupported(self, security: SecurityConfig) -> list[str]:
        return []  # nothing runs: there is nothing to confine

    async def start(self, on_change: OnChange) -> None:
        self._on_change = on_change

    async def stop(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    async def version(self) -> str:
        return "fake://1.0.0"

    async def pods(self) -> dict[str, PodRecord]:
        return dict(self._pods)

    async def pod(self, uid: str) -> PodRecord | None:
        return self._pods.get(uid)

    async def ensure_image(self, image: str, policy: str) -> bool | None:
        if image.startswith("fake.invalid/"):
            raise RuntimeFailure("ErrImagePull", f"pull access denied for {image}, repository does not exist")
        return False

    async def run_sandbox(self, pod: Obj) -> SandboxInfo:
        meta = pod["metadata"]
        record = self._pods.get(meta["uid"])
        if record is None:
            record = PodRecord(meta["uid"], meta.get("namespace", ""), meta["name"],
                               (pod.get("spec") or {}).get("nodeName", ""))
            self._pods[record.uid] = record
        ip = str(ipaddress.IPv4Address(_FIRST_IP + next(self._ips) % (1 << 23)))
        record.sandbox = SandboxInfo(f"sandbox-{next(self._ids)}", ip, True)
        return record.sandbox

    async def start_container(self, pod: Obj, sandbox: SandboxInfo, config: ContainerConfig, attempt: int) -> str:
        uid = pod["metadata"]["uid"]
        record = self._pods[uid]
        container_id = f"{next(self._ids):064x}"
        info = ContainerInfo(container_id, config.name, attempt, "created", image=config.image,
                             image_id=f"fake://{config.image}", init=config.init)
        record.containers = [c for c in record.containers if c.name != config.name or c.attempt >= attempt - 1]
        record.containers.append(info)
        annotations = pod["metadata"].get("annotations") or {}
        exit_code: int | None = 0 if config.init else None
        run_seconds = 0.0
        if not config.init and EXIT_CODE_ANNOTATION in annotations:
            try:
                exit_code = int(annotations[EXIT_CODE_ANNOTATION])
                run_seconds = float(annotations.get(RUN_SECONDS_ANNOTATION) or 0)
            except ValueError:
                exit_code = None
        self._later(info, self.start_delay_seconds, lambda: self._run(uid, info, exit_code, run_seconds))
        return container_id

    def _later(self, info: ContainerInfo, delay: float, then: Any) -> None:
        loop = asyncio.get_running_loop()
        self._timers[info.id] = loop.call_later(delay, then) if delay > 0 else loop.call_soon(then)  # type: ignore[assignment]

    def _run(self, uid: str, info: ContainerInfo, exit_code: int | None, run_seconds: float) -> None:
        self._timers.pop(info.id, None)
        if info.state != "created":
            return
        info.state, info.started_at = "running", time.time()
        if exit_code is not None:
            self._later(info, run_seconds, lambda: self._exit(uid, info, exit_code))
        self._on_change(uid)

    def _exit(self, uid: str, info: ContainerInfo, code: int, reason: str | None = None) -> None:
        self._timers.pop(info.id, None)
        if info.state == "exited":
            return
        info.state, info.exit_code, info.finished_at = "exited", code, time.time()
        info.reason = reason or ("Completed" if code == 0 else "Error")
        self._on_change(uid)

    def _find(self, container_id: str) -> tuple[str, ContainerInfo] | None:
        for uid, record in self._pods.items():
            for info in record.containers:
                if info.id == container_id:
                    return uid, info
        return None

    async def stop_container(self, container_id: str, grace_seconds: float) -> None:
        found = self._find(container_id)
        if found is not None:
            timer = self._timers.pop(container_id, None)
            if timer is not None:
                timer.cancel()
            uid, info = found
            if info.state == "created":
                info.state, info.exit_code, info.finished_at, info.reason = "exited", 128, time.time(), "Error"
            self._exit(uid, info, 143)

    async def remove_container(self, container_id: str) -> None:
        found = self._find(container_id)
        if found is not None:
            uid, info = found
            self._pods[uid].containers.remove(info)

    async def remove_pod(self, uid: str, grace_seconds: float) -> None:
        record = self._pods.pop(uid, None)
        if record is not None:
            for info in record.containers:
                timer = self._timers.pop(info.id, None)
                if timer is not None:
                    timer.cancel()

    async def exec(self, container_id: str, command: list[str], *, stdin: bool = False,
                   tty: bool = False) -> ExecSession:
        found = self._find(container_id)
        if found is None or found[1].state != "running":
            raise RuntimeFailure("ExecError", f"container {container_id} is not running")
        return _FakeExec()

    async def attach(self, container_id: str, *, stdin: bool = False, tty: bool = False) -> ExecSession:
        found = self._find(container_id)
        if found is None or found[1].state != "running":
            raise RuntimeFailure("AttachError", f"container {container_id} is not running")
        return _FakeExec()

    async def logs(self, container_id: str, *, follow: bool = False, tail_lines: int | None = None,
                   since_seconds: int | None = None, timestamps: bool = False) -> AsyncIterator[bytes]:
        if self._find(container_id) is None:
            raise RuntimeFailure("NotFound", f"container {container_id} not found")
        if False:  # pragma: no cover - a fake container prints nothing
            yield b""
