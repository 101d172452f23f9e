"""Microbenchmark of minik.api.crdschema: µs per prune + default + validate of a custom resource whose schema is
about 200 lines of YAML with two CEL rules (the shape the CRD create benchmark uses).

    python3 scripts/bench_crdschema.py [iterations] [--json FILE]

The anchor is a JSON round trip (dumps + loads) of the same object, measured in the same run: the engine's cost
in units of the cheapest thing a create must do to an object anyway.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

import benchlib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minik.api.crdschema import CompiledSchema, check_structural  # noqa: E402


def _container() -> dict[str, Any]:
    return {"type": "object", "required": ["name", "image"], "properties": {
        "name": {"type": "string", "maxLength": 63, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
        "image": {"type": "string", "minLength": 1},
        "args": {"type": "array", "items": {"type": "string"}},
        "env": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "value": {"type": "string"}}}},
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "containerPort": {"type": "integer", "minimum": 1, "maximum": 65535},
            "protocol": {"type": "string", "enum": ["TCP", "UDP", "SCTP"], "default": "TCP"}}}},
        "resources": {"type": "object", "properties": {
            "limits": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": True,
                                                                  "anyOf": [{"type": "integer"}, {"type": "string"}]}},
            "requests": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": True,
                                                                    "anyOf": [{"type": "integer"}, {"type": "string"}]}},
        }},
    }}


SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "spec": {"type": "object", "required": ["replicas", "template"],
             "x-kubernetes-validations": [
                 {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"},
                 {"rule": "!has(self.paused) || !self.paused || self.replicas == 0",
                  "messageExpression": "'a paused app has no replicas, not ' + string(self.replicas)"}],
             "properties": {
                 "replicas": {"type": "integer", "minimum": 0, "maximum": 100, "default": 1},
                 "maxReplicas": {"type": "integer", "minimum": 1, "default": 10},
                 "paused": {"type": "boolean"},
                 "strategy": {"type": "string", "enum": ["Recreate", "RollingUpdate"], "default": "RollingUpdate"},
                 "selector": {"type": "object", "properties": {
                     "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}},
                 "template": {"type": "object", "properties": {
                     "metadata": {"type": "object", "properties": {
                         "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                         "annotations": {"type": "object", "additionalProperties": {"type": "string"}}}},
                     "spec": {"type": "object", "properties": {
                         "containers": {"type": "array", "minItems": 1, "items": _container()},
                         "initContainers": {"type": "array", "items": _container()},
                         "serviceAccountName": {"type": "string"},
                         "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
                         "restartPolicy": {"type": "string", "enum": ["Always", "OnFailure", "Never"]},
                     }},
                 }},
                 "service": {"type": "object", "properties": {
                     "type": {"type": "string", "enum": ["ClusterIP", "NodePort", "LoadBalancer"],
                              "default": "ClusterIP"},
                     "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                     "annotations": {"type": "object", "additionalProperties": {"type": "string"}}}},
                 "storage": {"type": "object", "properties": {
                     "size": {"type": "string", "pattern": "^[0-9]+(Mi|Gi|Ti)$"},
                     "class": {"type": "string"},
                     "accessModes": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}},
                 "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
             }},
    "status": {"type": "object", "properties": {
        "readyReplicas": {"type": "integer"},
        "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                       "items": {"type": "object", "required": ["type", "status"], "properties": {
                           "type": {"type": "string"}, "status": {"type": "string"},
                           "reason": {"type": "string"}, "message": {"type": "string"},
                           "lastTransitionTime": {"type": "string", "format": "date-time"}}}}}},
}}

OBJECT: dict[str, Any] = {
    "apiVersion": "bench.minik.dev/v1", "kind": "App",
    "metadata": {"name": "app-1", "namespace": "default", "labels": {"app": "web"}},
    "spec": {
        "replicas": 3, "maxReplicas": 5,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{
            "name": "web", "image": "nginx:1.27", "args": ["--port", "8080"],
            "env": [{"name": "MODE", "value": "prod"}, {"name": "LOG", "value": "info"}],
            "ports": [{"name": "http", "containerPort": 8080}],
            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": 1}}}]}},
        "service": {"port": 80},
        "storage": {"size": "10Gi", "accessModes": ["ReadWriteOnce"]},
        "config": {"feature": {"x": True}},
    },
}


def _best(work: Any, iterations: int, rounds: int = 5) -> float:
    """µs of CPU time per object, the best of ``rounds`` (CPU time, so that other load on the machine counts
    less)."""
    best = float("inf")
    for _ in range(rounds):
        bodies = [copy.deepcopy(OBJECT) for _ in range(iterations)]
        gc.collect()
        gc.disable()  # the collector's passes over the prepared copies are no part of the work measured
        try:
            started = time.process_time()
            for body in bodies:
                work(body)
            best = min(best, (time.process_time() - started) / iterations * 1e6)
        finally:
            gc.enable()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description="µs per custom resource for the structural-schema engine")
    parser.add_argument("iterations", nargs="?", type=int, default=2000)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    iterations = args.iterations
    assert check_structural(SCHEMA) == []
    started = time.perf_counter()
    compiled = CompiledSchema.from_openapi(SCHEMA)
    compile_ms = (time.perf_counter() - started) * 1000
    body = copy.deepcopy(OBJECT)
    compiled.prune(body)
    compiled.default(body)
    assert compiled.validate(body) == [], compiled.validate(body)

    def everything(body: dict[str, Any]) -> None:
        compiled.prune(body)
        compiled.default(body)
        compiled.validate(body)

    total = _best(everything, iterations)
    parts = {name: _best(work, iterations) for name, work in
             (("prune", compiled.prune), ("default", compiled.default), ("validate", compiled.validate))}
    baseline = _best(lambda body: json.loads(json.dumps(body)), iterations)
    print(f"compile: {compile_ms:.1f} ms; prune+default+validate: {total:.1f} µs per object "
          f"({', '.join(f'{k} {v:.1f} µs' for k, v in parts.items())}); for scale, a JSON round trip of the "
          f"object: {baseline:.1f} µs")
    benchlib.write_json(args.json, [
        benchlib.row("schema engine: prune + default + validate, µs per object (2 CEL rules)", total,
                     anchor="a JSON round trip of the object, µs", anchor_value=baseline),
        benchlib.row("schema engine: compile a 200-line schema (ms)", compile_ms)],
        {"iterations": iterations, "parts_us": parts})


if __name__ == "__main__":
    main()
