"""What controllers ask of pods: active, ready, available, which to delete first, and a pod from a template."""

from __future__ import annotations

import copy
from typing import Any

from minik.api.timestamps import parse_time
from minik.controllers.base import Obj, owner_reference


def is_active(pod: Obj) -> bool:
    """Not finished and not being deleted (Kubernetes' IsPodActive)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not (pod.get("metadata") or {}).get("deletionTimestamp")


def ready_condition(pod: Obj) -> Obj | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition
    return None


def is_ready(pod: Obj) -> bool:
    condition = ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def ready_since(pod: Obj) -> float | None:
    condition = ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return None
    return parse_time(condition.get("lastTransitionTime"))


def is_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """Ready for at least ``min_ready_seconds`` (Kubernetes' IsPodAvailable)."""
    if not is_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = ready_since(pod)
    return since is not None and since + min_ready_seconds <= now


def _restarts(pod: Obj) -> int:
    return sum(int(s.get("restartCount") or 0) for s in (pod.get("status") or {}).get("containerStatuses") or [])


_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_rank(pod: Obj) -> tuple[Any, ...]:
    """Sort key: the pods worth least come first (Kubernetes' ActivePods ordering): unscheduled before scheduled,
    Pending before Unknown before Running, not ready before ready, ready more recently before ready longer, more
    restarts before fewer, newer before older."""
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    ready = is_ready(pod)
    since = ready_since(pod) or 0.0
    created = parse_time(meta.get("creationTimestamp")) or 0.0
    return (bool(spec.get("nodeName")), _PHASE_RANK.get(phase, 0), ready, -since if ready else 0.0,
            -_restarts(pod), -created)


def pod_from_template(template: Obj, owner: Obj, *, generate_name: str | None = None, name: str | None = None,
                      extra_labels: dict[str, str] | None = None) -> Obj:
    """A new pod for ``owner`` from its pod template (labels, annotations, finalizers and spec), owned by it."""
    tmeta = template.get("metadata") or {}
    meta: Obj = {"labels": {**(tmeta.get("labels") or {}), **(extra_labels or {})},
                 "ownerReferences": [owner_reference(owner)]}
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = generate_name or f"{owner['metadata']['name']}-"
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": copy.deepcopy(template.get("spec") or {})}
