#!/usr/bin/env python3
"""CustomResourceDefinitions: how soon a CRD serves, and what a custom resource's schema costs a create.

1. CRD create -> first successful custom resource create: p50 and p99 over --crds CRDs, each created and then its
   first object created as soon as the server takes it (tight retries on 404). Goal: p99 under 1 s.
2. creates/s of a custom resource whose CRD has a 200-line schema and two CEL rules, against creates/s of
   ConfigMaps holding the same fields (one key each) in the same run (a real API server on 127.0.0.1, components
   off, 8 connections, JSON bodies, three alternating rounds, the best of each). Goal: >= 0.8x. Every create has
   values of its own, derived from its index (replica bounds, image tag, port, env values, host), and the
   ConfigMap of the same index holds the same ones: no create repeats what the rules and formats are given, so
   nothing the server remembers between creates answers for them.

The server runs in this process, with the garbage collector set as `minik up` sets it for its server
(minik.collector.settle_after_start). With CPython's defaults a young collection came every 700 net allocations,
and 8 creates in flight, each holding a decoded object and its managedFields tree, kept crossing that: a custom
resource (a tree of some 100 dicts and lists) paid about 100 us of collections per create, sometimes a full
collection of the whole process, where a ConfigMap (a flat map of strings) paid 5 us. That measured this
harness, not the server.

    python scripts/bench_crds.py [--crds 20] [--creates 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import benchlib
import orjson
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONNECTIONS = 8
GROUP = "bench.example.com"


def _container_schema() -> dict[str, Any]:
    port = {"type": "object", "required": ["containerPort"], "properties": {
        "name": {"type": "string", "maxLength": 15, "pattern": "^[a-z0-9-]+$"},
        "containerPort": {"type": "integer", "minimum": 1, "maximum": 65535},
        "protocol": {"type": "string", "enum": ["TCP", "UDP", "SCTP"], "default": "TCP"}}}
    env = {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "minLength": 1}, "value": {"type": "string"}}}
    resources = {"type": "object", "properties": {
        "limits": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": True,
                                                              "anyOf": [{"type": "integer"}, {"type": "string"}]}},
        "requests": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": True,
                                                                "anyOf": [{"type": "integer"}, {"type": "string"}]}}}}
    return {"type": "object", "required": ["name", "image"], "properties": {
        "name": {"type": "string", "maxLength": 63, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
        "image": {"type": "string", "minLength": 1},
        "command": {"type": "array", "items": {"type": "string"}},
        "args": {"type": "array", "items": {"type": "string"}},
        "imagePullPolicy": {"type": "string", "enum": ["Always", "IfNotPresent", "Never"],
                            "default": "IfNotPresent"},
        "ports": {"type": "array", "items": port, "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["containerPort"]},
        "env": {"type": "array", "items": env, "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"]},
        "resources": resources}}


def app_schema() -> dict[str, Any]:
    """The schema of an App: the shape of an operator's workload kind (about 200 lines of YAML), with two CEL
    rules."""
    condition = {"type": "object", "required": ["type", "status"], "properties": {
        "type": {"type": "string"}, "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "reason": {"type": "string"}, "message": {"type": "string"},
        "lastTransitionTime": {"type": "string", "format": "date-time"}}}
    spec = {"type": "object", "required": ["containers"], "properties": {
        "replicas": {"type": "integer", "minimum": 0, "default": 1},
        "minReplicas": {"type": "integer", "minimum": 0},
        "maxReplicas": {"type": "integer", "minimum": 1, "maximum": 1000},
        "paused": {"type": "boolean", "default": False},
        "strategy": {"type": "string", "enum": ["Recreate", "RollingUpdate"], "default": "RollingUpdate"},
        "serviceAccountName": {"type": "string", "maxLength": 253},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "containers": {"type": "array", "minItems": 1, "maxItems": 10, "items": _container_schema(),
                       "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
        "expose": {"type": "object", "properties": {
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "host": {"type": "string", "format": "hostname"},
            "tls": {"type": "boolean"},
            "path": {"type": "string", "pattern": "^/"},
            "timeoutSeconds": {"type": "integer", "minimum": 1, "maximum": 3600}}},
        "schedule": {"type": "object", "properties": {
            "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
            "priorityClassName": {"type": "string"},
            "tolerations": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {
                "type": "object", "properties": {
                    "key": {"type": "string"}, "operator": {"type": "string", "enum": ["Exists", "Equal"]},
                    "value": {"type": "string"}, "effect": {"type": "string"}}}}}}},
        "x-kubernetes-validations": [
            {"rule": "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",
             "message": "minReplicas may not exceed maxReplicas"},
            {"rule": "self.containers.all(c, c.image != '')", "message": "every container needs an image"}]}
    status = {"type": "object", "properties": {
        "replicas": {"type": "integer"}, "readyReplicas": {"type": "integer"},
        "observedGeneration": {"type": "integer", "format": "int64"},
        "conditions": {"type": "array", "items": condition, "x-kubernetes-list-type": "map",
                       "x-kubernetes-list-map-keys": ["type"]}}}
    return {"type": "object", "properties": {"spec": spec, "status": status}}


def crd(plural: str, kind: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced", "names": {"plural": plural, "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema},
                                   "subresources": {"status": {}}}]}}


def app(name: str, index: int = 0) -> dict[str, Any]:
    """An App whose spec differs with ``index`` (replica bounds, image tag, port, env values), so that no create
    repeats the values its CEL rules are given."""
    container = {"name": "web", "image": f"nginx:1.{index}", "args": ["--port", str(8000 + index % 1000)],
                 "ports": [{"name": "http", "containerPort": 1024 + index % 60000}],
                 "env": [{"name": f"VAR_{i}", "value": f"{index}-{i}"} for i in range(4)],
                 "resources": {"limits": {"cpu": f"{100 + index % 900}m", "memory": "128Mi"}, "requests": {"cpu": 1}}}
    return {"apiVersion": f"{GROUP}/v1", "kind": "App", "metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {"replicas": index % 7, "minReplicas": index % 5, "maxReplicas": 5 + index % 995,
                     "containers": [container], "expose": {"port": 80, "host": f"app-{index}.example.com"}}}


def _flat(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{prefix}{key}.").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _flat(item, f"{prefix}{i}.").items()}
    return {prefix.rstrip("."): str(value)}


def config_map(name: str, index: int = 0) -> dict[str, Any]:
    """A ConfigMap holding what the App of the same index holds, one key per field (about as many fields and
    bytes)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "bench"}},
            "data": _flat(app(name, index)["spec"])}


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


