"""Priority: a new pod's spec.priorityClassName becomes its spec.priority and spec.preemptionPolicy (the global
default class, or priority 0, when it names none); only one PriorityClass may be the global default; and the
system classes every cluster has (system-node-critical, system-cluster-critical) are created at start-up.

As Kubernetes' Priority admission plugin: the pod may not carry a priority or a preemption policy other than the
ones its class gives (403 Forbidden), an unknown class is 403 Forbidden, and updates keep what create resolved.
"""

from __future__ import annotations

from typing import Any

from minik.api.errors import forbidden
from minik.api.kinds.cluster import SYSTEM_PRIORITY_CLASSES
from minik.apiserver.admission.base import Attributes, ObjectReader

Obj = dict[str, Any]

GROUP, VERSION = "scheduling.k8s.io", "v1"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
#: the priority of a pod that names no class when no class is the global default
DEFAULT_PRIORITY = 0

_SYSTEM_DESCRIPTIONS = {
    "system-node-critical": "Used for system critical pods that must not be moved from their current node.",
    "system-cluster-critical": "Used for system critical pods that must run in the cluster, but can be moved to "
                               "another node if necessary.",
}


def system_priority_classes() -> list[Obj]:
    """The PriorityClasses the API server creates at start-up, as Kubernetes bootstraps them."""
    return [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "PriorityClass", "metadata": {"name": name},
             "value": value, "globalDefault": False, "description": _SYSTEM_DESCRIPTIONS[name],
             "preemptionPolicy": PREEMPT_LOWER_PRIORITY}
            for name, value in SYSTEM_PRIORITY_CLASSES.items()]


class Priority:
    name = "Priority"

    def __init__(self, reader: ObjectReader) -> None:
        self._reader = reader

    async def _global_default(self) -> Obj | None:
        """The global default class; if a race ever made two, the one with the lowest value (as Kubernetes)."""
        chosen: Obj | None = None
        # every pod create asks: decode only the classes that can be the default
        for pc in await self._reader.list(GROUP, VERSION, "priorityclasses", containing=b'"globalDefault":true'):
            if pc.get("globalDefault") is True and (chosen is None or pc.get("value", 0) < chosen.get("value", 0)):
                chosen = pc
        return chosen

    async def admit(self, attrs: Attributes) -> None:
        resource = attrs.resource
        if attrs.subresource or resource.group or resource.plural != "pods" or attrs.operation != "CREATE":
            return
        spec = (attrs.obj or {}).get("spec")
        if not isinstance(spec, dict):
            return
        class_name = spec.get("priorityClassName")
        if not class_name:
            pc = await self._global_default()
            if pc is not None:
                spec["priorityClassName"] = pc["metadata"]["name"]
                priority, policy = int(pc.get("value") or 0), pc.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY
            else:
                priority, policy = DEFAULT_PRIORITY, PREEMPT_LOWER_PRIORITY
        else:
            pc = self._reader.get(GROUP, VERSION, "priorityclasses", None, str(class_name))
            if pc is None:
                raise self._forbidden(attrs, f"no PriorityClass with name {class_name} was found")
            priority, policy = int(pc.get("value") or 0), pc.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY
        given = spec.get("priority")
        if given is not None and given != priority:
            raise self._forbidden(attrs, f"the integer value of priority ({given}) must not be provided in pod spec; "
                                         f"priority admission controller computed {priority} from the given "
                                         f"PriorityClass name")
        spec["priority"] = priority
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise self._forbidden(attrs, f"the string value of PreemptionPolicy ({given_policy}) must not be "
                                         f"provided in pod spec; priority admission controller computed {policy} "
                                         f"from the given PriorityClass name")
        spec["preemptionPolicy"] = policy

    async def validate(self, attrs: Attributes) -> None:
        resource = attrs.resource
        if attrs.subresource or resource.group != GROUP or resource.plural != "priorityclasses" or \
                attrs.operation not in ("CREATE", "UPDATE"):
            return
        pc = attrs.obj or {}
        if pc.get("globalDefault") is not True:
            return
        current = await self._global_default()
        if current is None:
            return
        if attrs.operation == "CREATE" or current["metadata"]["name"] != attrs.name:
            raise self._forbidden(attrs, f"PriorityClass {current['metadata']['name']} is already marked as "
                                         f"default. Only one default can exist")

    @staticmethod
    def _forbidden(attrs: Attributes, reason: str) -> Exception:
        resource = attrs.resource
        qualified = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
        return forbidden(f'{qualified} "{attrs.name}" is forbidden: {reason}', resource.plural, resource.group,
                         attrs.name)
