"""InterPodAffinity: where a pod may go given the pods already running (kube-scheduler's plugin of that name).

Filter, over topology domains (the value of a term's topologyKey on a node: the node itself, its zone...):
- the pod's required affinity terms: each domain must already run a pod the term selects (a pod whose terms
  select only itself, when no such pod runs anywhere yet, may start the group on any node with the keys);
- the pod's required anti-affinity terms: no domain may run a pod the term selects;
- the running pods' required anti-affinity terms: no domain may run a pod whose term selects this pod.

Score: the pod's preferred terms add (affinity) or subtract (anti-affinity) their weight in each domain running a
matching pod; running pods' preferred terms that select this pod do the same, and their required affinity terms
add ``hard_pod_affinity_weight``. Scores are normalized between the lowest and the highest node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

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
from minik.scheduler.terms import NOTHING, AffinityTerm

if TYPE_CHECKING:
    import numpy as np

    from minik.scheduler.arrays import Mask
else:
    from minik.scheduler.arrays import np

ERR_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

Pair = tuple[str, str]


def _matches_all(terms: Iterable[AffinityTerm], pod: PodInfo, state: CycleState) -> bool:
    terms = tuple(terms)
    if not terms:
        return False
    labels = state.cluster.namespace_labels(pod.namespace)
    return all(t.matches(pod, labels) for t in terms)


class _FilterState:
    """Counts per topology pair: running pods whose anti-affinity selects the pod; running pods matching all the
    pod's affinity terms; running pods matching each of its anti-affinity terms."""

    __slots__ = ("existing_anti", "affinity", "anti")

    def __init__(self) -> None:
        self.existing_anti: Counter[Pair] = Counter()
        self.affinity: Counter[Pair] = Counter()
        self.anti: Counter[Pair] = Counter()

    def clone(self) -> _FilterState:
        other = _FilterState()
        other.existing_anti = self.existing_anti.copy()
        other.affinity = self.affinity.copy()
        other.anti = self.anti.copy()
        return other


def _update(counts: Counter[Pair], node: NodeInfo, key: str, delta: int) -> None:
    value = node.labels.get(key)
    if value is not None:
        pair = (key, value)
        counts[pair] += delta
        if counts[pair] == 0:
            del counts[pair]


def _table(flags: list[bool]) -> Mask:
    """A per-value lookup table for ``label_ids``: one more False entry for the nodes without the label."""
    return np.array(flags + [False], dtype=np.bool_)


def _count(state: CycleState, term: AffinityTerm, node: NodeInfo) -> int:
    """The pods on the node the term selects."""
    if term.namespace_selector == NOTHING:
        return node.count_pods(term.selector, term.namespaces)
    labels_of = state.cluster.namespace_labels
    return sum(1 for p in node.pods.values() if term.matches(p, labels_of(p.namespace)))


def _count_all(state: CycleState, terms: tuple[AffinityTerm, ...], node: NodeInfo) -> int:
    """The pods on the node every one of the terms selects."""
    if len(terms) == 1:
        return _count(state, terms[0], node)
    labels_of = state.cluster.namespace_labels
    return sum(1 for p in node.pods.values()
               if all(t.matches(p, labels_of(p.namespace)) for t in terms))


class InterPodAffinity:
    name = "InterPodAffinity"

    def __init__(self, hard_pod_affinity_weight: int = 1) -> None:
        self.hard_pod_affinity_weight = hard_pod_affinity_weight

    # -- filtering ---------------------------------------------------------------------------------------------
    def _count(self, state: CycleState, counts: _FilterState, pod: PodInfo, other: PodInfo, node: NodeInfo,
               delta: int) -> None:
        """Count ``other`` (running on ``node``) in ``counts`` for the incoming ``pod``."""
        if other.required_anti_affinity:
            pod_ns_labels = state.cluster.namespace_labels(pod.namespace)
            for term in other.required_anti_affinity:
                if term.matches(pod, pod_ns_labels):
                    _update(counts.existing_anti, node, term.topology_key, delta)
        if pod.required_affinity or pod.required_anti_affinity:
            labels = state.cluster.namespace_labels(other.namespace)
            if pod.required_affinity and all(t.matches(other, labels) for t in pod.required_affinity):
                for term in pod.required_affinity:
                    _update(counts.affinity, node, term.topology_key, delta)
            for term in pod.required_anti_affinity:
                if term.matches(other, labels):
                    _update(counts.anti, node, term.topology_key, delta)

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        counts = _FilterState()
        ns_labels = state.cluster.namespace_labels(pod.namespace)
        # the running pods' anti-affinity: each distinct term once, with its counts per domain
        for term, pairs in state.nodes.anti_affinity_terms().items():
            if term.matches(pod, ns_labels):
                counts.existing_anti.update(pairs)
        if pod.required_affinity or pod.required_anti_affinity:
            # a term with one label requirement is counted from each node's label counts
            anti = [(term, label_keys(term.selector, term.namespaces) if term.namespace_selector == NOTHING
                     else None) for term in pod.required_anti_affinity]
            for node in state.nodes.all():
                if not node.pods:
                    continue
                labels = node.labels
                if pod.required_affinity:
                    found = _count_all(state, pod.required_affinity, node)
                    if found:
                        for term in pod.required_affinity:
                            _update(counts.affinity, node, term.topology_key, found)
                for term, keys in anti:
                    value = labels.get(term.topology_key)
                    if value is not None:
                        found = node.count_labelled(keys) if keys is not None else _count(state, term, node)
                        if found:
                            counts.anti[(term.topology_key, value)] += found
        elif not counts.existing_anti:
            return SKIP
        state[self.name] = counts
        return SUCCESS

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, node: NodeInfo) -> None:
        counts = state.get(self.name)
        if counts is not None:
            self._count(state, counts, pod, added, node, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, node: NodeInfo) -> None:
        counts = state.get(self.name)
        if counts is not None:
            self._count(state, counts, pod, removed, node, -1)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        counts: _FilterState = state[self.name]
        labels = node.labels
        if pod.required_affinity:
            found = True
            for term in pod.required_affinity:
                value = labels.get(term.topology_key)
                if value is None:
                    return unresolvable(ERR_AFFINITY)
                if counts.affinity[(term.topology_key, value)] <= 0:
                    found = False
            # the first pod of a group whose terms select itself may go anywhere with the keys
            if not found and (counts.affinity or not _matches_all(pod.required_affinity, pod, state)):
                return unresolvable(ERR_AFFINITY)
        if counts.anti:
            for term in pod.required_anti_affinity:
                value = labels.get(term.topology_key)
                if value is not None and counts.anti[(term.topology_key, value)] > 0:
                    return unschedulable(ERR_ANTI_AFFINITY)
        if counts.existing_anti:
            for pair in labels.items():
                if counts.existing_anti[pair] > 0:
                    return unschedulable(ERR_EXISTING_ANTI_AFFINITY)
        return SUCCESS

    def filter_mask(self, state: CycleState, pod: PodInfo, arrays: NodeArrays) -> Mask:
        """``filter`` over every node at once, one topology domain at a time."""
        counts: _FilterState = state[self.name]
        mask: Mask = np.ones(arrays.size, dtype=np.bool_)
        if pod.required_affinity:
            has_keys = np.ones(arrays.size, dtype=np.bool_)
            found = np.ones(arrays.size, dtype=np.bool_)
            for term in pod.required_affinity:
                ids, values = arrays.label_ids(term.topology_key)
                has_keys &= ids >= 0
                found &= _table([counts.affinity[(term.topology_key, v)] > 0 for v in values])[ids]
            if counts.affinity or not _matches_all(pod.required_affinity, pod, state):
                mask &= has_keys & found
            else:
                mask &= has_keys
        if counts.anti:
            for term in pod.required_anti_affinity:
                ids, values = arrays.label_ids(term.topology_key)
                key = term.topology_key
                held = {v for (k, v), n in counts.anti.items() if k == key and n > 0}
                mask &= ~_table([v in held for v in values])[ids]
        if counts.existing_anti:
            taken: dict[str, set[str]] = {}
            for (key, value), n in counts.existing_anti.items():
                if n > 0:
                    taken.setdefault(key, set()).add(value)
            for key, bad in taken.items():
                ids, values = arrays.label_ids(key)
                mask &= ~_table([v in bad for v in values])[ids]
        return mask

    # -- scoring -----------------------------------------------------------------------------------------------
    def _score_pod(self, state: CycleState, scores: dict[Pair, int], pod: PodInfo, other: PodInfo,
                   node: NodeInfo) -> None:
        labels = node.labels
        if not labels:
            return

        def add(term: AffinityTerm, weight: int, target: PodInfo, ns_labels: object) -> None:
            if term.matches(target, ns_labels):  # type: ignore[arg-type]
                value = labels.get(term.topology_key)
                if value is not None:
                    pair = (term.topology_key, value)
                    scores[pair] = scores.get(pair, 0) + weight

        if pod.preferred_affinity or pod.preferred_anti_affinity:
            other_ns = state.cluster.namespace_labels(other.namespace)
            for term in pod.preferred_affinity:
                add(term, term.weight, other, other_ns)
            for term in pod.preferred_anti_affinity:
                add(term, -term.weight, other, other_ns)
        if other.required_affinity or other.preferred_affinity or other.preferred_anti_affinity:
            pod_ns = state.cluster.namespace_labels(pod.namespace)
            if self.hard_pod_affinity_weight > 0:
                for term in other.required_affinity:
                    add(term, self.hard_pod_affinity_weight, pod, pod_ns)
            for term in other.preferred_affinity:
                add(term, term.weight, pod, pod_ns)
            for term in other.preferred_anti_affinity:
                add(term, -term.weight, pod, pod_ns)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        has_preferred = bool(pod.preferred_affinity or pod.preferred_anti_affinity)
        scores: dict[Pair, int] = {}
        if has_preferred:
            for node in state.nodes.all():
                for other in node.pods.values():
                    self._score_pod(state, scores, pod, other, node)
        else:  # only the running pods' required affinity and preferred terms can score
            for node in state.nodes.with_affinity_pods():
                if node.scoring_affinity_pods:
                    for other in node.pods_with_affinity.values():
                        if other.has_scoring_terms:
                            self._score_pod(state, scores, pod, other, node)
        by_key: dict[str, dict[str, int]] = {}
        for (key, value), score in scores.items():
            by_key.setdefault(key, {})[value] = score
        if not by_key:
            return SKIP
        state[f"{self.name}/score"] = by_key
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        by_key: dict[str, dict[str, int]] = state[f"{self.name}/score"]
        labels = node.labels
        total = 0
        for key, values in by_key.items():
            value = labels.get(key)
            if value is not None:
                total += values.get(value, 0)
        return total

    def normalize(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: list[int]) -> None:
        if not scores:
            return
        lowest, highest = min(scores), max(scores)
        spread = highest - lowest
        for i, value in enumerate(scores):
            scores[i] = int(MAX_NODE_SCORE * (value - lowest) / spread) if spread > 0 else 0
