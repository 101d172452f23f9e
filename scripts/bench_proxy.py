#!/usr/bin/env python3
"""The proxy's cost: requests/s and latency of HTTP requests to one busybox httpd pod, straight to the pod's IP
(the anchor) and through the proxy (the Service's node port, and its cluster IP through the NAT redirect), all in
the same run against one `minik up` on Docker.

    python scripts/bench_proxy.py [--seconds 4] [--rounds 3] [--connections 32] [--json out.json]

busybox httpd closes every connection after one response, so each request is a new TCP connection: through the
proxy, one accepted connection and one connection to the pod. Throughput is wrk with --connections; latency is
wrk with one connection (requests one after the other), so the added latency is the proxy's per-connection cost.
The paths take turns for several rounds and the medians are printed, since the machine may be shared.
Needs Docker, the local images (scripts/build_images.py), wrk (Debian's wrk) and root for the NAT rules.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
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

HTTPD = "mkdir -p /www && head -c 512 /dev/zero | tr '\\0' x > /www/index.html && exec httpd -f -p 8080 -h /www"
UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}



def conditions() -> dict[str, Any]:
    load = os.getloadavg()
    return {"date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(),
            "load average (1, 5, 15 min)": [round(x, 2) for x in load],
            "docker containers running": len(subprocess.run(["docker", "ps", "-q"], capture_output=True,
                                                             text=True).stdout.split())}


def wrk(url: str, seconds: int, connections: int) -> dict[str, float]:
    threads = max(1, min(2, connections))
    out = subprocess.run(["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--latency", url],
                         capture_output=True, text=True, check=True).stdout
    result = {"requests/s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))}  # type: ignore[union-attr]
    for pct in ("50", "99"):
        match = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if match:
            result[f"p{pct} ms"] = float(match.group(1)) * UNITS[match.group(2)]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        result["non-2xx"] = float(errors.group(1))
    return result


def median_run(runs: list[dict[str, float]]) -> dict[str, float]:
    """The median of each figure over the rounds."""
    return {key: statistics.median(r[key] for r in runs if key in r) for key in runs[0]}


async def setup(data: Path) -> dict[str, Any]:
    api = benchlib.admin_endpoint(data)  # the kubeconfig `minik up` wrote: the admin's token
    async with Client.http(api.server, api.token, ssl=api.ssl_context()) as client:
        container = {"name": "httpd", "image": "busybox:latest", "imagePullPolicy": "IfNotPresent",
                     "command": ["sh", "-c", HTTPD], "ports": [{"name": "http", "containerPort": 8080}]}
        await client.create("deployments", {"metadata": {"name": "bench"}, "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "bench"}},
            "template": {"metadata": {"labels": {"app": "bench"}}, "spec": {"containers": [container]}}}},
            "default")
        service = await client.create("services", {"metadata": {"name": "bench"}, "spec": {
            "type": "NodePort", "selector": {"app": "bench"}, "ports": [{"port": 80, "targetPort": "http"}]}},
            "default")

        async def pod_ip() -> str | None:
            endpoints = await client.get("endpoints", "bench", "default")
            addresses = [a["ip"] for s in endpoints.get("subsets") or [] for a in s.get("addresses") or []]
            return addresses[0] if addresses else None
        ip = await benchlib.poll(pod_ip, 60, "ready pod")
    return {"pod": f"http://{ip}:8080/", "node port": f"http://127.0.0.1:{service['spec']['ports'][0]['nodePort']}/",
            "cluster IP": f"http://{service['spec']['clusterIP']}/"}


def answers(url: str, timeout: float = 20.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=4, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the three paths (medians reported)")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("bench_proxy: needs wrk (apt-get install wrk)", file=sys.stderr)
        return 1
    data = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    port = benchlib.free_port()
    cidr = f"10.{random.randint(128, 250)}.{random.randint(0, 255)}.0/24"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    up = subprocess.Popen([sys.executable, "-m", "minik", "up", "--data-dir", str(data), "--port", str(port),
                           "--sync", "NORMAL", "--service-cidr", cidr, "--node-name", "bench-proxy",
                           "--plain-http"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    results: dict[str, Any] = {"conditions": conditions()}
    try:
        api = f"http://127.0.0.1:{port}"
        answers(f"{api}/readyz")
        urls = asyncio.run(setup(data))
        for url in urls.values():
            answers(url)
        for url in urls.values():  # warm up each path once
            wrk(url, 1, 4)
        runs: dict[str, dict[str, list[dict[str, float]]]] = {n: {"throughput": [], "sequential": []} for n in urls}
        for _ in range(args.rounds):  # interleaved, so that a burst of load elsewhere hits every path alike
            for name, url in urls.items():
                runs[name]["throughput"].append(wrk(url, args.seconds, args.connections))
                runs[name]["sequential"].append(wrk(url, args.seconds, 1))
        for name, kinds in runs.items():
            results[name] = {kind: median_run(values) for kind, values in kinds.items()}
        results["conditions"]["load average after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(30)
        kubelet = (data / "kubelet" / "id").read_text().strip() if (data / "kubelet" / "id").exists() else ""
        if kubelet:
            ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=minik.io/kubelet={kubelet}"],
                                 capture_output=True, text=True).stdout.split()
            if ids:
                subprocess.run(["docker", "rm", "-f", *ids], capture_output=True)
        shutil.rmtree(data, ignore_errors=True)
    anchor = results["pod"]
    print(f"conditions: {json.dumps(results['conditions'])}")
    print(f"medians of {args.rounds} rounds of {args.seconds} s per path; {args.connections} connections for req/s")
    print(f"{'path':<12} {'req/s':>9} {'ratio':>6}   {'1-conn req/s':>12} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'added p50 ms':>12}")
    for name in ("pod", "node port", "cluster IP"):
        r = results[name]
        ratio = r["throughput"]["requests/s"] / anchor["throughput"]["requests/s"]
        added = r["sequential"].get("p50 ms", 0.0) - anchor["sequential"].get("p50 ms", 0.0)
        print(f"{name:<12} {r['throughput']['requests/s']:>9,.0f} {ratio:>6.2f}   "
              f"{r['sequential']['requests/s']:>12,.0f} {r['sequential'].get('p50 ms', 0):>7.2f} "
              f"{r['sequential'].get('p99 ms', 0):>7.2f} {added:>12.2f}")
    rows = []
    for name in ("node port", "cluster IP"):
        r = results[name]
        rows.append(benchlib.row(f"req/s through the {name} ({args.connections} conns)",
                                 r["throughput"]["requests/s"], anchor="req/s to the pod IP",
                                 anchor_value=anchor["throughput"]["requests/s"]))
        rows.append(benchlib.row(f"added p50 ms through the {name} (1 conn)",
                                 r["sequential"].get("p50 ms", 0.0) - anchor["sequential"].get("p50 ms", 0.0)))
    benchlib.write_json(args.json, rows, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
