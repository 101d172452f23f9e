"""PodDisruptionBudget (policy/v1): how many of the pods a selector picks may be down at once by choice (an
eviction), as Kubernetes' podDisruptionBudget strategy and validation have it. The disruption controller keeps
the status (minik.controllers.disruption) and the eviction subresource spends it (minik.apiserver.eviction)."""

from __future__ import annotations

from typing import Any

from minik.api import validation as v
from minik.api.kinds.common import (
    Causes,
    Obj,
    dict_at,
    dicts_at,
    validate_int_or_percent,
    validate_not_more_than_100_percent,
)
from minik.api.strategy import Strategy

__all__ = ["UNHEALTHY_POD_EVICTION_POLICIES", "PodDisruptionBudgetStrategy"]

IF_HEALTHY_BUDGET = "IfHealthyBudget"
ALWAYS_ALLOW = "AlwaysAllow"
#: spec.unhealthyPodEvictionPolicy's values (unset behaves as IfHealthyBudget)
UNHEALTHY_POD_EVICTION_POLICIES = (ALWAYS_ALLOW, IF_HEALTHY_BUDGET)

_COUNTS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")
_CONDITION_STATUSES = ("True", "False", "Unknown")


def _validate_budget(value: Any, path: str) -> Causes:
    """minAvailable or maxUnavailable: a non-negative integer or a percentage of at most 100%."""
    if value is None:
        return []
    return validate_int_or_percent(value, path) + validate_not_more_than_100_percent(value, path)


def validate_spec(spec: Any) -> Causes:
    if spec is not None and not isinstance(spec, dict):
        return [v.type_invalid("spec", spec, "must be an object")]
    spec = spec or {}
    causes: Causes = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        causes.append(v.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"))
    causes += _validate_budget(spec.get("minAvailable"), "spec.minAvailable")
    causes += _validate_budget(spec.get("maxUnavailable"), "spec.maxUnavailable")
    causes += v.validate_label_selector(spec.get("selector"), "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        causes.append(v.not_supported("spec.unhealthyPodEvictionPolicy", policy, UNHEALTHY_POD_EVICTION_POLICIES))
    return causes


def _validate_conditions(status: Obj) -> Causes:
    """metav1.Conditions: a type each, once; a status of True, False or Unknown; a reason."""
    causes: Causes = []
    seen: set[str] = set()
    for i, condition in enumerate(dicts_at(status, "conditions")):
        at = v.index("status.conditions", i)
        kind = condition.get("type")
        if not kind:
            causes.append(v.required(v.child(at, "type")))
        elif kind in seen:
            causes.append(v.duplicate(v.child(at, "type"), kind))
        seen.add(str(kind))
        causes += v.validate_enum(condition.get("status"), v.child(at, "status"), _CONDITION_STATUSES)
        if not condition.get("reason"):
            causes.append(v.required(v.child(at, "reason")))
    return causes


def validate_status(status: Obj) -> Causes:
    causes: Causes = []
    for name in _COUNTS:
        causes += v.validate_nonnegative(status.get(name), v.child("status", name))
    return causes + _validate_conditions(status)


class PodDisruptionBudgetStrategy(Strategy):
    has_status = True
    #: the generation counts spec changes; status.observedGeneration says which the controller has seen, and an
    #: eviction waits (429) until it has seen the latest
    tracks_generation = True

    def initial_status(self, obj: Obj) -> Obj | None:
        # Kubernetes resets the status to its zero value, whose counts are always written
        return {name: 0 for name in _COUNTS}

    def validate(self, obj: Obj) -> Causes:
        return super().validate(obj) + validate_spec(obj.get("spec"))

    def validate_status_update(self, obj: Obj, old: Obj) -> Causes:
        return v.validate_object_meta_update(obj.get("metadata"), old.get("metadata")) + \
            validate_status(dict_at(obj, "status"))
