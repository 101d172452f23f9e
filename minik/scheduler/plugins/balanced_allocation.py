"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory would be used in equal fractions (the
standard deviation of the fractions, subtracted from 1), so that neither runs out while the other idles."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minik.scheduler.arrays import NodeArrays
from minik.scheduler.framework import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo

if TYPE_CHECKING:
    import numpy as np

    from minik.scheduler.arrays import Ints
else:
    from minik.scheduler.arrays import np


class BalancedAllocation:
    name = "NodeResourcesBalancedAllocation"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        if node.alloc_milli_cpu <= 0 or node.alloc_memory <= 0:
            return 0
        cpu = min((node.alloc_milli_cpu - node.free_milli_cpu + pod.requests.milli_cpu) / node.alloc_milli_cpu, 1.0)
        memory = min((node.alloc_memory - node.free_memory + pod.requests.memory) / node.alloc_memory, 1.0)
        # the standard deviation of two values is half their distance
        return int((1.0 - abs(cpu - memory) / 2) * MAX_NODE_SCORE)

    def score_array(self, state: CycleState, pod: PodInfo, arrays: NodeArrays, rows: Ints) -> Ints:
        if arrays.all_allocatable:  # no guard against an empty node
            capacity = arrays.alloc_cpu[rows]
            cpu = np.minimum((capacity - arrays.free_cpu[rows] + pod.requests.milli_cpu) / capacity, 1.0)
            capacity = arrays.alloc_memory[rows]
            memory = np.minimum((capacity - arrays.free_memory[rows] + pod.requests.memory) / capacity, 1.0)
            total: Ints = ((1.0 - np.abs(cpu - memory) / 2) * MAX_NODE_SCORE).astype(np.int64)
            return total
        alloc_cpu, alloc_memory = arrays.alloc_cpu[rows], arrays.alloc_memory[rows]
        valid = (alloc_cpu > 0) & (alloc_memory > 0)
        cpu = np.minimum((alloc_cpu - arrays.free_cpu[rows] + pod.requests.milli_cpu)
                         / np.where(valid, alloc_cpu, 1), 1.0)
        memory = np.minimum((alloc_memory - arrays.free_memory[rows] + pod.requests.memory)
                            / np.where(valid, alloc_memory, 1), 1.0)
        scores: Ints = np.where(valid, ((1.0 - np.abs(cpu - memory) / 2) * MAX_NODE_SCORE).astype(np.int64), 0)
        return scores
