"""Deployment arithmetic and bookkeeping (Kubernetes' deployment/util): the pod-template-hash, revisions and the
annotations a ReplicaSet carries, maxSurge/maxUnavailable resolution, conditions and completeness."""

from __future__ import annotations

import copy
import math
from typing import Any

import orjson

from minik.api.timestamps import rfc3339
from minik.controllers.base import Obj

TEMPLATE_HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
#: deployment annotations not copied onto its ReplicaSets (Kubernetes' annotationsToSkip)
SKIPPED_ANNOTATIONS = {"kubectl.kubernetes.io/last-applied-configuration", REVISION,
                       "deployment.kubernetes.io/revision-history", DESIRED_REPLICAS, MAX_REPLICAS,
                       "deprecated.deployment.rollback.to"}

# condition reasons, as Kubernetes names them
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"

_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' rand.SafeEncodeString alphabet: no vowels, no look-alikes


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def template_hash(template: Obj, collision_count: int | None = None) -> str:
    """A short, stable name for a pod template (the pod-template-hash label and the ReplicaSet's name suffix)."""
    data = orjson.dumps(_semantic(template), option=orjson.OPT_SORT_KEYS)
    if collision_count:
        data += collision_count.to_bytes(4, "little")
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(fnv32a(data)))


def _semantic(value: Any) -> Any:
    """A value as Kubernetes' typed comparison sees it: nulls and empty maps and lists are the same as absent
    (kubectl sends a template's ``creationTimestamp: null``)."""
    if isinstance(value, dict):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def without_hash(template: Obj) -> Obj:
    t = _semantic(copy.deepcopy(template or {}))
    (t.get("metadata") or {}).get("labels", {}).pop(TEMPLATE_HASH_LABEL, None)
    return _semantic(t)


def equal_ignoring_hash(a: Obj, b: Obj) -> bool:
    return without_hash(a) == without_hash(b)


def revision(obj: Obj) -> int:
    try:
        return int(((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION, 0))
    except ValueError:
        return 0


def replicas(obj: Obj | None) -> int:
    return int(((obj or {}).get("spec") or {}).get("replicas", 0) or 0)


def status_of(obj: Obj | None, field: str) -> int:
    return int(((obj or {}).get("status") or {}).get(field) or 0)


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """An int-or-percent of ``total`` (Kubernetes' GetScaledValueFromIntOrPercent)."""
    if isinstance(value, str) and value.endswith("%"):
        share = int(value[:-1]) * total / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value or 0)


def surge_and_unavailable(d: Obj) -> tuple[int, int]:
    """maxSurge (rounded up) and maxUnavailable (rounded down); both zero would stall, so unavailable becomes 1."""
    spec = d.get("spec") or {}
    if (spec.get("strategy") or {}).get("type") != "RollingUpdate":
        return 0, 0
    rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
    total = replicas(d)
    surge = scaled_value(rolling.get("maxSurge", "25%"), total, True)
    unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), total, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_unavailable(d: Obj) -> int:
    if ((d.get("spec") or {}).get("strategy") or {}).get("type") != "RollingUpdate" or replicas(d) == 0:
        return 0
    return min(surge_and_unavailable(d)[1], replicas(d))


def condition(status: Obj, type_: str) -> Obj | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


def set_condition(status: Obj, type_: str, value: str, reason: str, message: str, now: float) -> None:
    """Kubernetes' SetDeploymentCondition: the same status and reason leave the condition as it is; the same
    status keeps its lastTransitionTime."""
    current = condition(status, type_)
    if current is not None and current.get("status") == value and current.get("reason") == reason:
        return
    stamp = rfc3339(now)
    new = {"type": type_, "status": value, "lastUpdateTime": stamp, "lastTransitionTime": stamp, "reason": reason,
           "message": message}
    if current is not None and current.get("status") == value:
        new["lastTransitionTime"] = current.get("lastTransitionTime", stamp)
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != type_] + [new]


def remove_condition(status: Obj, type_: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != type_]


def complete(d: Obj, status: Obj) -> bool:
    want = replicas(d)
    return status.get("updatedReplicas", 0) == want and status.get("replicas", 0) == want and \
        status.get("availableReplicas", 0) == want and \
        status.get("observedGeneration", 0) >= int(d["metadata"].get("generation") or 0)


def progressing(d: Obj, new: Obj) -> bool:
    old = d.get("status") or {}
    old_old = old.get("replicas", 0) - old.get("updatedReplicas", 0)
    new_old = new.get("replicas", 0) - new.get("updatedReplicas", 0)
    return new.get("updatedReplicas", 0) > old.get("updatedReplicas", 0) or new_old < old_old or \
        new.get("readyReplicas", 0) > old.get("readyReplicas", 0) or \
        new.get("availableReplicas", 0) > old.get("availableReplicas", 0)


def has_progress_deadline(d: Obj) -> bool:
    deadline = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return deadline is not None and deadline != 2**31 - 1
