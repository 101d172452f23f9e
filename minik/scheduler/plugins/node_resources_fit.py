"""NodeResourcesFit: the pod's requests must fit in what the node has left (cpu, memory, ephemeral storage, pod
count, extended resources); scoring prefers the least allocated nodes (spreading) or, with the MostAllocated
strategy, the most allocated ones (bin packing). Scores use the non-zero requests, as kube-scheduler does, so
pods without requests still spread."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minik.scheduler.arrays import NodeArrays
from minik.scheduler.framework import MAX_NODE_SCORE, SUCCESS, CycleState, NodeInfo, PodInfo, Status, unschedulable

if TYPE_CHECKING:
    import numpy as np

    from minik.scheduler.arrays import Ints, Mask
else:
    from minik.scheduler.arrays import np

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"


def insufficient(pod: PodInfo, node: NodeInfo) -> list[str]:
    """Every resource the node lacks for the pod, in Kubernetes' words ("Too many pods", "Insufficient cpu")."""
    reasons: list[str] = []
    alloc, used, want = node.allocatable, node.requested, pod.requests
    if used.pods + 1 > alloc.pods:
        reasons.append("Too many pods")
    if want.milli_cpu and want.milli_cpu > alloc.milli_cpu - used.milli_cpu:
        reasons.append("Insufficient cpu")
    if want.memory and want.memory > alloc.memory - used.memory:
        reasons.append("Insufficient memory")
    if want.ephemeral_storage and want.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage:
        reasons.append("Insufficient ephemeral-storage")
    for name, amount in want.scalar.items():
        if amount and amount > alloc.scalar.get(name, 0) - used.scalar.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


class NodeResourcesFit:
    name = "NodeResourcesFit"

    def __init__(self, strategy: str = LEAST_ALLOCATED) -> None:
        if strategy not in (LEAST_ALLOCATED, MOST_ALLOCATED):
            raise ValueError(f"unknown scoring strategy {strategy!r}")
        self.strategy = strategy

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        want = pod.requests
        # the common case in three comparisons; the full list of reasons only when something is short
        if node.free_pods > 0 and (not want.milli_cpu or want.milli_cpu <= node.free_milli_cpu) and \
                (not want.memory or want.memory <= node.free_memory) and not want.ephemeral_storage and \
                not want.scalar:
            return SUCCESS
        reasons = insufficient(pod, node)
        return unschedulable(*reasons) if reasons else SUCCESS

    def filter_mask(self, state: CycleState, pod: PodInfo, arrays: NodeArrays) -> Mask | None:
        want = pod.requests
        if want.ephemeral_storage or want.scalar:
            return None  # the columns hold cpu, memory and pods only
        mask: Mask = arrays.free_pods > 0
        # as Kubernetes: a resource the pod does not request never rules a node out, even an overcommitted one
        if want.milli_cpu:
            mask &= arrays.free_cpu >= want.milli_cpu
        if want.memory:
            mask &= arrays.free_memory >= want.memory
        return mask

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        cpu = node.non_zero_cpu + pod.non_zero_cpu
        memory = node.non_zero_memory + pod.non_zero_memory
        if self.strategy == LEAST_ALLOCATED:
            return (_least(cpu, node.alloc_milli_cpu) + _least(memory, node.alloc_memory)) // 2
        return (_most(cpu, node.alloc_milli_cpu) + _most(memory, node.alloc_memory)) // 2

    def score_array(self, state: CycleState, pod: PodInfo, arrays: NodeArrays, rows: Ints) -> Ints:
        if arrays.all_allocatable and self.strategy == LEAST_ALLOCATED:
            # no guard against an empty node, and a node the pod would overcommit scores 0 through the maximum:
            # half the vector operations of _column_score, for the same numbers
            capacity = arrays.alloc_cpu[rows]
            cpu_free = np.maximum(capacity - (arrays.non_zero_cpu[rows] + pod.non_zero_cpu), 0)
            cpu_score = cpu_free * MAX_NODE_SCORE // capacity
            capacity = arrays.alloc_memory[rows]
            memory_free = np.maximum(capacity - (arrays.non_zero_memory[rows] + pod.non_zero_memory), 0)
            total: Ints = (cpu_score + memory_free * MAX_NODE_SCORE // capacity) // 2
            return total
        cpu = _column_score(arrays.non_zero_cpu[rows] + pod.non_zero_cpu, arrays.alloc_cpu[rows], self.strategy)
        memory = _column_score(arrays.non_zero_memory[rows] + pod.non_zero_memory, arrays.alloc_memory[rows],
                               self.strategy)
        scores: Ints = (cpu + memory) // 2
        return scores


def _least(requested: int, capacity: int) -> int:
    if capacity <= 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def _most(requested: int, capacity: int) -> int:
    if capacity <= 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def _column_score(requested: Ints, capacity: Ints, strategy: str) -> Ints:
    """``_least`` or ``_most`` over columns."""
    safe = np.where(capacity > 0, capacity, 1)
    if strategy == LEAST_ALLOCATED:
        scores = np.where((capacity > 0) & (requested <= capacity), (capacity - requested) * MAX_NODE_SCORE // safe, 0)
    else:
        scores = np.where(capacity > 0, np.minimum(requested, capacity) * MAX_NODE_SCORE // safe, 0)
    return scores.astype(np.int64)
