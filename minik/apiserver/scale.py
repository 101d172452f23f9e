"""The ``scale`` subresource (autoscaling/v1 Scale) of deployments, replicasets, statefulsets,
replicationcontrollers and custom resources whose CRD enables it: get reads spec.replicas, status.replicas and the
selector (for custom resources: the CRD's specReplicasPath, statusReplicasPath and labelSelectorPath); update and
patch change only the replicas, through the object's own update path (validation, generation, managedFields)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from minik.api import jsonpath
from minik.api.errors import Cause, StatusError, bad_request, conflict, invalid
from minik.api.registry import ResourceType
from minik.api.schema import INT32
from minik.api.selectors import selector_from_dict, selector_from_set
from minik.apiserver.decoding import decode_error, fits, number_literal, patch_decode_error

Obj = dict[str, Any]


def _selector(resource: ResourceType, obj: Obj) -> str:
    selector = (obj.get("spec") or {}).get("selector")
    try:
        if resource.kind == "ReplicationController":
            return str(selector_from_set(selector or {})) if isinstance(selector, dict) else ""
        return str(selector_from_dict(selector)) if isinstance(selector, dict) else ""
    except ValueError:
        return ""


def _at(obj: Obj, path: str) -> Any:
    """The value at a scale path (``.spec.replicas``), None when it is not there."""
    found = jsonpath.find(path, obj)
    return found[0] if found else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def to_scale(resource: ResourceType, obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                  if k in meta}
    paths = resource.custom.scale if resource.custom is not None else None
    if paths is not None:  # a custom resource: where its CRD says
        selector = _at(obj, paths.label_selector) if paths.label_selector else None
        status: Obj = {"replicas": _count(_at(obj, paths.status_replicas))}
        if isinstance(selector, str) and selector:
            status["selector"] = selector
        return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_meta,
                "spec": {"replicas": _count(_at(obj, paths.spec_replicas))}, "status": status}
    status = {"replicas": int((obj.get("status") or {}).get("replicas") or 0)}
    selector = _selector(resource, obj)
    if selector:
        status["selector"] = selector
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_meta,
            "spec": {"replicas": int((obj.get("spec") or {}).get("replicas") or 0)}, "status": status}


def _set_replicas(resource: ResourceType, obj: Obj, replicas: int) -> None:
    paths = resource.custom.scale if resource.custom is not None else None
    if paths is None:
        obj.setdefault("spec", {})["replicas"] = replicas
        return
    *parents, last = paths.spec_replicas.lstrip(".").split(".")
    target = obj
    for name in parents:
        if not isinstance(target.get(name), dict):
            target[name] = {}
        target = target[name]
    target[last] = replicas


def _replicas(scale: Any, name: str, patched: bool) -> int:
    if not isinstance(scale, dict):
        raise bad_request("the body must be a Scale object")
    if scale.get("kind") not in (None, "Scale"):
        raise bad_request(f'the body must be a Scale, not {scale.get("kind")!r}')
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if not fits(replicas, INT32):
        # the Go type's limit, as Kubernetes' decoder refuses it (the object's own replicas are an int32 too)
        message = (f"json: cannot unmarshal number {number_literal(replicas)} into Go struct field "
                   f"ScaleSpec.spec.replicas of type int32")
        raise patch_decode_error(scale, message) if patched else decode_error("Scale", "v1", message)
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise invalid("Scale", "autoscaling", name, [Cause("spec.replicas", "FieldValueInvalid",
                                                           "must be an integer")])
    if replicas < 0:
        raise invalid("Scale", "autoscaling", name, [Cause("spec.replicas", "FieldValueInvalid",
                                                           "must be greater than or equal to 0")])
    return replicas


def scaled(resource: ResourceType, current: Obj, scale: Obj, name: str, patched: bool = False) -> Obj:
    """``current`` with spec.replicas from ``scale`` (the body of a PUT, or with ``patched`` the result of a
    patch); a resourceVersion in the Scale must be the object's."""
    rv = (scale.get("metadata") or {}).get("resourceVersion")
    if rv and rv != current["metadata"].get("resourceVersion"):
        raise conflict(resource.plural, resource.group, name, "the object has been modified; please apply your "
                       "changes to the latest version and try again")
    uid = (scale.get("metadata") or {}).get("uid")
    if uid and uid != current["metadata"].get("uid"):
        raise conflict(resource.plural, resource.group, name, f"Precondition failed: UID in precondition: {uid}, "
                       f"UID in object meta: {current['metadata'].get('uid')}")
    new = copy.deepcopy(current)
    _set_replicas(resource, new, _replicas(scale, name, patched))
    return new


def patched_scale(resource: ResourceType, patch: Callable[[Obj], Obj], name: str) -> Callable[[Obj], Obj]:
    """A patch of the Scale, as a patch of the object it scales."""
    def apply(current: Obj) -> Obj:
        scale = patch(to_scale(resource, current))
        if not isinstance(scale, dict):
            raise StatusError(400, "BadRequest", "the patch must leave an object")
        return scaled(resource, current, scale, name, patched=True)
    return apply
