"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory would be used in equal fractions (the
standard deviation of the fractions, subtracted from 1), so that neither runs out while the other idles."""

from __future__ import annotations

from minik.scheduler.framework import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo


class BalancedAllocation:
    name = "NodeResourcesBalancedAllocation"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        if node.alloc_milli_cpu <= 0 or node.alloc_memory <= 0:
            return 0
        cpu = min((node.alloc_milli_cpu - node.free_milli_cpu + pod.requests.milli_cpu) / node.alloc_milli_cpu, 1.0)
        memory = min((node.alloc_memory - node.free_memory + pod.requests.memory) / node.alloc_memory, 1.0)
        # the standard deviation of two values is half their distance
        return int((1.0 - abs(cpu - memory) / 2) * MAX_NODE_SCORE)

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[int]:
        c, m = pod.requests.milli_cpu, pod.requests.memory
        # score() inlined (the hot loop of every cycle), fractions capped at 1
        return [int((1.0 - abs((x if (x := (n.alloc_milli_cpu - n.free_milli_cpu + c) / n.alloc_milli_cpu) < 1.0
                                else 1.0)
                               - (y if (y := (n.alloc_memory - n.free_memory + m) / n.alloc_memory) < 1.0
                                  else 1.0)) * 0.5) * MAX_NODE_SCORE)
                if n.alloc_milli_cpu > 0 and n.alloc_memory > 0 else 0 for n in nodes]
