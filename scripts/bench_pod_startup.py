#!/usr/bin/env python3
"""Pod start-up on the Docker node: 50 pods (a pause sandbox plus one busybox app container each) created at
once, create-to-Running p50 and p99, next to raw Docker starting the same 50 pause + app pairs at once through
its API (create and start the pause container, then the app container in its network namespace: what
`docker run` does, without the CLI's process start), measured in the same run.

    python scripts/bench_pod_startup.py [--pods 50] [--rounds 1] [--json out.json]

The pods are created with spec.nodeName set, so the figure is the node's (watch -> worker -> Docker -> status
write) plus the API round trips, not the scheduler's. Goal: minik's p99 at most 1.2x raw Docker's p99.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiodocker
import benchlib

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minik import log as logging_setup  # noqa: E402
from minik.client import Client  # noqa: E402
from minik.cluster import Cluster, ClusterSettings  # noqa: E402
from minik.kubelet.component import NodeComponent  # noqa: E402
from minik.kubelet.runtimes.images import PAUSE_IMAGE  # noqa: E402
from minik.kubelet.runtimes.select import kubelet_id  # noqa: E402

NODE = "bench-node"
APP_IMAGE = "busybox:latest"
APP_COMMAND = ["sleep", "3600"]
RAW_LABEL = "minik.io/bench-raw"


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


async def remove_labelled(docker: aiodocker.Docker, label: str) -> None:
    filters = json.dumps({"label": [label]})
    async with docker._query("containers/json", params={"all": "1", "filters": filters}) as response:  # noqa: SLF001
        containers = await response.json()
    await asyncio.gather(*(docker.containers.container(c["Id"]).delete(force=True) for c in containers))


# -- raw Docker ---------------------------------------------------------------------------------------------
async def raw_pair(docker: aiodocker.Docker, run: str, index: int) -> float:
    began = time.perf_counter()
    labels = {RAW_LABEL: run}
    pause = await docker.containers.create({"Image": PAUSE_IMAGE, "Labels": labels,
                                            "HostConfig": {"IpcMode": "shareable"}},
                                           name=f"bench-raw-{run}-{index}-pause")
    await pause.start()
    await pause.show()  # its IP, as a kubelet reads it
    app = await docker.containers.create({"Image": APP_IMAGE, "Cmd": APP_COMMAND, "Labels": labels,
                                          "HostConfig": {"NetworkMode": f"container:{pause.id}",
                                                         "IpcMode": f"container:{pause.id}"}},
                                         name=f"bench-raw-{run}-{index}-app")
    await app.start()
    return time.perf_counter() - began


async def measure_raw(docker: aiodocker.Docker, count: int) -> list[float]:
    run = uuid.uuid4().hex[:8]
    try:
        return list(await asyncio.gather(*(raw_pair(docker, run, i) for i in range(count))))
    finally:
        await remove_labelled(docker, f"{RAW_LABEL}={run}")


# -- minik --------------------------------------------------------------------------------------------------
def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            # no service account token: the controllers, whose root CA publisher writes the ConfigMap a token
            # volume projects, are not running here, and raw Docker mounts nothing either
            "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": False,
                     "containers": [{"name": "app", "image": APP_IMAGE, "imagePullPolicy": "IfNotPresent",
                                     "command": APP_COMMAND}]}}


async def measure_minik(client: Client, count: int, prefix: str) -> list[float]:
    names = [f"{prefix}-{i}" for i in range(count)]
    sent: dict[str, float] = {}
    running: dict[str, float] = {}
    listing = await client.list("pods", "default", limit=1)
    watch = client.watch("pods", "default", resource_version=listing["metadata"]["resourceVersion"])

    async def observe() -> None:
        async with watch:
            async for event in watch:
                obj = event.object
                name = obj["metadata"]["name"]
                if name in sent and name not in running and (obj.get("status") or {}).get("phase") == "Running":
                    running[name] = time.perf_counter()
                    if len(running) == count:
                        return

    observer = asyncio.get_running_loop().create_task(observe())
    await asyncio.sleep(0.1)

    async def create(name: str) -> None:
        sent[name] = time.perf_counter()
        await client.create("pods", pod(name))

    await asyncio.gather(*(create(name) for name in names))
    await asyncio.wait_for(observer, 300)
    return [running[name] - sent[name] for name in names]


async def delete_all(client: Client, names: list[str]) -> None:
    await asyncio.gather(*(client.delete("pods", name, "default") for name in names))
    deadline = time.monotonic() + 120
    while (await client.list("pods", "default"))["items"] and time.monotonic() < deadline:
        await asyncio.sleep(0.2)


async def main(count: int, rounds: int) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="minik-bench-pods-"))
    logging_setup.configure("warning", path=data_dir / "minik.log")
    settings = ClusterSettings(data_dir=data_dir, port=0, plain_http=True, synchronous="NORMAL", node_name=NODE,
                               node_runtime="docker", disabled=frozenset({"scheduler", "controllers", "proxy"}))
    raw: list[float] = []
    ours: list[float] = []
    async with aiodocker.Docker() as docker:
        cluster = Cluster(settings)
        await cluster.start()
        try:
            component: NodeComponent = cluster.components["node"]  # type: ignore[assignment]
            await asyncio.wait_for(component.local_ready.wait(), 60)
            assert component.local is not None
            await component.local.wait_registered(30)
            async with cluster.admin_client() as client:
                await measure_minik(client, 2, "warmup")  # images and code paths warm, as for raw Docker
                await delete_all(client, ["warmup-0", "warmup-1"])
                await measure_raw(docker, 2)
                for round_ in range(rounds):
                    raw += await measure_raw(docker, count)
                    ours += await measure_minik(client, count, f"bench{round_}")
                    await delete_all(client, [f"bench{round_}-{i}" for i in range(count)])
        finally:
            await cluster.stop()
            await remove_labelled(docker, f"minik.io/kubelet={kubelet_id(data_dir / 'kubelet')}")
    result = {"pods": count, "rounds": rounds,
              "minik_p50_s": statistics.median(ours), "minik_p99_s": percentile(ours, 0.99),
              "docker_p50_s": statistics.median(raw), "docker_p99_s": percentile(raw, 0.99)}
    result["p99_ratio"] = result["minik_p99_s"] / result["docker_p99_s"]
    result["p50_ratio"] = result["minik_p50_s"] / result["docker_p50_s"]
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    figures = asyncio.run(main(args.pods, args.rounds))
    print(f"{args.pods} pods at once, {args.rounds} round(s), create-to-Running on the Docker node:")
    print(f"  minik      p50 {figures['minik_p50_s']:.2f} s   p99 {figures['minik_p99_s']:.2f} s")
    print(f"  raw Docker p50 {figures['docker_p50_s']:.2f} s   p99 {figures['docker_p99_s']:.2f} s "
          "(pause + app pairs through the Docker API)")
    goal = "met" if figures["p99_ratio"] <= 1.2 else "not met"
    print(f"  ratio      p50 {figures['p50_ratio']:.2f}x   p99 {figures['p99_ratio']:.2f}x (goal p99 <= 1.2x: {goal})")
    benchlib.write_json(args.json, [
        benchlib.row(f"pod start-up p99 (s, {args.pods} at once, Docker node)", figures["minik_p99_s"],
                     anchor="raw Docker p99 (s, pause + app)", anchor_value=figures["docker_p99_s"],
                     goal="ratio <= 1.2", met=figures["p99_ratio"] <= 1.2),
        benchlib.row("pod start-up p50 (s)", figures["minik_p50_s"], anchor="raw Docker p50 (s)",
                     anchor_value=figures["docker_p50_s"])], figures)
