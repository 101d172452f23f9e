"""The one interface the kubelet drives: a pod sandbox (the pod's network) and containers inside it.

The kubelet decides (what to start, restart, stop); a runtime only does and reports. Everything a runtime runs
carries the pod's uid, namespace and name, the container's name and attempt, the node's name and the kubelet's
id, so a kubelet that restarts finds (adopts) what it ran and never touches another kubelet's containers.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from minik.kubelet.runtimes.errors import RuntimeFailure
from minik.kubelet.runtimes.security import SecurityConfig

__all__ = ["RuntimeFailure", "SecurityConfig"]

Obj = dict[str, Any]

#: how much of a one-shot command's output is kept (probe and hook messages quote it; Kubernetes keeps 10 KiB)
MAX_EXEC_OUTPUT = 10 * 1024

#: called with a pod uid whenever something of that pod changed in the runtime (a container exited...)
OnChange = Callable[[str], None]


@dataclass
class Mount:
    host_path: str
    container_path: str
    read_only: bool = False


@dataclass
class ContainerConfig:
    """One container as the runtime should start it: the spec with env, mounts and ports already resolved."""

    name: str
    image: str
    command: list[str]
    args: list[str]
    working_dir: str | None
    env: dict[str, str]
    mounts: list[Mount]
    ports: list[Obj]
    resources: Obj
    tty: bool = False
    stdin: bool = False
    init: bool = False
    security: SecurityConfig = field(default_factory=SecurityConfig)
    termination_message_file: str = ""
    """the host file mounted at the container's terminationMessagePath (empty: none)"""
    termination_message_policy: str = "File"
    """File, or FallbackToLogsOnError: the end of the log when the file is empty and the container failed"""
    stdin_once: bool = False
    """stdin closes when the first attached client lets go of it (the container's stdinOnce)"""
    pid_namespace_of: str | None = None
    """The id of a running container whose process namespace this one joins (an ephemeral container's
    targetContainerName)."""
    ephemeral: bool = False


@dataclass
class ContainerInfo:
    """What the runtime reports of one container (one attempt of a spec container)."""

    id: str
    name: str
    attempt: int
    state: str
    """created, running or exited"""
    exit_code: int | None = None
    reason: str = ""
    """for exited containers: Completed, Error, OOMKilled"""
    message: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    image: str = ""
    image_id: str = ""
    init: bool = False


class ExecSession(Protocol):
    """A command running inside a container (`kubectl exec`, exec probes, exec hooks)."""

    async def read(self) -> tuple[int, bytes] | None:
        """The next piece of output as (1 for stdout or 2 for stderr, bytes); None once the command's output
        ended."""

    async def write(self, data: bytes) -> None:
        """Send to the command's stdin (when it was started with stdin)."""

    async def close_stdin(self) -> None:
        """End the command's stdin (EOF), output still flowing."""

    async def resize(self, width: int, height: int) -> None:
        """Resize the command's terminal (when it was started with a tty)."""

    async def exit_code(self) -> int | None:
        """The command's exit code once its output ended (None when the runtime cannot tell)."""

    async def close(self) -> None:
        """Let go of the command's streams."""


@dataclass
class SandboxInfo:
    id: str
    ip: str
    running: bool


@dataclass
class PodRecord:
    """Everything the runtime holds for one pod."""

    uid: str
    namespace: str
    name: str
    node: str
    sandbox: SandboxInfo | None = None
    containers: list[ContainerInfo] = field(default_factory=list)

    def latest(self, name: str) -> ContainerInfo | None:
        """The newest attempt of a spec container."""
        attempts = [c for c in self.containers if c.name == name]
        return max(attempts, key=lambda c: c.attempt) if attempts else None

    def previous(self, name: str) -> ContainerInfo | None:
        attempts = sorted((c for c in self.containers if c.name == name), key=lambda c: c.attempt)
        return attempts[-2] if len(attempts) > 1 else None


class Runtime(Protocol):
    name: str
    """docker, process or fake"""

    needs_config: bool
    """Whether start_container needs env, mounts and ports resolved (the fake runtime does not)."""

    simulated: bool
    """No real containers (the fake runtime): probes and hooks count as passed without running."""

    def unsupported(self, security: SecurityConfig) -> list[str]:
        """The securityContext fields of ``security`` this runtime cannot honour (SecurityConfig.set_fields
        names); the kubelet refuses to start a container that asks for any of them."""

    async def start(self, on_change: OnChange) -> None:
        """Connect; from now on call ``on_change(uid)`` whenever a pod's containers change on their own."""

    async def stop(self) -> None:
        """Disconnect. Containers keep running (a kubelet restart adopts them)."""

    async def version(self) -> str:
        """containerRuntimeVersion as the Node shows it: ``docker://20.10.24``."""

    async def pods(self) -> dict[str, PodRecord]:
        """Every pod this kubelet runs, by uid."""

    async def pod(self, uid: str) -> PodRecord | None:
        """One pod's sandbox and containers, None when the runtime holds nothing for it."""

    async def ensure_image(self, image: str, policy: str) -> bool | None:
        """Make the image present per imagePullPolicy: True when it was pulled, False when it was already there,
        None for a runtime without images. RuntimeFailure ErrImagePull / ErrImageNeverPull."""

    async def run_sandbox(self, pod: Obj) -> SandboxInfo:
        """Create and start the pod's sandbox (its network namespace and IP)."""

    async def start_container(self, pod: Obj, sandbox: SandboxInfo, config: ContainerConfig, attempt: int) -> str:
        """Create and start one container attempt in the sandbox; its id."""

    async def stop_container(self, container_id: str, grace_seconds: float) -> None:
        """SIGTERM, wait up to the grace period, SIGKILL."""

    async def remove_container(self, container_id: str) -> None: ...

    async def remove_pod(self, uid: str, grace_seconds: float) -> None:
        """Stop everything of the pod (containers first, then the sandbox) and remove it."""

    async def exec(self, container_id: str, command: list[str], *, stdin: bool = False,
                   tty: bool = False) -> ExecSession:
        """Start ``command`` in a running container; RuntimeFailure when it cannot start."""

    async def attach(self, container_id: str, *, stdin: bool = False, tty: bool = False) -> ExecSession:
        """Attach to the streams of a running container's main process (`kubectl attach`): its output from now
        on, and its stdin when it was started with one. Closing the session detaches; the process runs on (unless
        its stdin was stdinOnce: then it reads EOF). RuntimeFailure when the runtime cannot attach."""

    def logs(self, container_id: str, *, follow: bool = False, tail_lines: int | None = None,
             since_seconds: int | None = None, timestamps: bool = False) -> AsyncIterator[bytes]:
        """The container's output (stdout and stderr interleaved)."""
        ...


async def exec_sync(runtime: Runtime, container_id: str, command: list[str], timeout: float) -> tuple[int, bytes]:
    """Run ``command`` in the container to its end: (exit code, stdout and stderr together; 1 when the runtime
    cannot tell the code). TimeoutError past
    ``timeout`` seconds (the command may run on inside the container, as it does under Kubernetes)."""
    session = await runtime.exec(container_id, command)
    output = bytearray()
    try:
        async with asyncio.timeout(timeout):
            while (piece := await session.read()) is not None:
                if len(output) < MAX_EXEC_OUTPUT:
                    output += piece[1][:MAX_EXEC_OUTPUT - len(output)]
            code = await session.exit_code()
    finally:
        await session.close()
    return (code if code is not None else 1), bytes(output)  # an exit code nobody can tell is no success
