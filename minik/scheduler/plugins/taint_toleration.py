"""TaintToleration: a node's NoSchedule and NoExecute taints must each be tolerated by the pod (filter); nodes
with fewer untolerated PreferNoSchedule taints score higher."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minik.scheduler.framework import (SKIP, SUCCESS, CycleState, NodeInfo, PodInfo, Status, default_normalize,
                                       unresolvable)

_HARD_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' Toleration.ToleratesTaint: effects match (an empty effect matches all), keys match (an empty key
    with Exists matches all), and the value is equal (operator Equal, the default) or anything (Exists)."""
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


def untolerated_reason(taint: Mapping[str, Any]) -> str:
    return f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value') or ''}}}"


class TaintToleration:
    name = "TaintToleration"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if not node.has_hard_taints:
            return SUCCESS
        tolerations = pod.tolerations
        for taint in node.taints:
            if taint.get("effect") in _HARD_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
                return unresolvable(untolerated_reason(taint))
        return SUCCESS

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
        return [n for n in nodes if not n.has_hard_taints or self.filter(state, pod, n).ok]

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        if not any(t.get("effect") == "PreferNoSchedule" for n in nodes for t in n.taints):
            return SKIP
        state[self.name] = [t for t in pod.tolerations if (t.get("effect") or "PreferNoSchedule") == "PreferNoSchedule"]
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        tolerations = state[self.name]
        return sum(1 for taint in node.taints if taint.get("effect") == "PreferNoSchedule"
                   and not any(tolerates(t, taint) for t in tolerations))

    def normalize(self, state: CycleState, pod: PodInfo, scores: list[int]) -> None:
        default_normalize(scores, reverse=True)
