"""Whether a pod may run on a node, as plain-dict functions (Kubernetes' component-helpers/scheduling and the core
v1 helpers): taints and tolerations, nodeSelector and required node affinity, and the well-known taints the
node lifecycle controller and the DaemonSet controller use.

The scheduler applies the same rules on its own node snapshot; controllers (DaemonSet, taint eviction) use these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from minik.api.params import go_int

Obj = dict[str, Any]

TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Toleration.ToleratesTaint: the effects match (an empty effect matches every effect), the keys match (an
    empty key with Exists matches every key), and the value is equal (Equal, the default) or anything (Exists)."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def untolerated_taint(taints: Iterable[Mapping[str, Any]], tolerations: Iterable[Mapping[str, Any]],
                      include: Callable[[Mapping[str, Any]], bool] = lambda taint: True) -> Mapping[str, Any] | None:
    """The first taint (among those ``include`` accepts) that no toleration tolerates (FindMatchingUntoleratedTaint)."""
    tolerations = list(tolerations)
    for taint in taints:
        if include(taint) and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def matching_tolerations(taints: Iterable[Mapping[str, Any]], tolerations: Iterable[Mapping[str, Any]]
                         ) -> tuple[bool, list[Mapping[str, Any]]]:
    """GetMatchingTolerations: whether every taint is tolerated, and for each taint the first toleration that
    tolerates it."""
    tolerations = list(tolerations)
    used: list[Mapping[str, Any]] = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def requirement_matches(requirement: Mapping[str, Any], value: str | None) -> bool:
    """A NodeSelectorRequirement (In, NotIn, Exists, DoesNotExist, Gt, Lt) against a label's value (None: absent)."""
    operator = requirement.get("operator")
    values = requirement.get("values") or []
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        if value is None or len(values) != 1:
            return False
        actual, wanted = go_int(str(value)), go_int(str(values[0]))
        if actual is None or wanted is None:
            return False
        return actual > wanted if operator == "Gt" else actual < wanted
    return False


def node_selector_term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """A NodeSelectorTerm: all its label expressions and field expressions (metadata.name) hold; a term with
    neither matches nothing."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    if not all(requirement_matches(e, labels.get(e.get("key", ""))) for e in expressions):
        return False
    return all(e.get("key") == "metadata.name" and requirement_matches(e, meta.get("name")) for e in fields)


def required_node_affinity_matches(pod_spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """spec.nodeSelector (every label equal) and required node affinity (any term) both hold for ``node``."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return any(node_selector_term_matches(t, node) for t in required.get("nodeSelectorTerms") or [])


def node_condition(node: Mapping[str, Any], type_: str) -> Obj | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == type_:
            return condition
    return None
