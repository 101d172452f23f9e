#!/usr/bin/env python3
"""Controllers at scale: a Deployment of 1,000 replicas on 100 simulated nodes, from create to every pod Ready,
then a rolling update of it (a new image) until every pod is replaced and Ready again.

The cluster is a real `minik up` in its own process (scheduler, controllers and 100 fake nodes inside it, the
proxy and the local node disabled, `--sync NORMAL`); the harness talks to it over HTTP. The anchor, measured in the
same run on the same cluster, is the same number of bare pods created by the harness itself (32 requests in
flight) until all are Ready: what the API server, scheduler and kubelets cost without any controller. The ratio
is the Deployment's time over the anchor's (lower is better; 1.0 would mean the controllers cost nothing).

    python scripts/bench_controllers.py [--replicas 1000] [--nodes 100]
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

CONNECTIONS = 32
Obj = dict[str, Any]



def start_cluster(data: Path, port: int, nodes: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = open(data / "cluster.out", "wb")
    args = ["up", "--data-dir", str(data / "cluster"), "--port", str(port), "--sync", "NORMAL", "--no-node",
            "--fake-nodes", str(nodes), "--disable", "proxy", "--log-level", "warning",
            "--plain-http"]  # plain HTTP on loopback (still with the admin's token), as the anchor is measured
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


def container(image: str) -> Obj:
    return {"name": "app", "image": image, "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}


def deployment(replicas: int) -> Obj:
    labels = {"app": "bench"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bench"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [container("app:1")]}}}}


def is_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


async def until(check: Any, timeout: float, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError("the cluster did not get there in time")
        await asyncio.sleep(interval)


async def wait_nodes(api: Client, count: int) -> None:
    async def ready() -> bool:
        try:
            nodes = (await api.list("nodes"))["items"]
        except (StatusError, ConnectionError):
            return False
        return sum(1 for n in nodes if any(c.get("type") == "Ready" and c.get("status") == "True"
                                           for c in n["status"].get("conditions") or [])) >= count
    await until(ready, 60)


async def count_ready(api: Client, namespace: str, total: int, since: str, timeout: float) -> float:
    """Watch pods in ``namespace`` from ``since`` until ``total`` distinct live pods are Ready; the time then."""
    ready: set[str] = set()
    deadline = time.monotonic() + timeout
    version = since
    while time.monotonic() < deadline:
        async with api.watch("pods", namespace, resource_version=version, timeout_seconds=60) as events:
            async for kind, pod in events:
                version = pod["metadata"].get("resourceVersion", version)
                name = pod["metadata"]["name"]
                if kind == "DELETED" or pod["metadata"].get("deletionTimestamp") or not is_ready(pod):
                    ready.discard(name)
                else:
                    ready.add(name)
                if len(ready) >= total:
                    return time.perf_counter()
    raise TimeoutError(f"only {len(ready)} of {total} pods Ready")


async def anchor(api: Client, pods: int) -> float:
    """Bare pods created by the harness until all are Ready (then removed again)."""
    await api.create("namespaces", {"metadata": {"name": "anchor"}})
    since = (await api.list("pods", "anchor", limit=1))["metadata"]["resourceVersion"]
    names = iter(range(pods))
    began = time.perf_counter()

    async def creator() -> None:
        for i in names:
            await api.create("pods", {"metadata": {"name": f"anchor-{i:05d}", "labels": {"app": "anchor"}},
                                      "spec": {"containers": [container("app:1")]}}, "anchor")

    watching = asyncio.create_task(count_ready(api, "anchor", pods, since, 600))
    await asyncio.gather(*(creator() for _ in range(CONNECTIONS)))
    done = await watching
    await api.delete("namespaces", "anchor")
    return done - began


async def wait_namespace_gone(api: Client, name: str) -> None:
    async def gone() -> bool:
        try:
            await api.get("namespaces", name)
        except StatusError as exc:
            return exc.code == 404
        return False
    await until(gone, 600, 0.5)


async def rolled_out(api: Client, replicas: int, timeout: float) -> float:
    async def done() -> bool:
        d = await api.get("deployments", "bench", "default")
        s = d.get("status") or {}
        return s.get("observedGeneration", 0) >= d["metadata"]["generation"] and \
            s.get("updatedReplicas") == replicas == s.get("availableReplicas") == s.get("replicas")
    await until(done, timeout, 0.1)
    return time.perf_counter()


async def measure(url: str, token: str | None, replicas: int, nodes: int) -> dict[str, float]:
    async with Client.http(url, token, timeout_seconds=120) as api:
        await wait_nodes(api, nodes)
        anchor_seconds = await anchor(api, replicas)
        await wait_namespace_gone(api, "anchor")

        began = time.perf_counter()
        await api.create("deployments", deployment(replicas), "default")
        create_seconds = await rolled_out(api, replicas, 900) - began

        began = time.perf_counter()
        await api.patch("deployments", "bench", {"spec": {"template": {"spec": {"containers": [
            container("app:2")]}}}}, "default")
        update_seconds = await rolled_out(api, replicas, 1800) - began
    return {"anchor": anchor_seconds, "create": create_seconds, "update": update_seconds}


def conditions() -> str:
    load = os.getloadavg()
    return f"{os.cpu_count()} CPUs, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    print(f"before: {conditions()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="minik-bench-ctrl-") as tmp:
        data = Path(tmp)
        port = benchlib.free_port()
        cluster = start_cluster(data, port, args.nodes)
        try:
            token = benchlib.admin_endpoint(data / "cluster").token  # once `minik up` serves
            result = asyncio.run(measure(f"http://127.0.0.1:{port}", token, args.replicas, args.nodes))
        finally:
            stop_cluster(cluster)
    n = args.replicas
    anchor_rate = n / result["anchor"]
    print(f"anchor: {n:,} bare pods created by the harness to all Ready: {result['anchor']:.1f} s "
          f"({anchor_rate:,.0f} pods/s)")
    print(f"Deployment of {n:,} on {args.nodes} nodes, create to all Ready: {result['create']:.1f} s "
          f"({n / result['create']:,.0f} pods/s), ratio to the anchor {result['create'] / result['anchor']:.2f}")
    print(f"rolling update (25% surge, 25% unavailable) to all replaced and Ready: {result['update']:.1f} s "
          f"({n / result['update']:,.0f} pods/s), ratio to the anchor {result['update'] / result['anchor']:.2f}")
    print(f"after: {conditions()}", flush=True)
    anchor_label = f"{n:,} bare pods to all Ready (s)"
    benchlib.write_json(args.json, [
        benchlib.row(f"Deployment of {n:,} on {args.nodes} fake nodes, create to all Ready (s)", result["create"],
                     anchor=anchor_label, anchor_value=result["anchor"]),
        benchlib.row(f"rolling update of {n:,} to all replaced and Ready (s)", result["update"],
                     anchor=anchor_label, anchor_value=result["anchor"])], result)


if __name__ == "__main__":
    main()
