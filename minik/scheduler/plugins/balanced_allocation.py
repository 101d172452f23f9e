"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory would be used in equal fractions (the
standard deviation of the fractions, subtracted from 1), so that neither runs out while the other idles."""

from __future__ import annotations

from minik.scheduler.framework import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo


class BalancedAllocation:
    name = "NodeResourcesBalancedAllocation"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        alloc = node.allocatable
        if alloc.milli_cpu <= 0 or alloc.memory <= 0:
            return 0
        cpu = min((node.requested.milli_cpu + pod.requests.milli_cpu) / alloc.milli_cpu, 1.0)
        memory = min((node.requested.memory + pod.requests.memory) / alloc.memory, 1.0)
        # the standard deviation of two values is half their distance
        return int((1.0 - abs(cpu - memory) / 2) * MAX_NODE_SCORE)
