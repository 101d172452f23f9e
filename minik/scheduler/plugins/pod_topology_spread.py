"""PodTopologySpread: keep the pods a constraint selects evenly spread over the domains of its topologyKey
(kube-scheduler's plugin of that name).

A constraint counts, per domain (a node, a zone...), the pods of the pod's namespace its labelSelector (plus the
pod's own values of ``matchLabelKeys``) selects, over the nodes that carry every constraint's key and pass the
pod's node affinity (``nodeAffinityPolicy: Honor``, the default) and, when asked, its taints
(``nodeTaintsPolicy: Honor``).

- Filter (``whenUnsatisfiable: DoNotSchedule``): placing the pod in a node's domain must keep
  ``count + 1 - global minimum <= maxSkew``, the minimum being 0 while fewer than ``minDomains`` domains exist.
- Score (``ScheduleAnyway``): fewer matching pods in a node's domains score higher, each constraint weighted by
  log(number of domains + 2). A pod with no constraints at all gets the default ones, as kube-scheduler's:
  maxSkew 3 over hostnames and 5 over zones, selecting the pods of its Services and of its controller
  (ReplicaSet, ReplicationController, StatefulSet), so that replicas spread even when they ask for nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from minik.api.selectors import IN, LabelSelector, Requirement, selector_from_dict
from minik.scheduler.arrays import NodeArrays
from minik.scheduler.framework import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    CycleState,
    NodeInfo,
    PodInfo,
    Status,
    unresolvable,
    unschedulable,
)
from minik.scheduler.infos import label_keys
from minik.scheduler.plugins.node_affinity import pod_matches_node
from minik.scheduler.plugins.taint_toleration import untolerated_hard_taint

if TYPE_CHECKING:
    import numpy as np

    from minik.scheduler.arrays import Mask
else:
    from minik.scheduler.arrays import np

ERR_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
ERR_MISSING_LABEL = ERR_CONSTRAINTS + " (missing required label)"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"

Obj = dict[str, Any]
Pair = tuple[str, str]
_NOTHING = LabelSelector.nothing()


@dataclass(frozen=True)
class Constraint:
    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_node_taints: bool = False

    def includes(self, pod: PodInfo, node: NodeInfo) -> bool:
        """Whether the node's domain counts at all (the node inclusion policies)."""
        if self.honor_node_affinity and not pod_matches_node(pod, node):
            return False
        if self.honor_node_taints and untolerated_hard_taint(pod, node) is not None:
            return False
        return True


#: kube-scheduler's system default constraints, for pods that declare none
DEFAULT_CONSTRAINTS = ((HOSTNAME, 3), (ZONE, 5))


def _constraint(raw: Mapping[str, Any], labels: Mapping[str, str], selector: LabelSelector | None = None
                ) -> Constraint:
    if selector is None:
        try:
            selector = selector_from_dict(raw.get("labelSelector"))
        except ValueError:
            selector = _NOTHING
        extra = [Requirement(k, IN, (labels[k],)) for k in raw.get("matchLabelKeys") or [] if k in labels]
        if extra and selector != _NOTHING:
            selector = LabelSelector([*selector.requirements, *extra])
    return Constraint(int(raw.get("maxSkew") or 1), str(raw.get("topologyKey") or ""), selector,
                      int(raw.get("minDomains") or 1), (raw.get("nodeAffinityPolicy") or HONOR) == HONOR,
                      (raw.get("nodeTaintsPolicy") or IGNORE) == HONOR)


def constraints_for(state: CycleState, pod: PodInfo, action: str) -> tuple[list[Constraint], bool]:
    """The pod's constraints with ``whenUnsatisfiable == action``, or the defaults when it declares none; and
    whether they are the defaults."""
    if pod.spread_constraints:
        return [_constraint(c, pod.labels) for c in pod.spread_constraints
                if isinstance(c, Mapping) and (c.get("whenUnsatisfiable") or DO_NOT_SCHEDULE) == action], False
    if action != SCHEDULE_ANYWAY:
        return [], True
    selector = state.cluster.default_spread_selector(pod)
    if selector is None:
        return [], True
    return [Constraint(skew, key, selector, 1, True, False) for key, skew in DEFAULT_CONSTRAINTS], True


