#!/usr/bin/env python3
"""What `kubectl port-forward` costs: MB/s over one connection and requests/s over 32 keep-alive connections to
one pod, straight to the pod's IP (the anchor) and through `kubectl port-forward` (kubectl 1.32's SPDY session in
a WebSocket, ended by the API server, relayed to the kubelet, which dials the pod), in the same run against one
`minik up` on Docker.

    python scripts/bench_portforward.py [--megabytes 256] [--seconds 4] [--rounds 3] [--connections 32] [--json F]

The pod runs a small asyncio HTTP/1.1 server on minik's Python image: keep-alive answers of 512 bytes, and
``/big?N`` answers N MiB of zeros. Throughput is one GET of /big read by this process; requests/s is wrk with
--connections keep-alive connections. The two paths take turns for several rounds and the medians are printed,
since the machine may be shared. Needs Docker, the local images (scripts/build_images.py), kubectl and wrk.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import benchlib

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minik.client import Client  # noqa: E402

SERVER = r'''
import asyncio
SMALL = b"HTTP/1.1 200 OK\r\nContent-Length: 512\r\nContent-Type: text/plain\r\n\r\n" + b"x" * 512
CHUNK = bytes(1 << 20)
async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1]
            if path.startswith(b"/big"):
                size = int(path.partition(b"?")[2] or b"64")
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (size << 20))
                for _ in range(size):
                    writer.write(CHUNK)
                    await writer.drain()
            else:
                writer.write(SMALL)
                await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()
async def main():
    server = await asyncio.start_server(serve, "0.0.0.0", 8080, backlog=1024)
    await server.serve_forever()
asyncio.run(main())
'''
IMAGE = "minik/python-kubernetes:test"


def wrk(url: str, seconds: int, connections: int) -> float:
    threads = max(1, min(2, connections))
    out = subprocess.run(["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", url],
                         capture_output=True, text=True, check=True).stdout
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"wrk saw {errors.group(1)} failed requests to {url}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]


async def download(host: str, port: int, megabytes: int) -> float:
    """MB/s of one GET of /big over one connection (the time from the request to the last byte)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        began = time.perf_counter()
        writer.write(f"GET /big?{megabytes} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
        left = length
        while left > 0:
            chunk = await reader.read(min(left, 1 << 20))
            if not chunk:
                raise RuntimeError(f"the answer ended {left} bytes short")
            left -= len(chunk)
        return length / (1 << 20) / (time.perf_counter() - began)
    finally:
        writer.close()


async def setup(data: Path) -> tuple[str, str]:
    """The pod's name and IP once it is a ready endpoint."""
    api = benchlib.admin_endpoint(data)
    async with Client.http(api.server, api.token, ssl=api.ssl_context()) as client:
        container = {"name": "server", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                     "command": ["python3", "-c", SERVER], "ports": [{"containerPort": 8080}],
                     "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}
        await client.create("pods", {"metadata": {"name": "bench", "labels": {"app": "bench"}},
                                     "spec": {"containers": [container], "terminationGracePeriodSeconds": 0}},
                            "default")

        async def ready() -> tuple[str, str] | None:
            pod = await client.get("pods", "bench", "default")
            conditions = {c["type"]: c["status"] for c in (pod.get("status") or {}).get("conditions") or []}
            return ("bench", pod["status"]["podIP"]) if conditions.get("Ready") == "True" else None
        found: tuple[str, str] = await benchlib.poll(ready, 120, "ready pod")
        return found


def start_forward(kubeconfig: Path, cache: Path) -> tuple[subprocess.Popen[str], int]:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    process = subprocess.Popen([kubectl, "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache),
                                "port-forward", "--address", "127.0.0.1", "pod/bench", ":8080"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"127\.0\.0\.1:(\d+)", line)
    if found is None:
        process.kill()
        raise RuntimeError(f"kubectl port-forward said {line!r}: {process.communicate()[1]}")
    return process, int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=256, help="size of each download")
    parser.add_argument("--seconds", type=int, default=4, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the two paths (medians reported)")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    for tool in ("wrk", "kubectl"):
        if shutil.which(tool) is None:
            print(f"bench_portforward: needs {tool}", file=sys.stderr)
            return 1
    data = Path(tempfile.mkdtemp(prefix="bench-portforward-"))
    port = benchlib.free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    up = subprocess.Popen([sys.executable, "-m", "minik", "up", "--data-dir", str(data), "--port", str(port),
                           "--sync", "NORMAL", "--node-name", "bench-portforward", "--disable", "proxy"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    forward: subprocess.Popen[str] | None = None
    results: dict[str, Any] = {"conditions": {"cpus": os.cpu_count(),
                                              "load average before": [round(x, 2) for x in os.getloadavg()]}}
    try:
        _, ip = asyncio.run(setup(data))
        forward, local = start_forward(data / "kubeconfig", data / "kubectl-cache")
        paths = {"pod IP": (ip, 8080), "port-forward": ("127.0.0.1", local)}
        for host, target in paths.values():  # warm up each path once
            asyncio.run(download(host, target, 8))
            wrk(f"http://{host}:{target}/", 1, 4)
        runs: dict[str, dict[str, list[float]]] = {name: {"MB/s": [], "req/s": []} for name in paths}
        for _ in range(args.rounds):  # interleaved, so that a burst of load elsewhere hits both paths alike
            for name, (host, target) in paths.items():
                runs[name]["MB/s"].append(asyncio.run(download(host, target, args.megabytes)))
                runs[name]["req/s"].append(wrk(f"http://{host}:{target}/", args.seconds, args.connections))
        if forward.poll() is not None:
            raise RuntimeError(f"kubectl port-forward ended: {forward.communicate()[1]}")
        for name, figures in runs.items():
            results[name] = {key: statistics.median(values) for key, values in figures.items()}
            results[name]["runs"] = figures
        results["conditions"]["load average after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        if forward is not None and forward.poll() is None:
            forward.terminate()
            forward.wait(10)
        up.send_signal(signal.SIGTERM)
        up.wait(30)
        kubelet = (data / "kubelet" / "id").read_text().strip() if (data / "kubelet" / "id").exists() else ""
        if kubelet:
            ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=minik.io/kubelet={kubelet}"],
                                 capture_output=True, text=True).stdout.split()
            if ids:
                subprocess.run(["docker", "rm", "-f", *ids], capture_output=True)
        shutil.rmtree(data, ignore_errors=True)
    anchor, forwarded = results["pod IP"], results["port-forward"]
    print(f"conditions: {json.dumps(results['conditions'])}")
    print(f"medians of {args.rounds} rounds: one {args.megabytes} MiB download; wrk {args.seconds} s with "
          f"{args.connections} keep-alive connections")
    print(f"{'path':<14} {'MB/s':>9} {'ratio':>6}   {'req/s':>9} {'ratio':>6}")
    for name in ("pod IP", "port-forward"):
        r = results[name]
        print(f"{name:<14} {r['MB/s']:>9,.1f} {r['MB/s'] / anchor['MB/s']:>6.2f}   {r['req/s']:>9,.0f} "
              f"{r['req/s'] / anchor['req/s']:>6.2f}")
    rows = []
    for key, what in (("MB/s", "MB/s through kubectl port-forward (1 conn)"),
                      ("req/s", f"req/s through kubectl port-forward ({args.connections} keep-alive conns)")):
        ratio = forwarded[key] / anchor[key]
        rows.append(benchlib.row(what, forwarded[key], anchor=f"{key} to the pod IP", anchor_value=anchor[key],
                                 goal=">= 0.5x the pod IP", met=ratio >= 0.5))
    benchlib.write_json(args.json, rows, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
