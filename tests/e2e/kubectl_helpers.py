"""Real kubectl for end-to-end tests: its own kubeconfig (the test's cluster, its CA and the admin's token, as
`minik up` writes it), cache directory and HOME, run as a subprocess while the cluster serves from the test's
event loop."""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from minik.cluster import Cluster
from tests.access import admin_kubeconfig

KUBECTL = shutil.which("kubectl")


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def rows(self) -> list[list[str]]:
        """The printed table, split on runs of spaces (cells minik prints never hold two spaces)."""
        return [[cell.strip() for cell in line.split("  ") if cell.strip()]
                for line in self.out.splitlines() if line.strip()]


class Kubectl:
    def __init__(self, cluster: Cluster, home: Path) -> None:
        assert KUBECTL is not None, "kubectl is not on the PATH (./scripts/test installs one)"
        self.config = admin_kubeconfig(cluster, home / "kubeconfig")
        self.home = home
        self.env = {**os.environ, "KUBECONFIG": str(self.config), "HOME": str(home), "KUBECACHEDIR": str(home / "cache")}

    def command(self, *args: str) -> list[str]:
        assert KUBECTL is not None
        return [KUBECTL, "--cache-dir", str(self.home / "cache"), *args]

    def manifest(self, name: str, obj: dict[str, Any]) -> str:
        path = self.home / name
        path.write_text(yaml.safe_dump(obj))
        return str(path)

    async def start(self, *args: str, stdin: bool = False) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            *self.command(*args), env=self.env, stdin=asyncio.subprocess.PIPE if stdin else None,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)

    async def __call__(self, *args: str, stdin: str | None = None, ok: bool = True) -> Result:
        process = await self.start(*args, stdin=stdin is not None)
        result = await finish(process, 60, stdin)
        if ok:
            assert result.code == 0, f"kubectl {' '.join(args)} failed: {result.err}"
        return result


async def finish(process: asyncio.subprocess.Process, timeout: float = 30, stdin: str | None = None) -> Result:
    out, err = await asyncio.wait_for(process.communicate(stdin.encode() if stdin is not None else None), timeout)
    return Result(process.returncode or 0, out.decode(), err.decode())
