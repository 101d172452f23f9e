"""TaintToleration: a node's NoSchedule and NoExecute taints must each be tolerated by the pod (filter); nodes
with fewer untolerated PreferNoSchedule taints score higher."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from minik.api.placement import tolerates
from minik.scheduler.arrays import NodeArrays
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

if TYPE_CHECKING:
    import numpy as np

    from minik.scheduler.arrays import Mask
else:
    from minik.scheduler.arrays import np

_HARD_EFFECTS = ("NoSchedule", "NoExecute")


def untolerated_reason(taint: Mapping[str, Any]) -> str:
    return f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value') or ''}}}"


def untolerated_hard_taint(pod: PodInfo, node: NodeInfo) -> Mapping[str, Any] | None:
    """The node's first NoSchedule or NoExecute taint the pod does not tolerate, if any."""
    if not node.has_hard_taints:
        return None
    tolerations = pod.tolerations
    for taint in node.taints:
        if taint.get("effect") in _HARD_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


class TaintToleration:
    name = "TaintToleration"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        taint = untolerated_hard_taint(pod, node)
        return SUCCESS if taint is None else unresolvable(untolerated_reason(taint))

    def filter_mask(self, state: CycleState, pod: PodInfo, arrays: NodeArrays) -> Mask | bool:
        if not arrays.any_hard_taints:
            return True
        mask: Mask = arrays.hard_taints == 0
        if pod.tolerations:  # the tainted nodes (few, as a rule) one by one
            nodes = state.nodes.all()
            for row in np.flatnonzero(~mask).tolist():
                mask[row] = untolerated_hard_taint(pod, nodes[row]) is None
        return mask

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        if not state.nodes.arrays().any_soft_taints or not any(n.has_soft_taints for n in nodes):
            return SKIP
        state[self.name] = [t for t in pod.tolerations if (t.get("effect") or "PreferNoSchedule") == "PreferNoSchedule"]
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        tolerations = state[self.name]
        return sum(1 for taint in node.taints if taint.get("effect") == "PreferNoSchedule"
                   and not any(tolerates(t, taint) for t in tolerations))

    def normalize(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: list[int]) -> None:
        default_normalize(scores, reverse=True)
