"""NodeAffinity: spec.nodeSelector and required node affinity must match the node's labels (and
metadata.name through matchFields); preferred node affinity adds its terms' weights to the node's score."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minik.api.placement import requirement_matches
from minik.scheduler.framework import (
    SKIP,
    SUCCESS,
    CycleState,
    NodeInfo,
    PodInfo,
    Status,
    default_normalize,
    unresolvable,
)

ERR_REASON = "node(s) didn't match Pod's node affinity/selector"


def term_matches(term: Mapping[str, Any], node: NodeInfo) -> bool:
    """A NodeSelectorTerm: all its expressions and fields hold; a term with neither matches nothing."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    labels = node.labels
    for expr in expressions:
        if not requirement_matches(expr, labels.get(expr.get("key", ""))):
            return False
    for expr in fields:
        if expr.get("key") != "metadata.name" or not requirement_matches(expr, node.name):
            return False
    return True


def required_terms(pod: PodInfo) -> list[Obj] | None:
    node_affinity = pod.affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    return required.get("nodeSelectorTerms") or []


Obj = dict[str, Any]


def pod_matches_node(pod: PodInfo, node: NodeInfo) -> bool:
    """nodeSelector (every label equal) and required node affinity (any term) both hold."""
    labels = node.labels
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return False
    terms = required_terms(pod)
    if terms is not None and not any(term_matches(t, node) for t in terms):
        return False
    return True


class NodeAffinity:
    name = "NodeAffinity"

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        return SUCCESS if pod.node_selector or required_terms(pod) is not None else SKIP

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS if pod_matches_node(pod, node) else unresolvable(ERR_REASON)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        preferred = (pod.affinity.get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution")
        if not preferred:
            return SKIP
        state[self.name] = [(int(p.get("weight") or 0), p.get("preference") or {}) for p in preferred]
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return sum(weight for weight, term in state[self.name] if weight and term_matches(term, node))

    def normalize(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: list[int]) -> None:
        default_normalize(scores)
