"""What every benchmark under scripts/ reports in the same shape, so `scripts/bench/all` can put them in one table.

A benchmark builds its figures as rows (``row(...)``) and, when run with ``--json PATH``, writes them with
``write_json(PATH, rows, details)``: an object whose ``rows`` is the list of figures and whose ``details`` is
whatever else the benchmark wants to keep. Its own printed output stays its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minik.kubeconfig import Endpoint

#: the columns of a row, in the order the table prints them
COLUMNS = ("figure", "value", "anchor", "anchor_value", "ratio", "goal", "met")


def ratio(value: float | None, anchor: float | None) -> float | None:
    """value / anchor, or None when either is missing or the anchor is zero."""
    if value is None or anchor is None or not anchor:
        return None
    return value / anchor


def row(figure: str, value: float | None, *, anchor: str | None = None, anchor_value: float | None = None,
        goal: str | None = None, met: bool | None = None, ratio_value: float | None = None) -> dict[str, Any]:
    """One figure: its value, the anchor it is compared with (measured in the same run or published), the goal
    and whether it is met (None when the figure has no goal or could not be measured)."""
    return {"figure": figure, "value": value, "anchor": anchor, "anchor_value": anchor_value,
            "ratio": ratio_value if ratio_value is not None else ratio(value, anchor_value),
            "goal": goal, "met": None if value is None else met}


def machine() -> dict[str, Any]:
    """Where the figures were taken: CPUs, load average, Python, time."""
    return {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(), "machine": platform.machine(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def write_json(path: Path | None, rows: list[dict[str, Any]], details: Any = None) -> None:
    """Write ``{"rows": rows, "details": details, "machine": ...}`` to ``path`` (nothing when path is None)."""
    if path is None:
        return
    Path(path).write_text(json.dumps({"rows": rows, "details": details, "machine": machine()}, indent=2,
                                     default=str) + "\n")


def format_value(value: Any, digits: int | None = None) -> str:
    """A number as people read it: thousands separated, a few decimals for small ones; '-' for None."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if digits is None:
            digits = 0 if abs(value) >= 100 else 2 if abs(value) >= 1 else 3
        return f"{value:,.{digits}f}"
    return str(value)


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as an aligned text table: figure, value, anchor, ratio, goal, met."""
    grouped = any("bench" in r for r in rows)
    headers = (["bench"] if grouped else []) + ["figure", "value", "anchor", "ratio", "goal", "met"]
    cells = []
    for r in rows:
        anchor = r.get("anchor") or "-"
        if r.get("anchor_value") is not None:
            anchor = f"{anchor}: {format_value(r['anchor_value'])}"
        met = r.get("met")
        cells.append(([str(r.get("bench", ""))] if grouped else [])
                     + [str(r.get("figure")), format_value(r.get("value")), anchor, format_value(r.get("ratio"), 2),
                        r.get("goal") or "-", "-" if met is None else ("yes" if met else "NO")])
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]
    right = {2, 4} if grouped else {1, 3}

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if i in right else v.ljust(w)
                         for i, (v, w) in enumerate(zip(values, widths))).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(c) for c in cells)])


def with_children(pid: int) -> list[int]:
    """The process and its children (Linux /proc): `minik up` runs its store's writer as a child process, and its
    CPU time and private memory belong to the figure."""
    found = [pid]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def admin_endpoint(data_dir: Path, timeout: float = 60.0) -> Endpoint:
    """Where and as whom a benchmark reaches the cluster `minik up` serves from ``data_dir``: the kubeconfig it
    writes once it serves (its URL, the admin's token, and its CA over HTTPS). Every request needs the token, over
    `--plain-http` too: waits up to ``timeout`` seconds for the file."""
    from minik import kubeconfig

    path = data_dir / "kubeconfig"
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} was not written within {timeout:.0f}s")
        time.sleep(0.05)
    return kubeconfig.endpoint(path)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def poll(check: Any, timeout: float, what: str) -> Any:
    """``check()``'s first truthy answer, asked every 0.2 s (an error counts as not yet); RuntimeError after
    ``timeout`` seconds, naming ``what`` was awaited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = await check()
            if found:
                return found
        except Exception:  # noqa: BLE001 - not there yet
            pass
        await asyncio.sleep(0.2)
    raise RuntimeError(f"no {what} after {timeout}s")


#: the anchor of the start-up and footprint benchmarks: an aiohttp app that answers /readyz (run with its port)
BARE_APP = """
import sys
from aiohttp import web

async def ready(request):
    return web.Response(text="ok")

app = web.Application()
app.router.add_get("/readyz", ready)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
"""
