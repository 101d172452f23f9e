"""DefaultPreemption (a PostFilter): when no node fits a pod, find a node where evicting lower-priority pods
makes it fit, with the fewest and least important victims; nominate that node and delete the victims.

Per node (kube-scheduler's selectVictimsOnNode): take away every pod of lower priority, check that the pod then
passes the filters, and give back as many of them as still lets it fit, most important first (higher priority,
then older). The pre-filters' state follows each pod taken away or given back (``remove_pod`` / ``add_pod``), so
inter-pod affinity and topology spread judge the node as it would be. Nodes are tried from a random offset until
``max(100, 10%)`` candidates are found; among them the node whose most important victim has the lowest priority
wins, then the fewest victims, then the lowest sum of priorities.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

import structlog

from minik.aio import start_task, stop_task
from minik.api.errors import StatusError
from minik.client import Client, TransportError
from minik.events import NORMAL, EventRecorder
from minik.scheduler.algorithm import Algorithm, Diagnosis
from minik.scheduler.framework import Code, CycleState, NodeInfo, NodeList, PodInfo

log = structlog.get_logger("minik.scheduler")

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
_INT32_OFFSET = 2 ** 31


def num_candidates(num_nodes: int) -> int:
    """How many candidate nodes the dry run looks for before choosing (kube-scheduler's defaults)."""
    return min(max(num_nodes * MIN_CANDIDATE_NODES_PERCENTAGE // 100, MIN_CANDIDATE_NODES_ABSOLUTE), num_nodes)


def _rank(victims: list[PodInfo]) -> tuple[int, int, int]:
    # kube-scheduler sums priorities offset by 2^31 so that each victim weighs more than any priority difference
    return (max(v.priority for v in victims), sum(v.priority + _INT32_OFFSET for v in victims), len(victims))


def eligible(pod: PodInfo, nodes: NodeList) -> str | None:
    """None when the pod may preempt; else why not (in kube-scheduler's words)."""
    if pod.preemption_policy == "Never":
        return "not eligible due to preemptionPolicy=Never."
    if pod.nominated_node:
        node = nodes.get(pod.nominated_node)
        if node is not None and any(p.deleting and p.priority < pod.priority for p in node.pods.values()):
            return "not eligible due to a terminating pod on the nominated node."
    return None


def victims_on(algorithm: Algorithm, state: CycleState, pod: PodInfo, node: NodeInfo) -> list[PodInfo] | None:
    """The fewest, least important pods to evict from ``node`` for ``pod`` to fit; None if none will do.
    ``state`` is the pre-filtered state of the cycle (cloned here, not changed)."""
    lower = [p for p in node.pods.values() if p.priority < pod.priority]
    if not lower:
        return None
    state = state.clone()
    trial = node.clone()
    for victim in lower:
        trial.remove_pod(victim.key)
        algorithm.remove_pod(state, pod, victim, trial)
    if not algorithm.run_filters_with_nominated(state, pod, trial).ok:
        return None
    victims: list[PodInfo] = []
    # give back the most important first: higher priority, then the older (it has run the longest)
    for candidate in sorted(lower, key=lambda p: (-p.priority, p.created)):
        trial.add_pod(candidate)
        algorithm.add_pod(state, pod, candidate, trial)
        if not algorithm.run_filters_with_nominated(state, pod, trial).ok:
            trial.remove_pod(candidate.key)
            algorithm.remove_pod(state, pod, candidate, trial)
            victims.append(candidate)
    return victims


def find_victims(algorithm: Algorithm, pod: PodInfo, nodes: NodeList, diagnosis: Diagnosis,
                 rng: random.Random) -> tuple[NodeInfo, list[PodInfo]] | None:
    """The node to preempt on and its victims (the dry run); None, with the diagnosis' preemption message set,
    when no node would do."""
    why_not = eligible(pod, nodes)
    if why_not is not None:
        diagnosis.post_filter_message = f"preemption: {why_not}".rstrip(".")
        return None
    all_nodes = nodes.all()
    reasons: Counter[str] = Counter()
    potential: list[NodeInfo] = []
    for node in all_nodes:
        status = diagnosis.statuses.get(node.name)
        if status is None or status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            reasons[NOT_HELPFUL] += 1
        else:
            potential.append(node)
    candidates: list[tuple[tuple[int, int, int], NodeInfo, list[PodInfo]]] = []
    if potential:
        state = algorithm.new_state(nodes)
        if algorithm.run_pre_filters(state, pod) is not None:
            reasons[NO_VICTIMS] += len(potential)
            potential = []
        wanted = num_candidates(len(all_nodes))
        offset = rng.randrange(len(potential)) if potential else 0
        for i in range(len(potential)):
            node = potential[(offset + i) % len(potential)]
            victims = victims_on(algorithm, state, pod, node)
            if not victims:
                reasons[NO_VICTIMS] += 1
                continue
            candidates.append((_rank(victims), node, victims))
            if len(candidates) >= wanted:
                break
    if not candidates:
        detail = ", ".join(sorted(f"{n} {reason}" for reason, n in reasons.items()))
        diagnosis.post_filter_message = f"preemption: 0/{len(all_nodes)} nodes are available: {detail}"
        return None
    _, node, victims = min(candidates, key=lambda c: (c[0], c[1].name))
    return node, victims


class Preemptor:
    """Runs the dry run for a pod no node fits, then evicts the victims through the API."""

    def __init__(self, algorithm: Algorithm, client: Client, scheduler_name: str,
                 recorder: EventRecorder | None = None, rng: random.Random | None = None) -> None:
        self.algorithm = algorithm
        self.client = client
        self.scheduler_name = scheduler_name
        self.recorder = recorder
        self.rng = rng or random.Random()
        self._deletes: set[asyncio.Task[None]] = set()

    def preempt(self, pod: PodInfo, nodes: NodeList, diagnosis: Diagnosis) -> str | None:
        """Nominate a node and start deleting its victims; None (with the diagnosis' preemption message) when
        preemption cannot help."""
        found = find_victims(self.algorithm, pod, nodes, diagnosis, self.rng)
        if found is None:
            return None
        node, victims = found
        log.info("preempting", pod=pod.key, node=node.name, victims=[v.key for v in victims])
        for victim in victims:
            if victim.deleting:
                continue
            task = start_task(self._evict(victim, pod, node.name), name=f"preempt {victim.key}")
            self._deletes.add(task)
            task.add_done_callback(self._deletes.discard)
        return node.name

    async def _evict(self, victim: PodInfo, preemptor: PodInfo, node: str) -> None:
        try:
            await self.client.delete("pods", victim.name, victim.namespace,
                                     preconditions={"uid": victim.uid} if victim.uid else None)
        except (StatusError, TransportError) as exc:
            log.info("could not delete a preemption victim", pod=victim.key, error=str(exc))
            return
        if self.recorder is not None:
            reference: dict[str, Any] = {"kind": "Pod", "apiVersion": "v1",
                                         "metadata": {"name": victim.name, "namespace": victim.namespace,
                                                      "uid": victim.uid}}
            self.recorder.event(reference, NORMAL, "Preempted", f"Preempted by pod {preemptor.uid} on node {node}")

    async def stop(self) -> None:
        for task in list(self._deletes):
            await stop_task(task)
