#!/usr/bin/env python3
"""Idle footprint: the resident memory of `minik up` (every component, its local node on this machine's runtime)
once it is ready, its node is Ready and it has settled, next to a bare aiohttp app's, measured in the same run.

    python scripts/bench_idle.py [--settle 15] [--runtime auto] [--json out.json]

Goal: at most 80 MB resident.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import benchlib

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from minik import kubeconfig  # noqa: E402
from minik.kubeconfig import Endpoint  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GOAL_MB = 80.0


def memory(pid: int) -> dict[str, float]:
    """VmRSS, VmHWM (peak) and the anonymous part of the resident set, in MB (10^6 bytes)."""
    fields: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0]) * 1024 / 1e6
    return fields


def tree_memory(pid: int) -> dict[str, float]:
    """``memory`` of the process, with the private memory (anonymous and shared-memory pages) of its children
    added to its resident set: `minik up`'s store writer is a child process, whose file-backed pages are the
    Python and SQLite libraries the parent maps too."""
    fields = memory(pid)
    fields["children_private"] = 0.0
    for child in benchlib.with_children(pid)[1:]:
        try:
            lines = Path(f"/proc/{child}/status").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssShmem"):
                fields["children_private"] += int(value.split()[0]) * 1024 / 1e6
    for key in ("VmRSS", "VmHWM"):
        fields[key] = fields.get(key, 0.0) + fields["children_private"]
    return fields


def get_json(url: str, endpoint: Endpoint | None = None) -> dict | None:
    """GET ``url`` as JSON; with ``endpoint`` (the cluster's kubeconfig), over HTTPS with its CA and token."""
    request = urllib.request.Request(url)
    context = None
    if endpoint is not None:
        if endpoint.token:
            request.add_header("Authorization", f"Bearer {endpoint.token}")
        made = endpoint.ssl_context()
        context = made if isinstance(made, ssl.SSLContext) else None
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return json.loads(response.read()) if response.status == 200 else None
    except (urllib.error.URLError, ConnectionError, OSError, json.JSONDecodeError):
        return None


def wait_for(check: object, process: subprocess.Popen[bytes], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if process.poll() is not None:
            raise RuntimeError(f"{what}: the process exited with {process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not after {timeout:.0f} s")
        time.sleep(0.1)


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, OSError):
        return False



def node_ready(kubeconfig_path: Path) -> bool:
    """True once the cluster's kubeconfig is written and its API lists a Ready node."""
    if not kubeconfig_path.exists():
        return False
    endpoint = kubeconfig.endpoint(kubeconfig_path)
    nodes = get_json(f"{endpoint.server}/api/v1/nodes", endpoint)
    return bool(nodes) and any(c.get("type") == "Ready" and c.get("status") == "True"
                               for n in nodes["items"] for c in (n.get("status") or {}).get("conditions") or [])


def settled_rss(process: subprocess.Popen[bytes], settle: float) -> dict[str, float]:
    """Sleep ``settle`` seconds, then sample the memory five times a second apart: the last sample and the peak."""
    time.sleep(settle)
    samples = []
    for _ in range(5):
        samples.append(tree_memory(process.pid))
        time.sleep(1)
    return {**samples[-1], "max_rss": max(s["VmRSS"] for s in samples)}


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def remove_containers(data: Path) -> None:
    """The containers the local kubelet made, if it ran on Docker (none are expected when idle)."""
    kubelet = data / "kubelet" / "id"
    if not kubelet.exists():
        return
    label = f"label=minik.io/kubelet={kubelet.read_text().strip()}"
    found = subprocess.run(["docker", "ps", "-aq", "--filter", label], capture_output=True, text=True)
    if found.returncode == 0 and found.stdout.split():
        subprocess.run(["docker", "rm", "-f", *found.stdout.split()], capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settle", type=float, default=15.0, help="seconds to wait once the node is Ready")
    parser.add_argument("--runtime", default="auto", choices=["auto", "docker", "process", "fake"])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        data = Path(tmp) / "data"
        port = benchlib.free_port()
        minik = subprocess.Popen([sys.executable, "-m", "minik", "up", "--data-dir", str(data), "--port", str(port),
                                  "--runtime", args.runtime, "--log-file", os.devnull],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            # `minik up` as users run it: HTTPS with its own CA; its kubeconfig says how to reach it
            wait_for(lambda: node_ready(data / "kubeconfig"), minik, 60, "local node Ready")
            ours = settled_rss(minik, args.settle)
        finally:
            stop(minik)
            remove_containers(data)
        bare_script = Path(tmp) / "bare.py"
        bare_script.write_text(benchlib.BARE_APP)
        port = benchlib.free_port()
        bare = subprocess.Popen([sys.executable, str(bare_script), str(port)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: _ok(f"http://127.0.0.1:{port}/readyz"), bare, 30, "bare app ready")
            theirs = settled_rss(bare, 1.0)
        finally:
            stop(bare)
    rss, peak = ours["VmRSS"], ours["VmHWM"]
    print(f"minik up idle (local node on runtime {args.runtime}, settled {args.settle:g} s): "
          f"RSS {rss:.1f} MB (anonymous {ours['RssAnon']:.1f}, file-backed {ours['RssFile']:.1f}, the store writer's "
          f"private memory {ours['children_private']:.1f}), "
          f"peak {peak:.1f} MB")
    print(f"bare aiohttp app: RSS {theirs['VmRSS']:.1f} MB   ratio {rss / theirs['VmRSS']:.2f}   "
          f"goal <= {GOAL_MB:.0f} MB: {'met' if rss <= GOAL_MB else 'NOT met'}")
    benchlib.write_json(args.json, [
        benchlib.row("minik up idle, local node: resident memory (MB)", rss, anchor="bare aiohttp app RSS (MB)",
                     anchor_value=theirs["VmRSS"], goal=f"<= {GOAL_MB:.0f} MB", met=rss <= GOAL_MB),
        benchlib.row("minik up idle: peak resident memory (MB)", peak)], {"minik": ours, "bare": theirs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
