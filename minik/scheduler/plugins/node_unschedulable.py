"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take no new pods, unless the pod tolerates the
node.kubernetes.io/unschedulable:NoSchedule taint."""

from __future__ import annotations

from minik.scheduler.framework import SUCCESS, CycleState, NodeInfo, PodInfo, Status, unresolvable
from minik.api.placement import tolerates

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

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
        if any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.tolerations):
            return nodes
        return [n for n in nodes if not n.unschedulable]
