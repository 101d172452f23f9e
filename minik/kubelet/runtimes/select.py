"""Choosing a runtime: docker when an engine answers, process otherwise (``auto``), or the one asked for."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import structlog

from minik.kubelet.runtimes.base import Runtime
from minik.pki.files import private_dir, write_private

log = structlog.get_logger("minik.kubelet")

RUNTIMES = ("auto", "docker", "process", "fake")


def kubelet_id(data_dir: Path) -> str:
    """This kubelet's identity on a shared engine, kept in DATA_DIR/id so that a restart adopts its containers."""
    path = data_dir / "id"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        private_dir(data_dir)
        value = uuid.uuid4().hex[:16]
        write_private(path, (value + "\n").encode())
        return value


async def docker_answers(timeout: float = 2.0) -> str | None:
    """None when a Docker engine answers, else why not."""
    import aiodocker

    try:
        async with asyncio.timeout(timeout):
            async with aiodocker.Docker() as docker:
                await docker.version()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means: no usable engine
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def open_runtime(kind: str, data_dir: Path) -> Runtime:
    if kind == "fake":
        from minik.kubelet.runtimes.fake import FakeRuntime

        return FakeRuntime()
    if kind == "auto":
        problem = await docker_answers()
        if problem is None:
            kind = "docker"
        else:
            log.warning("Docker does not answer; running pods as local processes", reason=problem)
            kind = "process"
    if kind == "docker":
        from minik.kubelet.runtimes.docker import DockerRuntime

        return DockerRuntime(kubelet_id(data_dir), seccomp_dir=data_dir / "seccomp")
    if kind == "process":
        from minik.kubelet.runtimes.process import ProcessRuntime

        return ProcessRuntime(kubelet_id(data_dir), data_dir / "processes")
    raise ValueError(f"unknown runtime {kind!r}: choose {', '.join(RUNTIMES)}")
