"""Resource names as Kubernetes' core helpers classify them (``cpu``, ``requests.memory``, ``count/pods``,
``example.com/gpu``), and the name rules LimitRanges and ResourceQuotas validate with."""

from __future__ import annotations

from typing import Any

from minik.api import validation as v
from minik.api.errors import Cause

Causes = list[Cause]

CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})

#: what a name without a '/' may be in a LimitRange of a type other than Pod and Container, or a quota's status
STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "persistentvolumeclaims", "configmaps", "services.nodeports",
    "services.loadbalancers", "storage", "requests.storage",
})

#: what a name without a '/' may be in a ResourceQuota's hard
QUOTA_RESOURCES = STANDARD_RESOURCES - {"storage"}

#: the names counted in whole objects (a quota of 1.5 pods is refused)
INTEGER_RESOURCES = frozenset({"pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
                               "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})

#: the names of a pod's own compute resources a quota may count (and scopes may narrow)
POD_COMPUTE_RESOURCES = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu",
                                   "limits.memory", "ephemeral-storage", "requests.ephemeral-storage",
                                   "limits.ephemeral-storage"})

HUGEPAGES_PREFIX = "hugepages-"
REQUESTS_PREFIX = "requests."


def is_native(name: str) -> bool:
    """A name of Kubernetes' own: no domain, or a kubernetes.io one."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """A resource a device plugin or an admin adds (``example.com/gpu``), counted in whole units."""
    return not is_native(name) and not name.startswith(REQUESTS_PREFIX)


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_quota_hugepages(name: str) -> bool:
    return name.startswith((HUGEPAGES_PREFIX, REQUESTS_PREFIX + HUGEPAGES_PREFIX))


def is_integer(name: str) -> bool:
    return name in INTEGER_RESOURCES or is_extended(name)


def overcommit_allowed(name: str) -> bool:
    """Whether a request may be below its limit (not for hugepages and extended resources)."""
    return is_native(name) and not is_hugepages(name)


def is_standard_quota_name(name: str) -> bool:
    return name in QUOTA_RESOURCES or is_quota_hugepages(name)


def validate_resource_name(name: str, path: str) -> Causes:
    """A qualified name; without a domain, a standard resource."""
    causes = [v.invalid(path, name, m) for m in v.is_qualified_name(name)]
    if causes:
        return causes
    if "/" not in name and name not in STANDARD_RESOURCES and not is_quota_hugepages(name):
        return [v.invalid(path, name, "must be a standard resource type or fully qualified")]
    return []


def validate_container_resource_name(name: str, path: str) -> Causes:
    """What a container may request: cpu, memory, ephemeral-storage, hugepages, or an extended resource."""
    causes = validate_resource_name(name, path)
    if "/" not in name:
        if name not in CONTAINER_RESOURCES and not is_hugepages(name):
            return causes + [v.invalid(path, name, "must be a standard resource for containers")]
    elif not is_native(name) and not is_extended(name):
        return causes + [v.invalid(path, name, "doesn't have a resource type")]
    return causes


def validate_quota_resource_name(name: str, path: str) -> Causes:
    causes = validate_resource_name(name, path)
    if "/" not in name and not is_standard_quota_name(name):
        return causes + [v.invalid(path, name, "must be a standard resource for quota")]
    return causes


def resource_map(value: Any, path: str) -> tuple[dict[str, Any], Causes]:
    """A ResourceList (name -> quantity): the map, or a cause when it is not one."""
    if value is None:
        return {}, []
    if not isinstance(value, dict):
        return {}, [v.type_invalid(path, value, "must be a map of resource name to quantity")]
    return value, []