def count_matching(node: NodeInfo, selector: LabelSelector, namespace: str) -> int:
    """Pods on the node in ``namespace`` that the selector selects, leaving out those being deleted (an empty
    selector counts none, as Kubernetes')."""
    if selector.empty:
        return 0
    return node.count_pods(selector, (namespace,), skip_deleting=True)


def _has_keys(node: NodeInfo, constraints: list[Constraint]) -> bool:
    labels = node.labels
    return all(c.topology_key in labels for c in constraints)


class _FilterState:
    """Matching pods per domain (every domain of an eligible node, even with none), and per key the lowest
    count and the number of domains (computed when first needed after a change). ``checks`` pairs each
    constraint with whether the pod counts itself (its labels match the selector)."""

    __slots__ = ("constraints", "checks", "counts", "_lowest", "_domains")

    def __init__(self, constraints: list[Constraint], pod: PodInfo) -> None:
        self.constraints = constraints
        self.checks = [(c, 1 if c.selector.matches(pod.labels) else 0) for c in constraints]
        self.counts: dict[Pair, int] = {}
        self._lowest: dict[str, int] | None = None
        self._domains: dict[str, int] = {}

    def minimum(self, key: str, min_domains: int) -> int:
        """The global minimum for a key: the lowest count over its domains, or 0 while fewer than
        ``min_domains`` domains exist."""
        if self._lowest is None:
            lowest: dict[str, int] = {}
            domains: dict[str, int] = {}
            for (k, _), n in self.counts.items():
                lowest[k] = min(lowest.get(k, n), n)
                domains[k] = domains.get(k, 0) + 1
            self._lowest, self._domains = lowest, domains
        if self._domains.get(key, 0) < min_domains:
            return 0
        return self._lowest.get(key, 0)

    def add(self, pair: Pair, delta: int) -> None:
        self.counts[pair] = self.counts.get(pair, 0) + delta
        self._lowest = None

    def clone(self) -> _FilterState:
        other = _FilterState.__new__(_FilterState)
        other.constraints, other.checks = self.constraints, self.checks
        other.counts = dict(self.counts)
        other._lowest, other._domains = None, {}
        return other


class _ScoreState:
    __slots__ = ("constraints", "counts", "weights", "ignored")

    def __init__(self, constraints: list[Constraint]) -> None:
        self.constraints = constraints
        self.counts: dict[Pair, int] = {}
        self.weights: list[float] = []
        self.ignored: set[str] = set()


class PodTopologySpread:
    name = "PodTopologySpread"

    # -- filtering ---------------------------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        constraints, _ = constraints_for(state, pod, DO_NOT_SCHEDULE)
        if not constraints:
            return SKIP
        counts = _FilterState(constraints, pod)
        tally = counts.counts
        arrays = state.nodes.arrays()
        nodes = state.nodes.all()
        columns = [arrays.label_ids(c.topology_key) for c in constraints]
        eligible: Mask = np.ones(arrays.size, dtype=np.bool_)
        for ids, _ in columns:
            eligible &= ids >= 0
        # the inclusion policies only matter when the pod restricts its nodes or honours taints
        restricted = bool(pod.node_selector or pod.affinity.get("nodeAffinity"))
        namespaces = (pod.namespace,)
        for c, (ids, values) in zip(constraints, columns):
            rows = np.flatnonzero(eligible).tolist()
            if (c.honor_node_affinity and restricted) or c.honor_node_taints:
                rows = [r for r in rows if c.includes(pod, nodes[r])]
            key = c.topology_key
            for index in set(ids[rows].tolist()):  # every eligible domain counts, even with no pod
                tally[(key, values[index])] = 0
            if c.selector.empty:
                continue
            keys = label_keys(c.selector, namespaces)
            for r in rows:
                node = nodes[r]
                if node.pods:
                    found = node.count_labelled(keys) if keys is not None and not node.deleting_pods else \
                        node.count_pods(c.selector, namespaces, skip_deleting=True)
                    if found:
                        pair = (key, values[ids[r]])
                        tally[pair] += found
        state[self.name] = counts
        return SUCCESS

    def _update(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo, delta: int) -> None:
        counts: _FilterState | None = state.get(self.name)
        if counts is None or other.namespace != pod.namespace or not _has_keys(node, counts.constraints):
            return
        for c in counts.constraints:
            if c.selector.matches(other.labels) and c.includes(pod, node):
                counts.add((c.topology_key, node.labels[c.topology_key]), delta)

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, node: NodeInfo) -> None:
        self._update(state, pod, added, node, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, node: NodeInfo) -> None:
        self._update(state, pod, removed, node, -1)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        counts: _FilterState = state[self.name]
        labels = node.labels
        tally = counts.counts
        for c, self_match in counts.checks:
            key = c.topology_key
            value = labels.get(key)
            if value is None:
                return unresolvable(ERR_MISSING_LABEL)
            if tally.get((key, value), 0) + self_match - counts.minimum(key, c.min_domains) > c.max_skew:
                return unschedulable(ERR_CONSTRAINTS)
        return SUCCESS

    def filter_mask(self, state: CycleState, pod: PodInfo, arrays: NodeArrays) -> Mask:
        """``filter`` over every node at once: each constraint's verdict is the same for a whole domain."""
        counts: _FilterState = state[self.name]
        tally = counts.counts
        mask: Mask = np.ones(arrays.size, dtype=np.bool_)
        for c, self_match in counts.checks:
            key = c.topology_key
            ids, values = arrays.label_ids(key)
            highest = counts.minimum(key, c.min_domains) + c.max_skew - self_match
            allowed = np.array([tally.get((key, v), 0) <= highest for v in values] + [False], dtype=np.bool_)
            mask &= allowed[ids]
        return mask

    # -- scoring -----------------------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        constraints, defaults = constraints_for(state, pod, SCHEDULE_ANYWAY)
        if not constraints or not nodes:
            return SKIP
        # the defaults do not require every key: nodes without a zone still spread by hostname
        require_all = not defaults
        scored = _ScoreState(constraints)
        domains = [0] * len(constraints)
        for node in nodes:
            if require_all and not _has_keys(node, constraints):
                scored.ignored.add(node.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == HOSTNAME:
                    continue  # counted per node when scoring
                pair = (c.topology_key, node.labels.get(c.topology_key, ""))
                if pair not in scored.counts:
                    scored.counts[pair] = 0
                    domains[i] += 1
        for i, c in enumerate(constraints):
            size = len(nodes) - len(scored.ignored) if c.topology_key == HOSTNAME else domains[i]
            scored.weights.append(math.log(size + 2))
        if any(c.topology_key != HOSTNAME for c in constraints):
            for node in state.nodes.all():
                if require_all and not _has_keys(node, constraints):
                    continue
                for c in constraints:
                    if c.topology_key == HOSTNAME:
                        continue
                    pair = (c.topology_key, node.labels.get(c.topology_key, ""))
                    if pair in scored.counts and c.includes(pod, node):
                        scored.counts[pair] += count_matching(node, c.selector, pod.namespace)
        state[f"{self.name}/score"] = scored
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        scored: _ScoreState = state[f"{self.name}/score"]
        if node.name in scored.ignored:
            return 0
        total = 0.0
        labels = node.labels
        for c, weight in zip(scored.constraints, scored.weights):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == HOSTNAME:
                count = count_matching(node, c.selector, pod.namespace)
            else:
                count = scored.counts.get((c.topology_key, value), 0)
            total += count * weight + (c.max_skew - 1)
        return math.floor(total + 0.5)

    def normalize(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: list[int]) -> None:
        """Fewer matching pods is better: MAX * (highest + lowest - score) / highest over the nodes scored; a
        node without the keys gets 0."""
        ignored = state[f"{self.name}/score"].ignored
        counted = [s for n, s in zip(nodes, scores) if n.name not in ignored]
        lowest, highest = min(counted, default=0), max(counted, default=0)
        for i, node in enumerate(nodes):
            if node.name in ignored:
                scores[i] = 0
            elif highest == 0:
                scores[i] = MAX_NODE_SCORE
            else:
                scores[i] = MAX_NODE_SCORE * (highest + lowest - scores[i]) // highest
