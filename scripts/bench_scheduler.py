#!/usr/bin/env python3
"""Scheduler throughput in the shape of kube-scheduler's SchedulingBasic (scheduler_perf): simulated nodes, pods
already running, then pods created through the API as fast as the harness can, measured from the first create to
the last bind seen on a watch. The anchor is kube-scheduler's CI floor for SchedulingBasic 5000Nodes: 680 pods/s.

The cluster is a real `minik up` (the scheduler runs inside it, the other components disabled, `--sync NORMAL`)
in its own process; with --scheduler separate the API server runs alone and `minik scheduler --server URL` runs
as a second process, as kube-scheduler does (by default both runs, one after the other). Nodes are Node objects
written through the API with capacity, allocatable, the well-known labels (3 zones) and Ready; the running pods
are created bound to a node. --py-spy DIR samples the server processes (GIL holders only) over the measured
window, for where the time goes.

    python scripts/bench_scheduler.py [--nodes 5000] [--running 1000] [--pods 10000] [--workload basic]
                                      [--scheduler in-process|separate|both] [--py-spy DIR]
    python scripts/bench_scheduler.py --all      # 5,000 and 1,000 nodes basic, anti-affinity + spread, preemption
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import benchlib
import orjson

ROOT = Path(__file__).resolve().parent.parent
ANCHOR = 680.0
NAMESPACE = "default"



def start(args: list[str], data: Path, name: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = open(data / f"{name}.out", "wb")
    return subprocess.Popen([sys.executable, "-m", "minik", *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def node_body(i: int) -> dict[str, Any]:
    amounts = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "500Gi"}
    name = f"node-{i:05d}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  "kubernetes.io/arch": "amd64",
                                                  "topology.kubernetes.io/zone": f"zone-{i % 3}",
                                                  "topology.kubernetes.io/region": "region-1"}},
            "status": {"capacity": amounts, "allocatable": amounts,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


PRIORITY_CLASSES = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                     "value": value} for name, value in (("bench-low", 0), ("bench-high", 1000))]


def pod_body(name: str, workload: str, node: str | None = None, priority_class: str | None = None
             ) -> dict[str, Any]:
    labels = {"app": "bench", "name": name}
    spec: dict[str, Any] = {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.9",
                                            "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]}
    if node:
        spec["nodeName"] = node
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if workload == "affinity":
        labels["group"] = f"g{hash(name) % 50}"
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"group": labels["group"]}},
            "topologyKey": "kubernetes.io/hostname"}]}}
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                              "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"app": "bench"}}}]
    if workload == "preemption" and priority_class == "bench-high":
        spec["containers"][0]["resources"]["requests"] = {"cpu": "16", "memory": "1Gi"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
            "spec": spec}


#: requests in flight while creating (--connections)
CONNECTIONS = 32


async def post_all(session: aiohttp.ClientSession, url: str, bodies: list[dict[str, Any]],
                   then_status: bool = False) -> None:
    """POST every body with CONNECTIONS requests in flight (and PUT its status when asked: a node's)."""
    work = iter(bodies)

    async def worker() -> None:
        for body in work:
            async with session.post(url, data=orjson.dumps(body),
                                    headers={"Content-Type": "application/json"}) as r:
                created = await r.json(loads=orjson.loads)
                if r.status >= 300:
                    raise RuntimeError(f"POST {url}: {r.status} {created}")
            if then_status:
                created["status"] = body["status"]
                async with session.put(f"{url}/{created['metadata']['name']}/status", data=orjson.dumps(created),
                                       headers={"Content-Type": "application/json"}) as r:
                    if r.status >= 300:
                        raise RuntimeError(f"PUT status: {r.status} {await r.text()}")

    await asyncio.gather(*(worker() for _ in range(CONNECTIONS)))


async def wait_ready(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while True:
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(url + "/readyz") as r:
                    if r.status == 200:
                        return
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster did not become ready")
            await asyncio.sleep(0.05)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time the processes have used so far (Linux /proc): a figure that a loaded machine
    disturbs far less than wall-clock time."""
    total = 0
    for pid in [each for parent in pids for each in benchlib.with_children(parent)]:  # the writer included
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


#: where py-spy writes the profiles of the measured window (--py-spy DIR), one collapsed-stack file per process
PROFILE_DIR: Path | None = None


def start_profilers(pids: list[int]) -> list[subprocess.Popen[bytes]]:
    """py-spy sampling each server process from the first create (nothing without --py-spy)."""
    if PROFILE_DIR is None:
        return []
    PROFILE_DIR.mkdir(parents=True, exist_ok=True)
    return [subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "200", "--gil",
                              "--output", str(PROFILE_DIR / f"{pid}.txt")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for pid in pids]


def stop_profilers(profilers: list[subprocess.Popen[bytes]]) -> None:
    for profiler in profilers:
        profiler.send_signal(signal.SIGINT)  # py-spy writes its file when interrupted
    for profiler in profilers:
        profiler.wait(60)


async def measure(url: str, token: str | None, nodes: int, running: int, pods: int, workload: str,
                  scheduler_ready: Any, server_pids: Any) -> dict[str, float]:
    """``token``: the admin's (every request needs one, over plain HTTP too)."""
    async with aiohttp.ClientSession(base_url=url, connector=aiohttp.TCPConnector(limit=0),
                                     headers={"Authorization": f"Bearer {token}"} if token else None) as session:
        began = time.perf_counter()
        await post_all(session, "/api/v1/nodes", [node_body(i) for i in range(nodes)], then_status=True)
        if workload == "preemption":
            await post_all(session, "/apis/scheduling.k8s.io/v1/priorityclasses", PRIORITY_CLASSES)
            running_pods = [pod_body(f"low-{i}", workload, node=f"node-{i % nodes:05d}", priority_class="bench-low")
                            for i in range(running)]
            for p in running_pods:
                p["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "30", "memory": "1Gi"}
                # no kubelet runs here to confirm a graceful deletion: the victims go at once
                p["spec"]["terminationGracePeriodSeconds"] = 0
        else:
            running_pods = [pod_body(f"running-{i}", "basic", node=f"node-{i % nodes:05d}") for i in range(running)]
        await post_all(session, f"/api/v1/namespaces/{NAMESPACE}/pods", running_pods)
        setup = time.perf_counter() - began
        await scheduler_ready()
        async with session.get(f"/api/v1/namespaces/{NAMESPACE}/pods", params={"limit": "1"}) as r:
            rv = (await r.json(loads=orjson.loads))["metadata"]["resourceVersion"]
        bound: set[str] = set()
        done = asyncio.Event()
        last_bind = [0.0]

        async def watch() -> None:
            params = {"watch": "true", "resourceVersion": rv, "fieldSelector": "spec.nodeName!="}
            async with session.get(f"/api/v1/namespaces/{NAMESPACE}/pods", params=params,
                                   timeout=aiohttp.ClientTimeout(total=None)) as r:
                buffer = b""
                async for chunk in r.content.iter_any():
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if not line:
                            continue
                        event = orjson.loads(line)
                        name = event["object"]["metadata"]["name"]
                        if name.startswith("bench-") and name not in bound:
                            bound.add(name)
                            if len(bound) == pods:
                                last_bind[0] = time.perf_counter()
                                done.set()
                                return

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0.2)
        bodies = [pod_body(f"bench-{i:05d}", workload,
                           priority_class="bench-high" if workload == "preemption" else None) for i in range(pods)]
        cpu_before = [cpu_seconds([pid]) for pid in server_pids()]
        harness_before = time.process_time()
        profilers = start_profilers(server_pids())
        first_create = time.perf_counter()
        creating = asyncio.create_task(post_all(session, f"/api/v1/namespaces/{NAMESPACE}/pods", bodies))
        try:
            await asyncio.wait_for(asyncio.shield(done.wait()), timeout=max(120.0, pods / 50))
        except TimeoutError:
            print(f"  timed out with {len(bound)}/{pods} pods bound", file=sys.stderr)
            last_bind[0] = time.perf_counter()
        created_seconds = None
        await creating
        created_seconds = time.perf_counter() - first_create
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        elapsed = last_bind[0] - first_create
        cpu = [cpu_seconds([pid]) - before for pid, before in zip(server_pids(), cpu_before)]
        harness = time.process_time() - harness_before
        stop_profilers(profilers)
        return {"setup_seconds": setup, "seconds": elapsed, "bound": len(bound),
                "server_cpu_ms_per_pod": sum(cpu) * 1000 / max(len(bound), 1),
                "harness_cpu_ms_per_pod": harness * 1000 / max(len(bound), 1),
                "scheduler_cpu_ms_per_pod": cpu[1] * 1000 / max(len(bound), 1) if len(cpu) > 1 else 0.0,
                "pods_per_second": len(bound) / elapsed if elapsed > 0 else 0.0,
                "create_seconds": created_seconds}


def run(nodes: int, running: int, pods: int, workload: str, separate: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="minik-bench-sched-") as tmp:
        data = Path(tmp)
        port = benchlib.free_port()
        url = f"http://127.0.0.1:{port}"
        disabled = "controllers,node,proxy" + (",scheduler" if separate else "")
        cluster = start(["up", "--data-dir", str(data / "cluster"), "--port", str(port), "--sync", "NORMAL",
                         "--disable", disabled, "--log-level", "warning", "--plain-http"], data, "cluster")
        scheduler: subprocess.Popen[bytes] | None = None
        try:
            asyncio.run(wait_ready(url))
            token = benchlib.admin_endpoint(data / "cluster").token

            async def scheduler_ready() -> None:
                nonlocal scheduler
                if separate:
                    scheduler = start(["scheduler", "--kubeconfig", str(data / "cluster" / "kubeconfig")], data,
                                      "scheduler")
                    await asyncio.sleep(1.5)  # list + watch of nodes and pods

            def server_pids() -> list[int]:
                return [p.pid for p in (cluster, scheduler) if p is not None]

            return _uvloop_run(measure(url, token, nodes, running, pods, workload, scheduler_ready, server_pids))
        finally:
            if scheduler is not None:
                stop(scheduler)
            stop(cluster)


def _uvloop_run(main: Any) -> Any:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def report(label: str, result: dict[str, float], rows: list[dict[str, Any]] | None = None) -> None:
    rate = result["pods_per_second"]
    if rows is not None:
        rows.append(benchlib.row(f"scheduler pods/s ({label})", rate, anchor="kube-scheduler CI floor (pods/s)",
                                 anchor_value=ANCHOR, goal=">= 1,000 pods/s", met=rate >= 1000))
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{label}: {int(result['bound']):,} pods bound in {result['seconds']:.2f} s -> {rate:,.0f} pods/s, "
          f"ratio to kube-scheduler's {ANCHOR:.0f}: {rate / ANCHOR:.2f} "
          f"(creates alone took {result['create_seconds']:.2f} s; API server and scheduler CPU "
          f"{result['server_cpu_ms_per_pod']:.2f} ms per pod"
          + (f" (the scheduler's process {result['scheduler_cpu_ms_per_pod']:.2f})"
             if result["scheduler_cpu_ms_per_pod"] else "")
          + f", this harness {result['harness_cpu_ms_per_pod']:.2f}; set-up {result['setup_seconds']:.1f} s; "
          f"load average {load} on {os.cpu_count()} cores)", flush=True)


def main() -> None:
    global CONNECTIONS, PROFILE_DIR
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--running", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--workload", choices=["basic", "affinity", "preemption"], default="basic")
    parser.add_argument("--scheduler", choices=["in-process", "separate", "both"], default="both",
                        help="the scheduler inside `minik up`, as its own process (`minik scheduler`), or both runs")
    parser.add_argument("--separate-scheduler", action="store_const", const="separate", dest="scheduler",
                        help="the same as --scheduler separate")
    parser.add_argument("--all", action="store_true", help="every shape in the issue, one after the other")
    parser.add_argument("--connections", type=int, default=CONNECTIONS, help="creates in flight")
    parser.add_argument("--py-spy", type=Path, default=None, metavar="DIR",
                        help="profile the server processes over the measured window with py-spy into DIR")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    CONNECTIONS = args.connections
    PROFILE_DIR = args.py_spy
    modes = [False, True] if args.scheduler == "both" else [args.scheduler == "separate"]
    shapes = [(args.workload, args.nodes, args.running, args.pods)]
    if args.all:
        shapes = [("basic", 5000, 1000, 10000), ("basic", 1000, 1000, 10000), ("affinity", 1000, 0, 2000),
                  ("preemption", 500, 500, 500)]
    rows: list[dict[str, Any]] = []
    results: dict[str, Any] = {}
    for workload, nodes, running, pods in shapes:
        for separate in modes:
            label = (f"{workload}, {nodes:,} nodes, {running:,} running, {pods:,} created, "
                     + ("scheduler as its own process" if separate else "scheduler inside minik up"))
            results[label] = run(nodes, running, pods, workload, separate)
            report(label, results[label], rows)
    benchlib.write_json(args.json, rows, results)


if __name__ == "__main__":
    main()
