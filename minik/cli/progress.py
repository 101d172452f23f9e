"""What `minik up` in the foreground says while it starts.

Not on a terminal (a pipe, a log file, a journal), one line per step, ``minik: ...``, the same from one release to
the next for whatever reads them, and no join command (its token would stay wherever that output is kept). On a
terminal, for a person: each part as it becomes ready (the proxy and the node finish starting after the API
answers, and are waited for), with how long it took, then the API's URL, the kubeconfig and the join command.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import click

from minik.cluster import Cluster, Step

#: how long the terminal display waits for the parts that finish starting in the background
READY_WAIT_SECONDS = 60.0

#: how `minik up` starts the join line
JOIN_PREFIX = "minik: add a node with: "

LABELS = {"store": "store", "apiserver": "API server", "scheduler": "scheduler", "controllers": "controllers",
          "proxy": "proxy", "node": "node"}


class PlainProgress:
    """Today's lines, for machines: ``minik: <step>``."""

    terminal = False

    def step(self, step: Step) -> None:
        click.echo(f"minik: {step.line}")

    async def after_start(self, cluster: Cluster) -> None:
        return None

    def ready(self, lines: list[str], seconds: float, url: str, kubeconfig: Path, join: str | None) -> None:
        for line in lines:
            click.echo(line)


class TerminalProgress:
    """Each part with a check mark as it becomes ready, then what a person needs to use the cluster."""

    terminal = True

    def __init__(self) -> None:
        self.began = time.monotonic()
        utf8 = (getattr(sys.stdout, "encoding", "") or "").lower().replace("-", "") == "utf8"
        self.mark = click.style("✓" if utf8 else "ok", fg="green")
        self.wait_mark = click.style("…" if utf8 else "..", fg="yellow")

    def _row(self, mark: str, part: str, detail: str, seconds: float | None = None) -> None:
        took = f"{seconds:6.2f}s" if seconds is not None else ""
        click.echo(f"  {mark} {LABELS.get(part, part):<12} {detail:<52} {took}".rstrip())

    def step(self, step: Step) -> None:
        if step.part in ("proxy", "node"):
            return  # started, not ready yet: shown by after_start
        detail = step.detail
        if step.part == "store":
            path, _, revision = detail.partition(" at revision ")
            detail = f"{Path(path).name} at revision {revision}" if revision else detail
        self._row(self.mark, step.part, detail, time.monotonic() - self.began)

    async def after_start(self, cluster: Cluster) -> None:
        """Show the proxy and the node as each becomes ready (or still starting after READY_WAIT_SECONDS)."""
        for name in sorted(cluster.settings.disabled):
            self._row(click.style("-", dim=True), name, "disabled")
        waits: dict[str, Awaitable[str]] = {}
        proxy: Any = cluster.components.get("proxy")
        if proxy is not None:
            waits["proxy"] = self._proxy_ready(proxy)
        node: Any = cluster.components.get("node")
        if node is not None:
            waits["node"] = self._node_ready(node)

        async def named(name: str, wait: Awaitable[str]) -> tuple[str, str]:
            return name, await wait

        pending = {asyncio.ensure_future(named(name, wait)): name for name, wait in waits.items()}
        deadline = time.monotonic() + READY_WAIT_SECONDS
        try:
            while pending:
                done, _ = await asyncio.wait(pending, timeout=max(0.0, deadline - time.monotonic()),
                                             return_when=asyncio.FIRST_COMPLETED)
                if not done:
                    break
                for task in done:
                    del pending[task]
                    name, detail = task.result()
                    self._row(self.mark, name, detail, time.monotonic() - self.began)
        finally:
            for task, name in pending.items():
                task.cancel()
                self._row(self.wait_mark, name, f"still starting after {READY_WAIT_SECONDS:.0f}s (see the log)")

    @staticmethod
    async def _proxy_ready(proxy: Any) -> str:
        await proxy.ready.wait()
        if proxy.iptables_problem is not None:
            return "no iptables here: cluster IPs unreachable from this machine"
        return "cluster DNS and cluster IPs ready" if proxy.dns is not None else "ready; the cluster DNS is not"

    @staticmethod
    async def _node_ready(node: Any) -> str:
        parts = []
        if node.settings.local_node:
            await node.local_ready.wait()
            await node.local.wait_registered()
            parts.append(f"{next(iter(node.local.nodes))} ({node.local.runtime.name})")
        if node.settings.fake_nodes:
            parts.append(f"{node.settings.fake_nodes} simulated")
        return ", ".join(parts) or "none for this machine (--no-node)"

    def ready(self, lines: list[str], seconds: float, url: str, kubeconfig: Path, join: str | None) -> None:
        del lines, seconds  # the lines for machines, and the time start() took (this counts the waits too)
        click.echo(click.style(f"minik: ready in {time.monotonic() - self.began:.2f}s", bold=True))
        click.echo(f"  API:         {url}")
        click.echo(f"  kubeconfig:  {kubeconfig}")
        click.echo(f"               (kubectl --kubeconfig {kubeconfig} ..., or minik get ...)")
        if join is not None and join.startswith(JOIN_PREFIX):
            click.echo(f"  add a node:  {join[len(JOIN_PREFIX):]}")
        elif join is not None:
            click.echo(join)
        click.echo("  stop:        Ctrl-C")


def for_output() -> PlainProgress | TerminalProgress:
    return TerminalProgress() if sys.stdout.isatty() else PlainProgress()
