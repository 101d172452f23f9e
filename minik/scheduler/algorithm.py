"""One scheduling decision over the cache: pre-filter, filter (a rotating, bounded sample of nodes), pre-score,
score, normalize, weight, and pick the best node at random among ties (kube-scheduler's schedulePod).

The same code explains a decision (``explain``): every node's first failing filter, or each score plugin's
weighted score and the total.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from minik.scheduler.arrays import RowNodes
from minik.scheduler.framework import (
    ClusterView,
    Code,
    CycleState,
    FilterPlugin,
    NodeInfo,
    NodeList,
    NormalizePlugin,
    PodInfo,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    Status,
    VectorFilterPlugin,
    VectorScorePlugin,
)
from minik.scheduler.plugins.registry import Profile

if TYPE_CHECKING:
    import numpy as np

    from minik.scheduler.arrays import Ints, Mask
else:
    from minik.scheduler.arrays import np

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
    evaluated: int = 0
    """How many nodes the filters were run on."""
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
        self._vector_filters = {p.name for p in self.filters if isinstance(p, VectorFilterPlugin)}
        self._vector_scores = {p.name for p in plugins if isinstance(p, VectorScorePlugin)}
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
        state.active_filters = None
        for plugin in self.pre_filters:
            status = plugin.pre_filter(state, pod)
            if status.code == Code.SKIP:
                state.skip_filters.add(plugin.name)
            elif status.code != Code.SUCCESS:
                return status.with_plugin(plugin.name)
        return None

    def active_filters(self, state: CycleState) -> list[tuple[str, Any]]:
        """The filters the pre-filters did not skip (once per cycle: preemption runs them for every node)."""
        if state.active_filters is None:
            state.active_filters = [(p.name, p.filter) for p in self.filters if p.name not in state.skip_filters]
        return state.active_filters

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
                      diagnosis: Diagnosis) -> tuple[Sequence[NodeInfo], Ints]:
        """The first feasible nodes in order from the rotating start, until enough are found, and their rows.

        Filters that work on columns (``filter_mask``) check every node at once; the others then check the
        surviving nodes in that order, in chunks of as many as are still wanted, so exactly the nodes a
        node-by-node loop would reach are visited. When no node fits, every node's status goes in the
        diagnosis (the message and preemption need them)."""
        total = len(nodes)
        want = num_feasible_nodes_to_find(total, self.percentage)
        arrays = state.nodes.arrays()
        mask: Mask | None = None
        per_node = []
        for plugin in self.filters:
            if plugin.name in state.skip_filters:
                continue
            found = None
            if plugin.name in self._vector_filters:
                found = plugin.filter_mask(state, pod, arrays)  # type: ignore[attr-defined]
            if found is None:
                per_node.append(plugin)
            elif found is not True:  # True: every node passes
                mask = found if mask is None else mask & found
        start = self.next_start_node_index % total
        nominations = state.nodes.nominated_nodes()
        whole = bool(per_node or nominations)  # the per-node filters may need every row, not the first ``want``
        rows: Ints
        if mask is None:
            rows = np.arange(start, start + (total if whole else min(want, total)), dtype=np.int64)
            if start:
                rows[rows >= total] -= total
        else:
            # the rows from the rotating start to the end, then (when they are not enough) from the beginning
            rows = np.flatnonzero(mask[start:] if start else mask)
            if start:
                rows += start
                if whole or len(rows) < want:
                    rows = np.concatenate((rows, np.flatnonzero(mask[:start])))
        if not whole:
            rows = rows[:want]
            feasible: Sequence[NodeInfo] = RowNodes(arrays, rows)
        else:
            feasible, kept = [], []
            order = rows.tolist()
            position = 0
            while position < len(order) and len(feasible) < want:
                chunk = [nodes[i] for i in order[position:position + want - len(feasible)]]
                position += len(chunk)
                for plugin in per_node:
                    run = plugin.filter
                    chunk = [n for n in chunk if not run(state, pod, n).code]
                    if not chunk:
                        break
                for node in chunk:
                    if node.name in nominations:
                        trial = self.with_nominated(state, pod, node, state.nodes.nominated(node.name))
                        if trial is not None and not self.run_filters(trial[0], pod, trial[1]).ok:
                            continue
                    feasible.append(node)
                    kept.append(node.row)
            rows = np.asarray(kept, dtype=np.int64)
        if len(feasible) >= want:
            processed = (int(rows[-1]) - start) % total + 1
        else:
            processed = total
        self.next_start_node_index = (start + processed) % total
        diagnosis.evaluated = processed
        if not feasible:
            for node in nodes:
                status = self.run_filters_with_nominated(state, pod, node)
                if not status.ok:
                    diagnosis.statuses[node.name] = status
        return feasible, rows

    # -- scoring -------------------------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], rows: Ints | None = None,
              breakdown: dict[str, list[int]] | None = None) -> Ints:
        """The weighted total of every score plugin for each node (in ``nodes`` order). With ``rows`` (the
        nodes' rows in the cycle's columns) plugins that can score columns do (``score_array``)."""
        for pre in self.pre_scores:
            if pre.pre_score(state, pod, nodes).code == Code.SKIP:
                state.skip_scores.add(pre.name)
        arrays = state.nodes.arrays() if rows is not None else None
        totals: Ints = np.zeros(len(nodes), dtype=np.int64)
        for plugin, weight in self.scores:
            name = plugin.name
            if name in state.skip_scores:
                continue
            if arrays is not None and rows is not None and name in self._vector_scores:
                scores: Ints = plugin.score_array(state, pod, arrays, rows)  # type: ignore[attr-defined]
                if name in self._normalizers:
                    listed = scores.tolist()
                    plugin.normalize(state, pod, nodes, listed)  # type: ignore[attr-defined]
                    scores = np.asarray(listed, dtype=np.int64)
            else:
                run = plugin.score
                listed = [run(state, pod, node) for node in nodes]
                if name in self._normalizers:
                    plugin.normalize(state, pod, nodes, listed)  # type: ignore[attr-defined]
                scores = np.asarray(listed, dtype=np.int64)
            if weight != 1:
                scores = scores * weight
            if breakdown is not None:
                breakdown[name] = scores.tolist()
            totals += scores
        return totals

    def select(self, nodes: Sequence[NodeInfo], totals: Ints) -> NodeInfo:
        """The best node; ties broken uniformly at random (as kube-scheduler's selectHost)."""
        ties = np.flatnonzero(totals == totals.max())
        return nodes[int(ties[0]) if len(ties) == 1 else int(ties[self.rng.randrange(len(ties))])]

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
        feasible, rows = self.find_feasible(state, pod, nodes, diagnosis)
        if not feasible:
            raise FitError(pod, diagnosis)
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, diagnosis.evaluated, 1)
        totals = self.score(state, pod, feasible, rows)
        chosen = self.select(feasible, totals)
        return ScheduleResult(chosen.name, diagnosis.evaluated, len(feasible))

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
            totals = self.score(state, pod, feasible, breakdown=breakdown).tolist()
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
