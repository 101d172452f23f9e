"""The node.k8s.io group: RuntimeClass, which names a container runtime configuration (its handler) pods choose
with spec.runtimeClassName, and what choosing it adds to them: the pod overhead and scheduling constraints (the
RuntimeClass admission plugin applies both, minik.apiserver.admission.runtime_class)."""

from __future__ import annotations

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj, dict_at, expect_object
from minik.api.kinds.podvalidation import validate_resource_requirements, validate_tolerations
from minik.api.strategy import Strategy

__all__ = ["RuntimeClassStrategy"]


def _toleration_key(t: object) -> tuple[object, ...]:
    d = t if isinstance(t, dict) else {}
    return (d.get("key") or "", d.get("operator") or "", d.get("value") or "", d.get("effect") or "")


class RuntimeClassStrategy(Strategy):
    namespace_scoped = False

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        handler = obj.get("handler")
        causes += [v.invalid("handler", handler if isinstance(handler, str) else "", m)
                   for m in v.is_dns1123_label(handler if isinstance(handler, str) else "")]
        overhead = obj.get("overhead")
        if overhead is not None:
            causes += expect_object(overhead, "overhead")
            if isinstance(overhead, dict):
                causes += validate_resource_requirements({"limits": overhead.get("podFixed")}, "overhead")
        scheduling = obj.get("scheduling")
        if scheduling is not None:
            causes += expect_object(scheduling, "scheduling")
            causes += self._validate_scheduling(dict_at(obj, "scheduling"))
        return causes

    @staticmethod
    def _validate_scheduling(scheduling: Obj) -> Causes:
        causes = v.validate_labels(scheduling.get("nodeSelector"), "scheduling.nodeSelector")
        tolerations = scheduling.get("tolerations")
        causes += validate_tolerations(tolerations, "scheduling.tolerations")
        seen: set[tuple[object, ...]] = set()
        for i, toleration in enumerate(tolerations if isinstance(tolerations, list) else []):
            key = _toleration_key(toleration)
            if key in seen:
                causes.append(v.duplicate(v.index("scheduling.tolerations", i), toleration))
            seen.add(key)
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        return super().validate_update(obj, old) + v.validate_immutable(obj.get("handler"), old.get("handler"),
                                                                        "handler")
