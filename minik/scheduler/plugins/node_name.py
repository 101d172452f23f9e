"""NodeName: a pod that names its node (spec.nodeName) fits only there."""

from __future__ import annotations

from minik.scheduler.framework import SKIP, SUCCESS, CycleState, NodeInfo, PodInfo, Status, unresolvable

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = "NodeName"

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        return SUCCESS if pod.node_name else SKIP

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if pod.node_name and pod.node_name != node.name:
            return unresolvable(ERR_REASON)
        return SUCCESS
