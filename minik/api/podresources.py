"""A pod's total requests and limits as Kubernetes adds them up (its PodRequests and PodLimits): the app containers
and sidecars summed, each init container taken alone (with the sidecars started before it), the larger of the two
kept; the pod's overhead added on request. Shared by the LimitRanger and ResourceQuota admission plugins and the
quota controller."""

from __future__ import annotations

from typing import Any

from minik.api.quantity import ResourceList, resource_list

Obj = dict[str, Any]


def _containers(spec: Obj, key: str) -> list[Obj]:
    items = spec.get(key)
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def container_resources(container: Obj, field: str) -> ResourceList:
    resources = container.get("resources")
    return resource_list(resources.get(field) if isinstance(resources, dict) else None)


def add_into(total: ResourceList, more: ResourceList) -> None:
    for name, amount in more.items():
        total[name] = total[name] + amount if name in total else amount


def max_into(total: ResourceList, more: ResourceList) -> None:
    for name, amount in more.items():
        if name not in total or amount.value > total[name].value:
            total[name] = amount


def _is_sidecar(container: Obj) -> bool:
    return container.get("restartPolicy") == "Always"


def pod_totals(spec: Any, field: str, *, overhead: bool = False) -> ResourceList:
    """The pod's ``field`` ("requests" or "limits") in total. With ``overhead``, spec.overhead is added (to every
    request; to a limit only where the pod has one, as Kubernetes does)."""
    if not isinstance(spec, dict):
        return {}
    total: ResourceList = {}
    for container in _containers(spec, "containers"):
        add_into(total, container_resources(container, field))
    sidecars: ResourceList = {}
    inits: ResourceList = {}
    for container in _containers(spec, "initContainers"):
        own = container_resources(container, field)
        if _is_sidecar(container):
            add_into(total, own)
            add_into(sidecars, own)
            alone = dict(sidecars)
        else:
            alone = dict(own)
            add_into(alone, sidecars)
        max_into(inits, alone)
    max_into(total, inits)
    if overhead:
        extra = resource_list(spec.get("overhead"))
        if field == "requests":
            add_into(total, extra)
        else:
            for name, amount in extra.items():
                if name in total:
                    total[name] = total[name] + amount
    return total