async def run(crds: int, creates: int) -> dict[str, Any]:
    import aiohttp

    from minik.cluster import COMPONENTS, Cluster, ClusterSettings
    from minik.collector import settle_after_start

    schema = app_schema()
    with tempfile.TemporaryDirectory() as data_dir:
        cluster = Cluster(ClusterSettings(data_dir=Path(data_dir), port=0, plain_http=True, synchronous="NORMAL",
                                          disabled=frozenset(COMPONENTS)))
        await cluster.start()
        settle_after_start()
        try:
            admin = {"Authorization": f"Bearer {cluster.admin_token}", "Content-Type": "application/json"}
            async with aiohttp.ClientSession(base_url=cluster.url, headers=admin) as session:
                async def post(path: str, body: dict[str, Any] | bytes) -> int:
                    data = body if isinstance(body, bytes) else orjson.dumps(body)
                    async with session.post(path, data=data) as response:
                        await response.read()
                        return response.status

                # 1. CRD create -> first custom resource create
                latencies = []
                for i in range(crds):
                    plural, kind = f"things{i}", f"Thing{i}"
                    began = time.perf_counter()
                    assert await post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                      crd(plural, kind, schema)) == 201
                    body = app("first")
                    body["kind"] = kind
                    while True:
                        status = await post(f"/apis/{GROUP}/v1/namespaces/default/{plural}", body)
                        if status == 201:
                            break
                        assert status == 404, status
                    latencies.append(time.perf_counter() - began)

                # 2. creates/s: the App with its schema and rules, and ConfigMaps, in the same run
                assert await post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                  crd("apps", "App", schema)) == 201
                while await post(f"/apis/{GROUP}/v1/namespaces/default/apps", app("probe")) != 201:
                    await asyncio.sleep(0.005)

                async def create(path: str, make: Any, prefix: str, first: int) -> float:
                    """creates/s of ``creates`` objects, the i-th made from index ``first + i`` (every create of
                    the run has values of its own). The bodies are made before the clock starts: a ConfigMap's
                    flattening costs several times an App's making, and that is the harness, not the server."""
                    bodies = iter([orjson.dumps(make(f"{prefix}-{i}", first + i)) for i in range(creates)])

                    async def worker() -> None:
                        for body in bodies:
                            status = await post(path, body)
                            assert status == 201, status

                    start = time.perf_counter()
                    await asyncio.gather(*(worker() for _ in range(CONNECTIONS)))
                    return rate(creates, time.perf_counter() - start)

                apps_path, maps_path = f"/apis/{GROUP}/v1/namespaces/default/apps", "/api/v1/namespaces/default/configmaps"
                await create(apps_path, app, "warm", 0)
                await create(maps_path, config_map, "warm", 0)
                app_rates, map_rates = [], []
                for round_ in range(3):  # alternate, so that neither gets the quieter moments
                    first = (round_ + 1) * creates
                    app_rates.append(await create(apps_path, app, f"r{round_}", first))
                    map_rates.append(await create(maps_path, config_map, f"r{round_}", first))
        finally:
            await cluster.stop()
    return {"latencies": latencies, "apps": max(app_rates), "configmaps": max(map_rates),
            "schema_lines": len(yaml.safe_dump(schema).splitlines())}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--crds", type=int, default=20)
    parser.add_argument("--creates", type=int, default=2000)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    result = asyncio.run(run(args.crds, args.creates))
    p50, p99 = statistics.median(result["latencies"]), percentile(result["latencies"], 0.99)
    apps, maps = result["apps"], result["configmaps"]
    print(f"CRD create -> first custom resource create: p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms "
          f"({args.crds} CRDs)")
    print(f"creates/s: App ({result['schema_lines']}-line schema, 2 CEL rules) {apps:,.0f}/s   "
          f"ConfigMap {maps:,.0f}/s   ratio {apps / maps:.2f}")
    benchlib.write_json(args.json, [
        benchlib.row("CRD create -> first custom resource create, p99 (s)", p99, goal="< 1 s", met=p99 < 1.0),
        benchlib.row("CRD create -> first custom resource create, p50 (s)", p50),
        benchlib.row(f"custom resource creates/s ({result['schema_lines']}-line schema, 2 CEL rules, 8 conns)", apps,
                     anchor="ConfigMap creates/s", anchor_value=maps, goal=">= 0.8x", met=apps >= 0.8 * maps)],
        {"crds": args.crds, "creates": args.creates, "latencies": result["latencies"]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
