"""One scheduling decision over the cache: pre-filter, filter (a rotating, bounded sample of nodes), pre-score,
score, normalize, weight, and pick the best node at random among ties (kube-scheduler's schedulePod).

The same code explains a decision (``explain``): every node's first failing filter, or each score plugin's
weighted score and the total.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from minik.scheduler.framework import (BatchFilterPlugin, BatchScorePlugin, ClusterView, Code, CycleState,
                                       FilterPlugin, NodeInfo, NodeList, NormalizePlugin, PodInfo,
                                       PreFilterExtensions, PreFilterPlugin, PreScorePlugin, ScorePlugin, Status)
from minik.scheduler.plugins.registry import Profile

NO_NODES_MESSAGE = "no nodes available to schedule pods"
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE = 5


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int = 0) -> int:
    """How many feasible nodes to find before scoring (percentageOfNodesToScore): all of a small cluster; of a
    large one, ``percentage`` percent, or when that is 0 an adaptive share (50% less 1% per 125 nodes, at least
    5%), and never fewer than 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return num_all_nodes
    if percentage <= 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass
class Diagnosis:
    """Why no node fits: each rejected node's status."""

    num_all_nodes: int
    statuses: dict[str, Status] = field(default_factory=dict)
    pre_filter: Status | None = None
    post_filter_message: str = ""

    @property
    def unschedulable_plugins(self) -> set[str]:
        plugins = {s.plugin for s in self.statuses.values() if s.plugin}
        if self.pre_filter is not None and self.pre_filter.plugin:
            plugins.add(self.pre_filter.plugin)
        return plugins

    def message(self) -> str:
        """Kubernetes' FitError message: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated
        taint {dedicated: gpu}. preemption: ..."."""
        if self.num_all_nodes == 0:
            return NO_NODES_MESSAGE
        text = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter is not None and self.pre_filter.message:
            # a pre-filter's failure stands for every node: say it once, not once per node
            text += f" {self.pre_filter.message}."
        else:
            counts: Counter[str] = Counter()
            for status in self.statuses.values():
                counts.update(status.reasons)
            if counts:
                text += " " + ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items())) + "."
        if self.post_filter_message:
            text += f" {self.post_filter_message}."
        return text


class FitError(Exception):
    def __init__(self, pod: PodInfo, diagnosis: Diagnosis) -> None:
        super().__init__(diagnosis.message())
        self.pod = pod
        self.diagnosis = diagnosis


@dataclass
class ScheduleResult:
    node: str
    evaluated_nodes: int
    feasible_nodes: int


@dataclass
class NodeExplanation:
    node: str
    status: Status
    scores: dict[str, int] = field(default_factory=dict)
    """Each score plugin's normalized score times its weight (feasible nodes only)."""
    total: int = 0


@dataclass
class Explanation:
    pod: str
    nodes: list[NodeExplanation]
    chosen: str | None
    message: str


