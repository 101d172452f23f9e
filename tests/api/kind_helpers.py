"""Drive kind strategies the way the API server does: prepare_for_create -> default -> (uid assigned) -> validate;
prepare_for_update -> default -> validate_update. Shared by the tests of tests/api."""

from __future__ import annotations

import copy
from typing import Any

from minik.api.errors import Cause
from minik.api.registry import ResourceType
from minik.api.resources import REGISTRY

Obj = dict[str, Any]


def resource(plural: str) -> ResourceType:
    t = next((t for t in REGISTRY.types if t.plural == plural), None)
    assert t is not None, plural
    return t


def create(plural: str, obj: Obj, namespace: str = "default") -> tuple[Obj, list[Cause]]:
    t = resource(plural)
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    if t.namespaced:
        meta.setdefault("namespace", namespace)
    t.strategy.prepare_for_create(obj)
    t.strategy.default(obj)
    meta.setdefault("uid", "uid-1")
    meta.setdefault("creationTimestamp", "2025-01-01T00:00:00Z")
    return obj, t.strategy.validate(obj)


def created(plural: str, obj: Obj) -> Obj:
    result, causes = create(plural, obj)
    assert causes == []
    return result


def update(plural: str, new: Obj, old: Obj) -> tuple[Obj, list[Cause]]:
    t = resource(plural)
    new = copy.deepcopy(new)
    t.strategy.prepare_for_update(new, old)
    t.strategy.default(new)
    return new, t.strategy.validate_update(new, old)


def fields_of(causes: list[Cause]) -> list[tuple[str, str]]:
    return [(c.field, c.reason) for c in causes]


def container(name: str = "app", image: str = "nginx:1.27", **extra: Any) -> Obj:
    return {"name": name, "image": image, **extra}


def pod(*containers: Obj, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"containers": list(containers) or [container()], **spec}}


def template(labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    return {"metadata": {"labels": labels if labels is not None else {"app": "web"}},
            "spec": {"containers": [container()], **spec}}


def workload(kind: str, **spec: Any) -> Obj:
    body = {"selector": {"matchLabels": {"app": "web"}}, "template": template()}
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web"}, "spec": body}
