"""DefaultPreemption (a PostFilter): when no node fits a pod, find a node where evicting lower-priority pods
makes it fit, with the fewest and least important victims; nominate that node and delete the victims.

Per node: take away every pod of lower priority, check that the pod then passes the filters, and give back as
many of them as still lets it fit, most important first (kube-scheduler's selectVictimsOnNode). Among the
candidate nodes, the one whose most important victim has the lowest priority wins, then the lowest sum of
priorities, then the fewest victims.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import structlog

from minik.aio import start_task
from minik.api.errors import StatusError
from minik.client import Client, TransportError
from minik.events import NORMAL, EventRecorder
from minik.scheduler.algorithm import Algorithm, Diagnosis
from minik.scheduler.framework import Code, CycleState, NodeInfo, NodeList, PodInfo

log = structlog.get_logger("minik.scheduler")

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


class Preemptor:
    def __init__(self, algorithm: Algorithm, client: Client, scheduler_name: str,
                 recorder: EventRecorder | None = None) -> None:
        self.algorithm = algorithm
        self.client = client
        self.scheduler_name = scheduler_name
        self.recorder = recorder
        self._deletes: set[asyncio.Task[None]] = set()

    def eligible(self, pod: PodInfo, nodes: NodeList) -> str | None:
        """None when the pod may preempt; else why not (in kube-scheduler's words)."""
        if pod.preemption_policy == "Never":
            return "not eligible due to preemptionPolicy=Never."
        if pod.nominated_node:
            node = nodes.get(pod.nominated_node)
            if node is not None and any(p.deleting and p.priority < pod.priority for p in node.pods.values()):
                return "not eligible due to a terminating pod on the nominated node."
        return None

    def victims_on(self, pod: PodInfo, node: NodeInfo, nodes: NodeList) -> list[PodInfo] | None:
        """The fewest, least important pods to evict from ``node`` for ``pod`` to fit; None if none will do."""
        lower = [p for p in node.pods.values() if p.priority < pod.priority]
        if not lower:
            return None
        trial = node.clone()
        for victim in lower:
            trial.remove_pod(victim.key)
        state = CycleState(nodes)
        if self.algorithm.run_pre_filters(state, pod) is not None:
            return None
        if not self.algorithm.run_filters(state, pod, trial).ok:
            return None
        victims: list[PodInfo] = []
        # reprieve the most important first; among equals the newest goes first (it has run the least)
        for candidate in sorted(lower, key=lambda p: (-p.priority, p.created)):
            trial.add_pod(candidate)
            if not self.algorithm.run_filters(state, pod, trial).ok:
                trial.remove_pod(candidate.key)
                victims.append(candidate)
        return victims

    def find(self, pod: PodInfo, nodes: NodeList, diagnosis: Diagnosis) -> tuple[NodeInfo, list[PodInfo]] | None:
        reasons: Counter[str] = Counter()
        candidates: list[tuple[tuple[int, int, int], NodeInfo, list[PodInfo]]] = []
        for node in nodes.all():
            status = diagnosis.statuses.get(node.name)
            if status is None or status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                reasons[NOT_HELPFUL] += 1
                continue
            victims = self.victims_on(pod, node, nodes)
            if not victims:
                reasons[NO_VICTIMS] += 1
                continue
            rank = (max(v.priority for v in victims), sum(v.priority for v in victims), len(victims))
            candidates.append((rank, node, victims))
        if not candidates:
            detail = ", ".join(sorted(f"{n} {reason}" for reason, n in reasons.items()))
            diagnosis.post_filter_message = f"preemption: 0/{len(nodes.all())} nodes are available: {detail}"
            return None
        _, node, victims = min(candidates, key=lambda c: (c[0], c[1].name))
        return node, victims

    def preempt(self, pod: PodInfo, nodes: NodeList, diagnosis: Diagnosis) -> str | None:
        """Nominate a node and start deleting its victims; None (with the diagnosis' preemption message) when
        preemption cannot help."""
        why_not = self.eligible(pod, nodes)
        if why_not is not None:
            diagnosis.post_filter_message = f"preemption: {why_not}".rstrip(".")
            return None
        found = self.find(pod, nodes, diagnosis)
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
            self.recorder.event(reference, NORMAL, "Preempted",
                                f"Preempted by pod {preemptor.key} on node {node}")

    async def stop(self) -> None:
        from minik.aio import stop_task

        for task in list(self._deletes):
            await stop_task(task)
