"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take no new pods, unless the pod tolerates the
node.kubernetes.io/unschedulable:NoSchedule taint."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minik.api.placement import tolerates
from minik.scheduler.arrays import NodeArrays
from minik.scheduler.framework import SUCCESS, CycleState, NodeInfo, PodInfo, Status, unresolvable

if TYPE_CHECKING:
    import numpy as np

    from minik.scheduler.arrays import Mask
else:
    from minik.scheduler.arrays import np

ERR_REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class NodeUnschedulable:
    name = "NodeUnschedulable"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if not node.unschedulable:
            return SUCCESS
        if any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.tolerations):
            return SUCCESS
        return unresolvable(ERR_REASON)

    def filter_mask(self, state: CycleState, pod: PodInfo, arrays: NodeArrays) -> Mask:
        if any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.tolerations):
            return np.ones(arrays.size, dtype=np.bool_)
        return arrays.unschedulable == 0
