"""NodeResourcesFit: the pod's requests must fit in what the node has left (cpu, memory, ephemeral storage, pod
count, extended resources); scoring prefers the least allocated nodes (spreading) or, with the MostAllocated
strategy, the most allocated ones (bin packing). Scores use the non-zero requests, as kube-scheduler does, so
pods without requests still spread."""

from __future__ import annotations

from minik.scheduler.framework import (MAX_NODE_SCORE, SUCCESS, CycleState, NodeInfo, PodInfo, Status,
                                       unschedulable)

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
        if node.free_pods > 0 and want.milli_cpu <= node.free_milli_cpu and want.memory <= node.free_memory and \
                not want.ephemeral_storage and not want.scalar:
            return SUCCESS
        reasons = insufficient(pod, node)
        return unschedulable(*reasons) if reasons else SUCCESS

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
        want = pod.requests
        if want.ephemeral_storage or want.scalar:
            return [n for n in nodes if not insufficient(pod, n)]
        cpu, memory = want.milli_cpu, want.memory
        return [n for n in nodes if n.free_pods > 0 and cpu <= n.free_milli_cpu and memory <= n.free_memory]

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        cpu = node.non_zero_cpu + pod.non_zero_cpu
        memory = node.non_zero_memory + pod.non_zero_memory
        if self.strategy == LEAST_ALLOCATED:
            return (_least(cpu, node.alloc_milli_cpu) + _least(memory, node.alloc_memory)) // 2
        return (_most(cpu, node.alloc_milli_cpu) + _most(memory, node.alloc_memory)) // 2

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[int]:
        if self.strategy != LEAST_ALLOCATED:
            return [self.score(state, pod, n) for n in nodes]
        c, m = pod.non_zero_cpu, pod.non_zero_memory
        # _least inlined (the hot loop of every cycle): over capacity, or no capacity, scores 0
        return [((((ac - n.non_zero_cpu - c) * 100 // ac) if (ac := n.alloc_milli_cpu) > n.non_zero_cpu + c else 0)
                 + (((am - n.non_zero_memory - m) * 100 // am) if (am := n.alloc_memory) > n.non_zero_memory + m
                    else 0)) // 2 for n in nodes]


def _least(requested: int, capacity: int) -> int:
    if capacity <= 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def _most(requested: int, capacity: int) -> int:
    if capacity <= 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity
