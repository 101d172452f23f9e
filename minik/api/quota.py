"""What a ResourceQuota counts, as Kubernetes' quota evaluators count it: an object's usage (``pods``,
``requests.cpu``, ``services.nodeports``, ``count/deployments.apps``...), which of a quota's resources a kind's
objects use, whether a quota's scopes select an object, and what a pod must specify under a quota. Pure
functions, shared by the ResourceQuota admission plugin and the resource quota controller.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from minik.api.kinds.common import dict_at
from minik.api.kinds.podspec import pod_qos_class
from minik.api.kinds.resourcenames import is_extended
from minik.api.podresources import container_resources, pod_totals
from minik.api.quantity import Quantity, ResourceList
from minik.api.registry import ResourceType
from minik.api.selectors import LabelSelector, selector_from_dict
from minik.api.timestamps import parse_time

Obj = dict[str, Any]

ONE = Quantity(Decimal(1))
ZERO = Quantity(Decimal(0))

TERMINATING, NOT_TERMINATING = "Terminating", "NotTerminating"
BEST_EFFORT, NOT_BEST_EFFORT = "BestEffort", "NotBestEffort"
PRIORITY_CLASS, CROSS_NAMESPACE_POD_AFFINITY = "PriorityClass", "CrossNamespacePodAffinity"
SCOPES = (TERMINATING, NOT_TERMINATING, BEST_EFFORT, NOT_BEST_EFFORT, PRIORITY_CLASS, CROSS_NAMESPACE_POD_AFFINITY)
SCOPE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")

#: resources quota never counts (virtual ones, and events: Kubernetes' ignored resources)
IGNORED = frozenset({("", "events"), ("events.k8s.io", "events"), ("", "bindings"),
                     ("authentication.k8s.io", "tokenreviews"), ("authentication.k8s.io", "selfsubjectreviews"),
                     ("authorization.k8s.io", "subjectaccessreviews"),
                     ("authorization.k8s.io", "selfsubjectaccessreviews"),
                     ("authorization.k8s.io", "localsubjectaccessreviews"),
                     ("authorization.k8s.io", "selfsubjectrulesreviews"),
                     ("apiregistration.k8s.io", "apiservices"),
                     ("apiextensions.k8s.io", "customresourcedefinitions")})

#: the core kinds also counted under their plain name (``configmaps`` besides ``count/configmaps``)
LEGACY_NAMES = {"pods", "services", "configmaps", "secrets", "replicationcontrollers", "resourcequotas",
                "persistentvolumeclaims"}

POD_RESOURCES = frozenset({"count/pods", "pods", "cpu", "memory", "ephemeral-storage", "requests.cpu",
                           "requests.memory", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
                           "limits.ephemeral-storage"})
_POD_PREFIXES = ("hugepages-", "requests.hugepages-")
#: what each container of a pod must request or limit when a quota counts it
POD_CONSTRAINED = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})
SERVICE_RESOURCES = frozenset({"count/services", "services", "services.nodeports", "services.loadbalancers"})


#: a PersistentVolumeClaim's storage, in all and per class (``gold.storageclass.storage.k8s.io/requests.storage``)
CLAIM_STORAGE = "requests.storage"
CLASS_SUFFIX = ".storageclass.storage.k8s.io/"


def _is_claims(resource: ResourceType) -> bool:
    return resource.group == "" and resource.plural == "persistentvolumeclaims"


def count_name(resource: ResourceType) -> str:
    """``count/pods``, ``count/deployments.apps``: the object count of a resource."""
    return f"count/{resource.group_resource}"


def counted(resource: ResourceType) -> bool:
    return resource.namespaced and (resource.group, resource.plural) not in IGNORED and "create" in resource.verbs


def _is_pods(resource: ResourceType) -> bool:
    return resource.group == "" and resource.plural == "pods"


def _is_services(resource: ResourceType) -> bool:
    return resource.group == "" and resource.plural == "services"


def matching_names(resource: ResourceType, names: Iterable[str]) -> set[str]:
    """Which of a quota's resource names objects of ``resource`` use."""
    names = set(names)
    if _is_pods(resource):
        return {n for n in names if n in POD_RESOURCES or n.startswith(_POD_PREFIXES)
                or (n.startswith("requests.") and is_extended(n[len("requests."):]))}
    if _is_services(resource):
        return names & SERVICE_RESOURCES
    own = {count_name(resource)}
    if resource.group == "" and resource.plural in LEGACY_NAMES:
        own.add(resource.plural)
    if _is_claims(resource):
        own |= {CLAIM_STORAGE} | {n for n in names if CLASS_SUFFIX in n and n.endswith(
            ("/" + CLAIM_STORAGE, "/persistentvolumeclaims"))}
    return names & own


# -- usage --------------------------------------------------------------------------------------------------------
def pod_counts(pod: Obj, now: float) -> bool:
    """Whether a pod's compute resources count: not when it has finished, nor when it was deleted and its grace
    period has passed (a pod stuck terminating on a lost node)."""
    status = dict_at(pod, "status")
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    meta = dict_at(pod, "metadata")
    deleted, grace = parse_time(meta.get("deletionTimestamp")), meta.get("deletionGracePeriodSeconds")
    return not (deleted is not None and isinstance(grace, int) and now > deleted + grace)


def _compute_usage(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """A pod's (or a container's) compute usage under quota names (Kubernetes' podComputeUsageHelper)."""
    result: ResourceList = {"pods": ONE}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            result[name] = result[f"requests.{name}"] = requests[name]
        if name in limits:
            result[f"limits.{name}"] = limits[name]
    for name, amount in requests.items():
        if name.startswith("hugepages-"):
            result[name] = result[f"requests.{name}"] = amount
        elif is_extended(name):
            result[f"requests.{name}"] = amount
    return result


def usage(resource: ResourceType, obj: Obj, now: float) -> ResourceList:
    """What one object counts for (pods: the object always, its resources while it runs)."""
    result: ResourceList = {count_name(resource): ONE}
    if resource.group == "" and resource.plural in LEGACY_NAMES and not _is_pods(resource):
        result[resource.plural] = ONE
    if _is_pods(resource):
        if pod_counts(obj, now):
            spec = obj.get("spec")
            result.update(_compute_usage(pod_totals(spec, "requests", overhead=True),
                                         pod_totals(spec, "limits", overhead=True)))
    elif _is_services(resource):
        result.update(_service_usage(obj))
    elif _is_claims(resource):
        result.update(_claim_usage(obj))
    return result


def _claim_usage(claim: Obj) -> ResourceList:
    """A claim's requested storage, in all and under its class (Kubernetes' PVC quota evaluator)."""
    spec = dict_at(claim, "spec")
    result: ResourceList = {}
    try:
        size = Quantity.parse(dict_at(dict_at(spec, "resources"), "requests").get("storage"))
    except ValueError:
        return result
    result[CLAIM_STORAGE] = size
    class_name = spec.get("storageClassName")
    if class_name:
        result[f"{class_name}{CLASS_SUFFIX}{CLAIM_STORAGE}"] = size
        result[f"{class_name}{CLASS_SUFFIX}persistentvolumeclaims"] = ONE
    return result


def _service_usage(service: Obj) -> ResourceList:
    spec = dict_at(service, "spec")
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    node_ports, balancers = 0, 0
    if spec.get("type") == "NodePort":
        node_ports = len(ports)
    elif spec.get("type") == "LoadBalancer":
        balancers = 1
        node_ports = len(ports) if spec.get("allocateLoadBalancerNodePorts") is not False else \
            sum(1 for p in ports if p.get("nodePort"))
    return {"services.nodeports": Quantity(Decimal(node_ports)),
            "services.loadbalancers": Quantity(Decimal(balancers))}


def add(total: ResourceList, more: ResourceList) -> None:
    for name, amount in more.items():
        total[name] = total[name] + amount if name in total else amount


def subtract_nonnegative(a: ResourceList, b: ResourceList) -> ResourceList:
    """``a - b`` per name, never below zero (the delta an update charges)."""
    out: ResourceList = {}
    for name, amount in a.items():
        left = amount - b[name] if name in b else amount
        out[name] = left if left.value > 0 else Quantity(Decimal(0), amount.fmt)
    return out


def pretty(amounts: ResourceList) -> str:
    """``pods=1,requests.cpu=500m``: sorted by name, as Kubernetes prints a resource list in its messages."""
    return ",".join(f"{name}={amounts[name]}" for name in sorted(amounts))


# -- scopes -------------------------------------------------------------------------------------------------------
def scope_selectors(quota: Obj) -> list[Obj]:
    """The quota's spec.scopes (each as an Exists requirement) and its scopeSelector's expressions."""
    spec = dict_at(quota, "spec")
    out = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or [] if isinstance(s, str)]
    selector = spec.get("scopeSelector")
    if isinstance(selector, dict):
        out += [e for e in selector.get("matchExpressions") or [] if isinstance(e, dict)]
    return out


def _terminating(spec: Obj) -> bool:
    deadline = spec.get("activeDeadlineSeconds")
    return isinstance(deadline, int) and deadline >= 0


def _cross_namespace_affinity(spec: Obj) -> bool:
    affinity = dict_at(spec, "affinity")
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = dict_at(affinity, kind)
        terms = list(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [w.get("podAffinityTerm") for w in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or []
                  if isinstance(w, dict)]
        for term in terms:
            if isinstance(term, dict) and (term.get("namespaces") or term.get("namespaceSelector") is not None):
                return True
    return False


def _scope_matches(selector: Obj, pod: Obj) -> bool:
    spec = dict_at(pod, "spec")
    scope = selector.get("scopeName")
    if scope == TERMINATING:
        return _terminating(spec)
    if scope == NOT_TERMINATING:
        return not _terminating(spec)
    if scope == BEST_EFFORT:
        return pod_qos_class(spec) == "BestEffort"
    if scope == NOT_BEST_EFFORT:
        return pod_qos_class(spec) != "BestEffort"
    if scope == PRIORITY_CLASS:
        name = str(spec.get("priorityClassName") or "")
        if selector.get("operator") == "Exists":
            return bool(name)
        return _selector(selector).matches({PRIORITY_CLASS: name})
    if scope == CROSS_NAMESPACE_POD_AFFINITY:
        return _cross_namespace_affinity(spec)
    return False


def _selector(requirement: Obj) -> LabelSelector:
    try:
        return selector_from_dict({"matchExpressions": [{"key": PRIORITY_CLASS, "operator": requirement.get("operator"),
                                                         "values": requirement.get("values") or []}]})
    except ValueError:
        return selector_from_dict({"matchExpressions": [{"key": PRIORITY_CLASS, "operator": "In", "values": []}]})


def quota_selects(quota: Obj, resource: ResourceType, obj: Obj) -> bool:
    """Whether ``quota`` counts ``obj``: it limits something objects of its kind use, and each of its scopes
    selects it (scopes select pods only)."""
    hard = (quota.get("spec") or {}).get("hard") if isinstance(quota.get("spec"), dict) else None
    if not isinstance(hard, dict) or not matching_names(resource, hard):
        return False
    selectors = scope_selectors(quota)
    if not selectors:
        return True
    return _is_pods(resource) and all(_scope_matches(s, obj) for s in selectors)


# -- constraints --------------------------------------------------------------------------------------------------
def constraint_problem(resource: ResourceType, obj: Obj, tracked: set[str]) -> str:
    """What a pod must specify before a quota tracking ``tracked`` admits it (Kubernetes' backward-compatible
    rule: every container requests or limits the cpu and memory a quota counts); empty when nothing is missing."""
    if not _is_pods(resource):
        return ""
    required = tracked & POD_CONSTRAINED
    if not required:
        return ""
    spec = dict_at(obj, "spec")
    missing: set[str] = set()
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                have = set(_compute_usage(container_resources(container, "requests"),
                                          container_resources(container, "limits")))
                missing |= required - have
    return f"must specify {','.join(sorted(missing))}" if missing else ""
