#!/usr/bin/env python3
"""Dynamic provisioning with WaitForFirstConsumer: how long a claim waits to be Bound once its pod is scheduled.

A real `minik up` in its own process (scheduler, controllers, simulated nodes; `--sync NORMAL`, plain HTTP on
loopback with the admin's token). The harness creates N claims of the default class (local-path,
WaitForFirstConsumer), each with a pod that mounts it (4 pairs in flight: a steady stream, as workloads start),
and watches the claims: the time
from the scheduler's choice (the claim's volume.kubernetes.io/selected-node annotation appears) to the claim Bound
is the figure, as p50 and p99; so is the whole way from the claim's create to Bound. The goal is a p99 under 1 s
once the pod is scheduled.

The anchor, measured in the same run on the same cluster, is the scheduling of as many bare pods (no volumes,
as many in flight): p99 of a pod's create to its spec.nodeName set, what one pass of the scheduler costs under
the same load.

    python scripts/bench_pvc.py [--claims 200] [--nodes 10]
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import benchlib  # noqa: E402

from minik.api.errors import StatusError  # noqa: E402
from minik.client import Client  # noqa: E402

#: claims (each with its pod) created at once: a steady stream, as workloads start, not a burst beyond what the
#: process can take (its latency would then be queueing)
IN_FLIGHT = 4
SELECTED_NODE = "volume.kubernetes.io/selected-node"
Obj = dict[str, Any]


def start_cluster(data: Path, port: int, nodes: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = open(data / "cluster.out", "wb")
    args = ["up", "--data-dir", str(data / "cluster"), "--port", str(port), "--sync", "NORMAL", "--no-node",
            "--fake-nodes", str(nodes), "--disable", "proxy", "--log-level", "warning", "--plain-http"]
    return subprocess.Popen([sys.executable, "-m", "minik", *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop_cluster(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def pod(name: str, claim: str | None) -> Obj:
    container: Obj = {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
    spec: Obj = {"containers": [container]}
    if claim is not None:
        container["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return {"metadata": {"name": name}, "spec": spec}


def claim(name: str) -> Obj:
    return {"metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


async def wait_nodes(api: Client, count: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            nodes = (await api.list("nodes"))["items"]
        except (StatusError, ConnectionError):
            nodes = []
        if sum(1 for n in nodes if any(c.get("type") == "Ready" and c.get("status") == "True"
                                       for c in n["status"].get("conditions") or [])) >= count:
            return
        await asyncio.sleep(0.2)
    raise TimeoutError("the nodes did not register")


async def watch_until(api: Client, resource: str, namespace: str, since: str, total: int,
                      seen: Any, timeout: float = 600) -> None:
    """Watch from ``since``, calling ``seen(obj, now)`` for every event, until it returns ``total`` truthy."""
    version = since
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        async with api.watch(resource, namespace, resource_version=version, timeout_seconds=60) as events:
            async for _kind, obj in events:
                version = obj["metadata"].get("resourceVersion", version)
                if seen(obj, time.perf_counter()) >= total:
                    return
    raise TimeoutError(f"{resource}: not all {total} got there")


async def create_all(api: Client, namespace: str, count: int, make: Any, created: dict[str, float],
                     in_flight: int) -> None:
    names = iter(range(count))

    async def creator() -> None:
        for i in names:
            for resource, body in make(i):
                if resource == "persistentvolumeclaims":
                    created[body["metadata"]["name"]] = time.perf_counter()
                await api.create(resource, body, namespace)

    await asyncio.gather(*(creator() for _ in range(in_flight)))


async def anchor(api: Client, count: int, in_flight: int) -> list[float]:
    """Bare pods: each pod's create to its spec.nodeName, in seconds."""
    await api.create("namespaces", {"metadata": {"name": "anchor"}})
    since = (await api.list("pods", "anchor", limit=1))["metadata"]["resourceVersion"]
    created: dict[str, float] = {}
    placed: dict[str, float] = {}

    def seen(obj: Obj, now: float) -> int:
        name = obj["metadata"]["name"]
        if (obj.get("spec") or {}).get("nodeName") and name not in placed:
            placed[name] = now
        return len(placed)

    watching = asyncio.create_task(watch_until(api, "pods", "anchor", since, count, seen))

    async def make_and_time() -> None:
        names = iter(range(count))

        async def creator() -> None:
            for i in names:
                name = f"anchor-{i:05d}"
                created[name] = time.perf_counter()
                await api.create("pods", pod(name, None), "anchor")
        await asyncio.gather(*(creator() for _ in range(in_flight)))

    await make_and_time()
    await watching
    return [placed[n] - created[n] for n in placed]


