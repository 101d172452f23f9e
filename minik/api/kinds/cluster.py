"""Cluster plumbing kinds: Lease (coordination.k8s.io/v1) and PriorityClass (scheduling.k8s.io/v1)."""

from __future__ import annotations

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj, dict_at, expect_object, set_default
from minik.api.kinds.podvalidation import PREEMPTION_POLICIES
from minik.api.strategy import Strategy
from minik.api.timestamps import parse_time

__all__ = ["LeaseStrategy", "PriorityClassStrategy", "SYSTEM_PRIORITY_CLASSES", "HIGHEST_USER_PRIORITY"]

HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_PREFIX = "system-"
#: the classes Kubernetes reserves (name: value); neither is the global default
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}


def _is_timestamp(value: object) -> bool:
    if not isinstance(value, str):
        return False
    return parse_time(value) is not None


class LeaseStrategy(Strategy):
    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if spec is None:
            return causes
        if not isinstance(spec, dict):
            return causes + expect_object(spec, "spec")
        duration = spec.get("leaseDurationSeconds")
        if duration is not None and (not v.is_int(duration) or duration <= 0):
            causes.append(v.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
        transitions = spec.get("leaseTransitions")
        if transitions is not None and (not v.is_int(transitions) or transitions < 0):
            causes.append(v.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
        for field in ("acquireTime", "renewTime"):
            if spec.get(field) is not None and not _is_timestamp(spec[field]):
                causes.append(v.type_invalid(f"spec.{field}", spec[field], "must be an RFC 3339 timestamp"))
        if spec.get("holderIdentity") is not None and not isinstance(spec["holderIdentity"], str):
            causes.append(v.type_invalid("spec.holderIdentity", spec["holderIdentity"], "must be a string"))
        if spec.get("preferredHolder") and not spec.get("strategy"):
            causes.append(v.forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"))
        causes += v.validate_enum(spec.get("strategy"), "spec.strategy", ("OldestEmulationVersion",), required_=False)
        return causes


class PriorityClassStrategy(Strategy):
    namespace_scoped = False

    def default(self, obj: Obj) -> None:
        set_default(obj, "preemptionPolicy", "PreemptLowerPriority")

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        name = str(dict_at(obj, "metadata").get("name") or "")
        value = obj.get("value")
        if value is None:
            causes.append(v.required("value"))
        elif not v.is_int(value) or not -2 ** 31 <= value < 2 ** 31:
            causes.append(v.type_invalid("value", value, "must be a 32-bit integer"))
        elif name.startswith(SYSTEM_PRIORITY_PREFIX):
            problem = ""
            if name not in SYSTEM_PRIORITY_CLASSES:
                problem = f"{name} is not a known system priority class"
            elif value != SYSTEM_PRIORITY_CLASSES[name]:
                problem = f"value of {name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[name]}"
            elif obj.get("globalDefault") is True:
                problem = f"globalDefault of {name} PriorityClass must be false"
            if problem:
                causes.append(v.forbidden("metadata.name", "priority class names with 'system-' prefix are reserved "
                                                           f"for system use only. error: {problem}"))
        elif value > HIGHEST_USER_PRIORITY:
            causes.append(v.forbidden("value", f"maximum allowed value of a user defined priority is "
                                               f"{HIGHEST_USER_PRIORITY}"))
        if obj.get("globalDefault") not in (None, True, False):
            causes.append(v.type_invalid("globalDefault", obj["globalDefault"], "must be a boolean"))
        causes += v.validate_enum(obj.get("preemptionPolicy"), "preemptionPolicy", PREEMPTION_POLICIES,
                                  required_=False)
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        causes = super().validate_update(obj, old)
        if obj.get("value") != old.get("value"):
            causes.append(v.forbidden("value", "may not be changed in an update."))
        return causes + v.validate_immutable(obj.get("preemptionPolicy"), old.get("preemptionPolicy"),
                                             "preemptionPolicy")
