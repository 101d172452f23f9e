"""CustomResourceDefinitions of the shapes operators ship, for the tests of custom resources: a namespaced one with
two versions (v1beta1 deprecated, v1 the storage version), status and scale subresources, printer columns,
selectable fields and defaults; a cluster-scoped one with no subresources; and ways to wait until one is served."""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any

Obj = dict[str, Any]

GROUP = "example.com"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

_WIDGET_SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "minimum": 0, "default": 1},
                "color": {"type": "string", "enum": ["red", "green", "blue"], "default": "red"},
                "size": {"type": "string"},
                "selector": {"type": "string"},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"}}}},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "selector": {"type": "string"},
                "phase": {"type": "string"},
            },
        },
    },
}


def widget_crd(scope: str = "Namespaced") -> Obj:
    """widgets.example.com: v1beta1 (served, deprecated) and v1 (served, storage), with status and scale, printer
    columns (Color, Replicas only with -o wide, Phase, Age) and spec.color as a selectable field."""
    subresources = {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                            "statusReplicasPath": ".status.replicas",
                                            "labelSelectorPath": ".status.selector"}}
    columns = [{"name": "Color", "type": "string", "jsonPath": ".spec.color"},
               {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1},
               {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
               {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    version = {"schema": {"openAPIV3Schema": _WIDGET_SCHEMA}, "subresources": subresources,
               "additionalPrinterColumns": columns, "selectableFields": [{"jsonPath": ".spec.color"}]}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {"group": GROUP, "scope": scope,
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"],
                           "categories": ["all"]},
                 "versions": [{"name": "v1beta1", "served": True, "storage": False, "deprecated": True,
                               **copy.deepcopy(version)},
                              {"name": "v1", "served": True, "storage": True, **copy.deepcopy(version)}]},
    }


def gadget_crd() -> Obj:
    """gadgets.example.com: cluster-scoped, one version, no subresources, no printer columns."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Cluster",
                 "names": {"plural": "gadgets", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


def with_rules(crd: Obj) -> Obj:
    """Two CEL rules on the widget's spec: a size needs replicas, and replicas may not go down by more than two."""
    for version in crd["spec"]["versions"]:
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec["x-kubernetes-validations"] = [
            {"rule": "!has(self.size) || self.replicas > 0", "message": "a sized widget needs replicas"},
            {"rule": "self.replicas >= oldSelf.replicas - 2", "message": "replicas may not drop by more than two",
             "reason": "FieldValueForbidden"}]
    return crd


def widget(name: str, version: str = "v1", **spec: Any) -> Obj:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def widgets(namespace: str = "default", version: str = "v1") -> str:
    return f"/apis/{GROUP}/{version}/namespaces/{namespace}/widgets"


async def create_and_wait(http: Any, crd: Obj, timeout: float = 5.0) -> float:
    """Create ``crd`` and wait until a list of its resources answers; the seconds that took."""
    began = time.perf_counter()
    status, body = await http.post(CRDS, crd)
    assert status == 201, body
    await wait_served(http, crd, timeout)
    return time.perf_counter() - began


async def wait_served(http: Any, crd: Obj, timeout: float = 5.0) -> None:
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v["served"])
    path = f"/apis/{spec['group']}/{version}/{spec['names']['plural']}"
    deadline = time.monotonic() + timeout
    while True:
        status, _ = await http.get(path)
        if status == 200:
            return
        assert time.monotonic() < deadline, f"{crd['metadata']['name']} not served after {timeout}s ({status})"
        await asyncio.sleep(0.01)


async def wait_for(check: Any, timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll the coroutine function ``check`` until it returns something true; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(interval)


def condition(crd: Obj, type_: str) -> Obj:
    return next((c for c in (crd.get("status") or {}).get("conditions") or [] if c["type"] == type_), {})