class Algorithm:
    """A profile's plugins sorted by extension point, and the state that spans cycles (the rotating start)."""

    def __init__(self, profile: Profile, percentage_of_nodes_to_score: int = 0,
                 rng: random.Random | None = None, cluster: ClusterView | None = None) -> None:
        plugins = profile.plugins
        self.cluster = cluster
        self.pre_filters = [p for p in plugins if isinstance(p, PreFilterPlugin)]
        self.filters = [p for p in plugins if isinstance(p, FilterPlugin)]
        self.pre_scores = [p for p in plugins if isinstance(p, PreScorePlugin)]
        self.scores = [(p, profile.weights.get(p.name, 1)) for p in plugins if isinstance(p, ScorePlugin)]
        self.scores = [(p, w) for p, w in self.scores if w > 0]
        # resolved once: runtime protocol checks are far too slow for every cycle
        self._batch_filters = {p.name for p in self.filters if isinstance(p, BatchFilterPlugin)}
        self._batch_scores = {p.name for p in plugins if isinstance(p, BatchScorePlugin)}
        self._normalizers = {p.name for p in plugins if isinstance(p, NormalizePlugin)}
        self._extensions = [p for p in self.pre_filters if isinstance(p, PreFilterExtensions)]
        self.percentage = percentage_of_nodes_to_score
        self.rng = rng or random.Random()
        self.next_start_node_index = 0

    def new_state(self, nodes: NodeList) -> CycleState:
        return CycleState(nodes, self.cluster)

    # -- filtering -----------------------------------------------------------------------------------------------
    def run_pre_filters(self, state: CycleState, pod: PodInfo) -> Status | None:
        """None when every pre-filter passed (or skipped); else the failure that rules out every node."""
        for plugin in self.pre_filters:
            status = plugin.pre_filter(state, pod)
            if status.code == Code.SKIP:
                state.skip_filters.add(plugin.name)
            elif status.code != Code.SUCCESS:
                return status.with_plugin(plugin.name)
        return None

    def active_filters(self, state: CycleState) -> list[tuple[str, Any]]:
        return [(p.name, p.filter) for p in self.filters if p.name not in state.skip_filters]

    def run_filters(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        for name, run in self.active_filters(state):
            status = run(state, pod, node)
            if status.code:
                return status.with_plugin(name)
        return Status()

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, node: NodeInfo) -> None:
        """``added`` now counts on ``node`` (a clone): bring the pre-filters' state up to date."""
        for plugin in self._extensions:
            if plugin.name not in state.skip_filters:
                plugin.add_pod(state, pod, added, node)

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, node: NodeInfo) -> None:
        for plugin in self._extensions:
            if plugin.name not in state.skip_filters:
                plugin.remove_pod(state, pod, removed, node)

    def with_nominated(self, state: CycleState, pod: PodInfo, node: NodeInfo,
                       nominated: list[PodInfo]) -> tuple[CycleState, NodeInfo] | None:
        """The state and a clone of ``node`` with the pods nominated to it that are at least as important as
        ``pod`` counted on it; None when there are none."""
        added = [p for p in nominated if p.priority >= pod.priority and p.key != pod.key]
        if not added:
            return None
        state, node = state.clone(), node.clone()
        for other in added:
            node.add_pod(other)
            self.add_pod(state, pod, other, node)
        return state, node

    def run_filters_with_nominated(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """As kube-scheduler: the pod must fit both with the nominated pods of the node counted and without them
        (their presence may matter to affinity either way)."""
        status = self.run_filters(state, pod, node)
        if not status.ok:
            return status
        nominated = state.nodes.nominated(node.name)
        trial = self.with_nominated(state, pod, node, nominated) if nominated else None
        if trial is None:
            return status
        return self.run_filters(trial[0], pod, trial[1])

    def find_feasible(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo],
                      diagnosis: Diagnosis) -> list[NodeInfo]:
        """Filter nodes in order from the rotating start until enough are feasible. Nodes go through in chunks of
        as many as are still wanted, each filter checking a whole chunk at once; so exactly the nodes a
        node-by-node loop would visit are visited."""
        total = len(nodes)
        want = num_feasible_nodes_to_find(total, self.percentage)
        filters = [p for p in self.filters if p.name not in state.skip_filters]
        feasible: list[NodeInfo] = []
        statuses = diagnosis.statuses
        start = self.next_start_node_index % total if total else 0
        order = _rotated(nodes, start)
        processed = 0
        nominations = state.nodes.nominated_nodes()
        while processed < total and len(feasible) < want:
            chunk = order[processed:processed + want - len(feasible)]
            processed += len(chunk)
            for plugin in filters:
                if plugin.name in self._batch_filters:
                    passed = plugin.filter_nodes(state, pod, chunk)  # type: ignore[attr-defined]
                    if len(passed) != len(chunk):
                        kept = set(map(id, passed))
                        for node in chunk:
                            if id(node) not in kept:
                                statuses[node.name] = plugin.filter(state, pod, node).with_plugin(plugin.name)
                    chunk = passed
                else:
                    passed = []
                    for node in chunk:
                        status = plugin.filter(state, pod, node)
                        if status.code:
                            statuses[node.name] = status.with_plugin(plugin.name)
                        else:
                            passed.append(node)
                    chunk = passed
                if not chunk:
                    break
            if not nominations:
                feasible.extend(chunk)
                continue
            for node in chunk:
                if node.name in nominations:
                    trial = self.with_nominated(state, pod, node, state.nodes.nominated(node.name))
                    status = self.run_filters(trial[0], pod, trial[1]) if trial is not None else Status()
                    if not status.ok:
                        statuses[node.name] = status
                        continue
                feasible.append(node)
        if total:
            self.next_start_node_index = (start + processed) % total
        return feasible

    # -- scoring -------------------------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo],
              breakdown: dict[str, list[int]] | None = None) -> list[int]:
        """The weighted total of every score plugin for each node (in ``nodes`` order)."""
        for plugin in self.pre_scores:
            if plugin.pre_score(state, pod, nodes).code == Code.SKIP:
                state.skip_scores.add(plugin.name)
        totals = [0] * len(nodes)
        for plugin, weight in self.scores:
            if plugin.name in state.skip_scores:
                continue
            if plugin.name in self._batch_scores:
                scores = plugin.score_nodes(state, pod, nodes)  # type: ignore[attr-defined]
            else:
                run = plugin.score
                scores = [run(state, pod, node) for node in nodes]
            if plugin.name in self._normalizers:
                plugin.normalize(state, pod, nodes, scores)  # type: ignore[attr-defined]
            if breakdown is not None:
                breakdown[plugin.name] = [s * weight for s in scores]
            if weight == 1:
                totals = [t + s for t, s in zip(totals, scores)]
            else:
                totals = [t + s * weight for t, s in zip(totals, scores)]
        return totals

    def select(self, nodes: list[NodeInfo], totals: list[int]) -> NodeInfo:
        """The best node; ties broken uniformly at random (reservoir sampling, as kube-scheduler's selectHost)."""
        best = max(totals)
        ties = [i for i, t in enumerate(totals) if t == best]
        return nodes[ties[0] if len(ties) == 1 else self.rng.choice(ties)]

    # -- one decision --------------------------------------------------------------------------------------------
    def schedule(self, pod: PodInfo, node_list: NodeList, nominated_node: str | None = None) -> ScheduleResult:
        """The node for the pod, or FitError with the diagnosis. Runs without awaiting: one consistent view.
        A pod that preemption nominated to a node goes there if it fits now, before any other node is tried."""
        nodes = node_list.all()
        diagnosis = Diagnosis(len(nodes))
        if not nodes:
            raise FitError(pod, diagnosis)
        state = self.new_state(node_list)
        failed = self.run_pre_filters(state, pod)
        if failed is not None:
            diagnosis.pre_filter = failed
            for node in nodes:
                diagnosis.statuses[node.name] = failed
            raise FitError(pod, diagnosis)
        nominated = node_list.get(nominated_node or pod.nominated_node) \
            if nominated_node or pod.nominated_node else None
        if nominated is not None and self.run_filters_with_nominated(state, pod, nominated).ok:
            return ScheduleResult(nominated.name, 1, 1)
        feasible = self.find_feasible(state, pod, nodes, diagnosis)
        if not feasible:
            raise FitError(pod, diagnosis)
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, len(diagnosis.statuses) + 1, 1)
        totals = self.score(state, pod, feasible)
        chosen = self.select(feasible, totals)
        return ScheduleResult(chosen.name, len(diagnosis.statuses) + len(feasible), len(feasible))

    def explain(self, pod: PodInfo, node_list: NodeList) -> Explanation:
        """Every node's verdict (no sampling): the first filter that rejects it, or its scores."""
        nodes = node_list.all()
        state = self.new_state(node_list)
        diagnosis = Diagnosis(len(nodes))
        failed = self.run_pre_filters(state, pod)
        explained: list[NodeExplanation] = []
        feasible: list[NodeInfo] = []
        for node in nodes:
            status = failed if failed is not None else self.run_filters_with_nominated(state, pod, node)
            explained.append(NodeExplanation(node.name, status))
            if status.ok:
                feasible.append(node)
            else:
                diagnosis.statuses[node.name] = status
        if failed is not None:
            diagnosis.pre_filter = failed
        chosen: str | None = None
        if feasible:
            breakdown: dict[str, list[int]] = {}
            totals = self.score(state, pod, feasible, breakdown)
            by_name = {e.node: e for e in explained}
            for i, node in enumerate(feasible):
                entry = by_name[node.name]
                entry.scores = {name: values[i] for name, values in breakdown.items()}
                entry.total = totals[i]
            best = max(totals)
            chosen = ", ".join(n.name for n, t in zip(feasible, totals) if t == best)
            message = f"{len(feasible)}/{len(nodes)} nodes are feasible"
        else:
            message = diagnosis.message()
        return Explanation(pod.key, explained, chosen, message)


def _rotated(nodes: list[NodeInfo], start: int) -> list[NodeInfo]:
    return nodes[start:] + nodes[:start] if start else nodes
