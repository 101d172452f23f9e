#!/usr/bin/env python3
"""StatefulSet ordering: a StatefulSet of 100 replicas, podManagementPolicy OrderedReady, on simulated nodes, from
create to every pod Ready. Each pod is created only once its predecessor is Running and Ready, so the ordering
costs at least one round trip per replica (controller -> API -> scheduler -> kubelet -> API -> controller).

The cluster is a real `minik up` in its own process (scheduler, controllers and fake nodes inside it, the proxy
and the local node disabled, `--sync NORMAL`); the harness talks to it over HTTP. The anchor, measured in the same
run on the same cluster, is a Deployment of the same size from create to all Ready: the same pods without the
ordering. The ratio is the StatefulSet's time over the Deployment's (it says what the ordering costs; no goal).

    python scripts/bench_statefulset.py [--replicas 100] [--nodes 10]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import benchlib  # noqa: E402
from bench_controllers import conditions, container, start_cluster, stop_cluster, until, wait_nodes  # noqa: E402

from minik.client import Client  # noqa: E402
from minik.cluster import ClusterSettings  # noqa: E402

Obj = dict[str, Any]


def workload(kind: str, name: str, replicas: int, **spec: Any) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [container("app:1")]}},
                     **spec}}


async def all_ready(api: Client, resource: str, name: str, namespace: str, replicas: int, timeout: float) -> float:
    """The time once the controller reports every replica Ready for the object's generation."""
    async def done() -> bool:
        obj = await api.get(resource, name, namespace)
        s = obj.get("status") or {}
        return s.get("observedGeneration", 0) >= obj["metadata"]["generation"] and \
            s.get("readyReplicas") == replicas == s.get("replicas")
    await until(done, timeout, 0.05)
    return time.perf_counter()


async def measure(url: str, token: str | None, replicas: int, nodes: int) -> dict[str, float]:
    async with Client.http(url, token, timeout_seconds=120) as api:
        await wait_nodes(api, nodes)
        for namespace in ("deploy", "sts"):
            await api.create("namespaces", {"metadata": {"name": namespace}})

        began = time.perf_counter()
        await api.create("deployments", workload("Deployment", "web", replicas), "deploy")
        deployment = await all_ready(api, "deployments", "web", "deploy", replicas, 600) - began

        began = time.perf_counter()
        await api.create("statefulsets", workload("StatefulSet", "web", replicas, serviceName="web",
                                                  podManagementPolicy="OrderedReady"), "sts")
        statefulset = await all_ready(api, "statefulsets", "web", "sts", replicas, 1800) - began
    return {"deployment": deployment, "statefulset": statefulset}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    print(f"before: {conditions()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="minik-bench-sts-") as tmp:
        data = Path(tmp)
        port = benchlib.free_port()
        cluster = start_cluster(data, port, args.nodes)
        try:
            token = benchlib.admin_endpoint(data / "cluster").token  # once `minik up` serves
            result = asyncio.run(measure(f"http://127.0.0.1:{port}", token, args.replicas, args.nodes))
        finally:
            stop_cluster(cluster)
    n = args.replicas
    ratio = result["statefulset"] / result["deployment"]
    print(f"anchor: Deployment of {n:,} on {args.nodes} fake nodes, create to all Ready: "
          f"{result['deployment']:.2f} s")
    print(f"StatefulSet of {n:,} (OrderedReady), create to all Ready: {result['statefulset']:.2f} s "
          f"({1000 * result['statefulset'] / n:.1f} ms per ordered pod), ratio to the anchor {ratio:.1f}")
    delay = next(f.default for f in dataclasses.fields(ClusterSettings) if f.name == "fake_start_delay_seconds")
    print(f"of each ordered pod, the fake runtime's container start is {1000 * float(delay):.0f} ms (the floor of "
          f"{n:,} in order: {n * float(delay):.1f} s)")
    print(f"after: {conditions()}", flush=True)
    benchlib.write_json(args.json, [
        benchlib.row(f"StatefulSet of {n:,} (OrderedReady) on {args.nodes} fake nodes, create to all Ready (s)",
                     result["statefulset"], anchor=f"Deployment of {n:,} to all Ready (s)",
                     anchor_value=result["deployment"])], result)


if __name__ == "__main__":
    main()
