"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take no new pods, unless the pod tolerates the
node.kubernetes.io/unschedulable:NoSchedule taint."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minik.api.placement import tolerates
from minik.scheduler.arrays import NodeArrays
from minik.scheduler.framework import SUCCESS, CycleState, NodeInfo, PodInfo, Status, unresolvable

if TYPE_CHECKING:
    from minik.scheduler.arrays import Mask

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

    def filter_mask(self, state: CycleState, pod: PodInfo, arrays: NodeArrays) -> Mask | bool:
        if not arrays.any_unschedulable or any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.tolerations):
            return True
        mask: Mask = arrays.unschedulable == 0
        return mask
