"""Ephemeral containers (`kubectl debug`): the rules of the pods/ephemeralcontainers subresource, as Kubernetes
1.32 has them.

A write to the subresource changes spec.ephemeralContainers and nothing else (the rest of the body is the stored
pod's). Ephemeral containers can only be added: an existing one may be neither changed nor removed. They are
debugging tools, not part of the workload, so what would make them one is refused: ports, probes, lifecycle
hooks, resources, resizePolicy, restartPolicy and volume subPaths. Their targetContainerName must name an app or
init container of the pod (the kubelet then starts them in that container's process namespace).
"""

from __future__ import annotations

import copy
from typing import Any

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj, dict_at, dicts_at, list_at
from minik.api.kinds.podspec import default_container
from minik.api.kinds.podvalidation import validate_ephemeral_container_common

SUBRESOURCE = "ephemeralcontainers"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

#: the fields of a container that an ephemeral container may not set (Kubernetes lists the allowed ones)
DISALLOWED_FIELDS = ("ports", "resources", "resizePolicy", "restartPolicy", "lifecycle", "livenessProbe",
                     "readinessProbe", "startupProbe")
_NOT_FOR_EPHEMERAL = "cannot be set for an Ephemeral Container"


def _is_set(value: Any) -> bool:
    """Whether a field is set as Go sees it: an empty object or list is its zero value (kubectl sends
    ``resources: {}``)."""
    return value is not None and value != {} and value != []


def prepare_update(obj: Obj, old: Obj) -> None:
    """Make ``obj`` the stored pod with the body's spec.ephemeralContainers (defaulted), in place: Kubernetes'
    dropNonEphemeralContainerUpdates."""
    ephemerals = dict_at(obj, "spec").get("ephemeralContainers")
    meta = dict_at(obj, "metadata")
    kept = {key: meta[key] for key in ("name", "namespace", "uid", "resourceVersion") if key in meta}
    obj.clear()
    obj.update(copy.deepcopy(old))
    obj["metadata"].update(kept)
    spec = obj.setdefault("spec", {})
    if ephemerals is None:
        spec.pop("ephemeralContainers", None)
        return
    spec["ephemeralContainers"] = ephemerals
    for container in dicts_at(spec, "ephemeralContainers"):
        default_container(container)


def validate_ephemeral_containers(spec: Obj, path: str = "spec") -> Causes:
    """Kubernetes' validateEphemeralContainers: names unique among every container of the pod, only the allowed
    fields, no subPath, a target that is an app or init container."""
    entries = spec.get("ephemeralContainers")
    at_list = v.child(path, "ephemeralContainers")
    if entries is None:
        return []
    if not isinstance(entries, list):
        return [v.type_invalid(at_list, entries, "must be a list")]
    others = {str(c.get("name")) for name in ("containers", "initContainers") for c in dicts_at(spec, name)}
    volumes = {str(volume.get("name")) for volume in dicts_at(spec, "volumes")}
    seen: set[str] = set()
    causes: Causes = []
    for i, container in enumerate(entries):
        at = v.index(at_list, i)
        if not isinstance(container, dict):
            causes.append(v.type_invalid(at, container, "must be an object"))
            continue
        name = container.get("name") or ""
        if not name:
            causes.append(v.required(v.child(at, "name")))
        else:
            causes += [v.invalid(v.child(at, "name"), name, m) for m in v.is_dns1123_label(str(name))]
            if name in seen or name in others:
                causes.append(v.duplicate(v.child(at, "name"), name))
            seen.add(str(name))
        causes += [v.forbidden(v.child(at, key), _NOT_FOR_EPHEMERAL) for key in DISALLOWED_FIELDS
                   if _is_set(container.get(key))]
        for j, mount in enumerate(list_at(container, "volumeMounts")):
            for key in ("subPath", "subPathExpr"):
                if isinstance(mount, dict) and mount.get(key):
                    causes.append(v.forbidden(v.child(v.index(v.child(at, "volumeMounts"), j), key),
                                              _NOT_FOR_EPHEMERAL))
        common = {key: value for key, value in container.items() if key not in DISALLOWED_FIELDS}
        causes += validate_ephemeral_container_common(common, at, volumes)
        target = container.get("targetContainerName")
        if target and target not in others:
            causes.append(v.not_found(v.child(at, "targetContainerName"), target))
    return causes


def validate_update(pod: Obj, old: Obj) -> Causes:
    """Kubernetes' ValidatePodEphemeralContainersUpdate, after the pod itself is validated: not for static
    (mirror) pods, and the existing ephemeral containers unchanged."""
    if MIRROR_ANNOTATION in (dict_at(old, "metadata").get("annotations") or {}):
        return [v.forbidden("", "static pods do not support ephemeral containers")]
    new = {str(c.get("name")): c for c in dicts_at(dict_at(pod, "spec"), "ephemeralContainers")}
    causes: Causes = []
    for existing in dicts_at(dict_at(old, "spec"), "ephemeralContainers"):
        name = str(existing.get("name"))
        if name not in new:
            causes.append(v.forbidden("spec.ephemeralContainers",
                                      f'existing ephemeral containers "{name}" may not be removed\n'))
        elif new[name] != existing:
            causes.append(v.forbidden(v.child("spec.ephemeralContainers", name),
                                      f'existing ephemeral containers "{name}" may not be changed\n'))
    return causes
