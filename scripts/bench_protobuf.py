#!/usr/bin/env python3
"""Protobuf request bodies: what decoding them costs, each figure next to its JSON anchor from the same run.

1. decodes/s of one Deployment (a pod template with probes, env, resources, volumes): minik's protobuf decoder
   vs orjson.loads of the same object as JSON
2. Deployment creates/s over HTTP (a real API server on 127.0.0.1, components off, 8 connections):
   protobuf bodies vs JSON bodies

The protobuf bodies are made by the tests' table-driven encoder (tests/apiserver/protobuf_wire.py).

    python scripts/bench_protobuf.py [--decodes 5000] [--creates 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import benchlib
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "apiserver")]

from protobuf_wire import PROTOBUF, encode_object  # noqa: E402

from minik.apiserver import protobuf  # noqa: E402

CONNECTIONS = 8


def deployment(name: str) -> dict[str, Any]:
    container = {
        "name": "app", "image": "busybox:1.36", "command": ["sleep", "3600"],
        "env": [{"name": f"VAR_{i}", "value": str(i)} for i in range(5)],
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
        "volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "bench"}},
                     "template": {"metadata": {"labels": {"app": "bench"}},
                                  "spec": {"containers": [container],
                                           "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}]}}}}


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def bench_decode(count: int) -> tuple[float, float]:
    obj = deployment("web")
    as_json, as_protobuf = orjson.dumps(obj), encode_object(obj)
    assert protobuf.decode(as_protobuf) == obj
    start = time.perf_counter()
    for _ in range(count):
        protobuf.decode(as_protobuf)
    decoded = rate(count, time.perf_counter() - start)
    start = time.perf_counter()
    for _ in range(count):
        orjson.loads(as_json)
    return decoded, rate(count, time.perf_counter() - start)


async def bench_creates(count: int) -> tuple[float, float]:
    import aiohttp

    from minik.cluster import COMPONENTS, Cluster, ClusterSettings

    with tempfile.TemporaryDirectory() as data_dir:
        cluster = Cluster(ClusterSettings(data_dir=Path(data_dir), port=0, plain_http=True, synchronous="NORMAL",
                                          disabled=frozenset(COMPONENTS)))
        await cluster.start()
        try:
            admin = {"Authorization": f"Bearer {cluster.admin_token}"}  # plain HTTP needs the token too
            async with aiohttp.ClientSession(base_url=cluster.url, headers=admin) as session:
                async def create(prefix: str, content_type: str, encode: Any) -> float:
                    bodies = [encode(deployment(f"{prefix}-{i}")) for i in range(count)]
                    queue = iter(bodies)

                    async def worker() -> None:
                        for body in queue:
                            async with session.post("/apis/apps/v1/namespaces/default/deployments", data=body,
                                                    headers={"Content-Type": content_type}) as response:
                                assert response.status == 201, await response.text()

                    start = time.perf_counter()
                    await asyncio.gather(*(worker() for _ in range(CONNECTIONS)))
                    return rate(count, time.perf_counter() - start)

                await create("warm", "application/json", orjson.dumps)
                as_json = await create("json", "application/json", orjson.dumps)
                as_protobuf = await create("pb", PROTOBUF, encode_object)
                return as_protobuf, as_json
        finally:
            await cluster.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--decodes", type=int, default=5000)
    parser.add_argument("--creates", type=int, default=1000)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    decoded, parsed = bench_decode(args.decodes)
    print(f"decode a Deployment: protobuf {decoded:,.0f}/s   JSON (orjson) {parsed:,.0f}/s   "
          f"ratio {decoded / parsed:.3f}")
    created_pb, created_json = asyncio.run(bench_creates(args.creates))
    print(f"create Deployments over HTTP: protobuf {created_pb:,.0f}/s   JSON {created_json:,.0f}/s   "
          f"ratio {created_pb / created_json:.2f}")
    benchlib.write_json(args.json, [
        benchlib.row("protobuf decodes/s of a Deployment", decoded, anchor="orjson.loads/s of the same JSON",
                     anchor_value=parsed),
        benchlib.row("Deployment creates/s, protobuf bodies (8 conns)", created_pb,
                     anchor="Deployment creates/s, JSON bodies", anchor_value=created_json)],
        {"decodes": args.decodes, "creates": args.creates})
    return 0


if __name__ == "__main__":
    sys.exit(main())