async def claims(api: Client, count: int, in_flight: int) -> tuple[list[float], list[float]]:
    """Claims with their pods: (selected node to Bound, claim create to Bound) per claim, in seconds."""
    await api.create("namespaces", {"metadata": {"name": "bench"}})
    since = (await api.list("persistentvolumeclaims", "bench", limit=1))["metadata"]["resourceVersion"]
    created: dict[str, float] = {}
    selected: dict[str, float] = {}
    bound: dict[str, float] = {}

    def seen(obj: Obj, now: float) -> int:
        name = obj["metadata"]["name"]
        if SELECTED_NODE in (obj["metadata"].get("annotations") or {}) and name not in selected:
            selected[name] = now
        if (obj.get("status") or {}).get("phase") == "Bound" and name not in bound:
            bound[name] = now
            selected.setdefault(name, now)
        return len(bound)

    watching = asyncio.create_task(watch_until(api, "persistentvolumeclaims", "bench", since, count, seen))
    await create_all(api, "bench", count, lambda i: [("persistentvolumeclaims", claim(f"data-{i:05d}")),
                                                     ("pods", pod(f"user-{i:05d}", f"data-{i:05d}"))], created,
                     in_flight)
    await watching
    span = max(bound.values()) - min(created.values())
    print(f"{count} claims with their pods, first create to last Bound: {span:.1f} s ({count / span:.0f} claims/s)")
    return [bound[n] - selected[n] for n in bound], [bound[n] - created[n] for n in bound]


async def measure(url: str, token: str | None, count: int, nodes: int, in_flight: int) -> dict[str, list[float]]:
    async with Client.http(url, token, timeout_seconds=120) as api:
        await wait_nodes(api, nodes)
        scheduled = await anchor(api, count, in_flight)
        after_scheduling, whole = await claims(api, count, in_flight)
    return {"anchor": scheduled, "selected_to_bound": after_scheduling, "create_to_bound": whole}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--in-flight", type=int, default=IN_FLIGHT, help="creates at once (claim and pod pairs)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="minik-bench-pvc-") as tmp:
        data = Path(tmp)
        port = benchlib.free_port()
        cluster = start_cluster(data, port, args.nodes)
        try:
            token = benchlib.admin_endpoint(data / "cluster").token
            result = asyncio.run(measure(f"http://127.0.0.1:{port}", token, args.claims, args.nodes, args.in_flight))
        finally:
            stop_cluster(cluster)
    n = args.claims
    figures = {key: (percentile(values, 50), percentile(values, 99)) for key, values in result.items()}
    anchor_p99 = figures["anchor"][1]
    p50, p99 = figures["selected_to_bound"]
    print(f"anchor: {n} bare pods, create to scheduled: p50 {figures['anchor'][0] * 1000:.0f} ms, "
          f"p99 {anchor_p99 * 1000:.0f} ms")
    print(f"{n} WaitForFirstConsumer claims with their pods, scheduled (selected node) to Bound: "
          f"p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms (goal: p99 under 1 s)")
    print(f"claim create to Bound: p50 {figures['create_to_bound'][0] * 1000:.0f} ms, "
          f"p99 {figures['create_to_bound'][1] * 1000:.0f} ms")
    anchor_label = f"{n} bare pods, create to scheduled, p99 (s)"
    benchlib.write_json(args.json, [
        benchlib.row(f"{n} WaitForFirstConsumer claims on {args.nodes} fake nodes, pod scheduled to claim Bound, "
                     f"p99 (s)", p99, anchor=anchor_label, anchor_value=anchor_p99, goal="< 1 s", met=p99 < 1.0),
        benchlib.row(f"{n} WaitForFirstConsumer claims, claim create to Bound, p99 (s)",
                     figures["create_to_bound"][1], anchor=anchor_label, anchor_value=anchor_p99)],
        {key: {"p50": p[0], "p99": p[1]} for key, p in figures.items()})


if __name__ == "__main__":
    main()
