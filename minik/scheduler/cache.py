"""The scheduler's cache: every node with the pods on it, counting the pods it has assumed (decided, not yet
seen bound) so that the next decision already sees their requests.

A pod is counted on one node at most. When the informer reports an assumed pod bound, the assumption is
confirmed; when its bind fails, ``forget`` takes it back. A pod may name a node the cache has not seen yet: its
NodeInfo exists (to hold the pod) but is not offered for scheduling until the node arrives.

The cache also keeps which nodes run pods with inter-pod affinity terms (so that plugin looks at those only) and
the pending pods preemption nominated to each node (so that other pods leave them room).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from minik.scheduler.arrays import NodeArrays
from minik.scheduler.framework import NodeInfo, PodInfo
from minik.scheduler.terms import AffinityTerm

Pair = tuple[str, str]


def _labels(info: NodeInfo) -> Mapping[str, str]:
    """The labels pods are counted under: none while the node object is missing."""
    return info.labels if info.node else {}


class Cache:
    def __init__(self) -> None:
        self._infos: dict[str, NodeInfo] = {}
        self._listed: list[NodeInfo] | None = None
        self._arrays: NodeArrays | None = None
        self._pod_nodes: dict[str, str] = {}
        self.assumed: set[str] = set()
        self._affinity: dict[str, NodeInfo] = {}
        self._anti_affinity: dict[str, NodeInfo] = {}
        self._anti_terms: dict[AffinityTerm, dict[Pair, int]] = {}
        self._nominated: dict[str, dict[str, PodInfo]] = {}
        self._nominated_node: dict[str, str] = {}

    # -- the NodeList a cycle reads --------------------------------------------------------------------------------
    def all(self) -> list[NodeInfo]:
        """The nodes that exist, in a stable order (by name); shared, read-only."""
        if self._listed is None:
            self._listed = sorted((i for i in self._infos.values() if i.node), key=lambda i: i.name)
            if self._arrays is not None:
                self._arrays.detach(list(self._infos.values()))
                self._arrays = None
        return self._listed

    def arrays(self) -> NodeArrays:
        listed = self.all()
        if self._arrays is None:
            self._arrays = NodeArrays(listed)
        return self._arrays

    def get(self, name: str) -> NodeInfo | None:
        info = self._infos.get(name)
        return info if info is not None and info.node else None

    def __len__(self) -> int:
        return len(self.all())

    def with_affinity_pods(self) -> list[NodeInfo]:
        return [i for i in self._affinity.values() if i.node]

    def with_required_anti_affinity_pods(self) -> list[NodeInfo]:
        return [i for i in self._anti_affinity.values() if i.node]

    def anti_affinity_terms(self) -> Mapping[AffinityTerm, Mapping[Pair, int]]:
        return self._anti_terms

    def nominated(self, node: str) -> list[PodInfo]:
        pods = self._nominated.get(node)
        return list(pods.values()) if pods else []

    def nominated_nodes(self) -> Collection[str]:
        return self._nominated.keys()

    # -- nominations ----------------------------------------------------------------------------------------------
    def nominate(self, pod: PodInfo, node: str) -> None:
        """``pod`` (pending) is to run on ``node`` once preemption's victims are gone."""
        self.clear_nomination(pod.key)
        self._nominated.setdefault(node, {})[pod.key] = pod
        self._nominated_node[pod.key] = node

    def clear_nomination(self, key: str) -> None:
        node = self._nominated_node.pop(key, None)
        if node is not None:
            pods = self._nominated[node]
            pods.pop(key, None)
            if not pods:
                del self._nominated[node]

    def nominated_node_of(self, key: str) -> str | None:
        return self._nominated_node.get(key)

    # -- nodes ----------------------------------------------------------------------------------------------------
    def set_node(self, node: dict) -> NodeInfo:
        name = (node.get("metadata") or {}).get("name") or ""
        info = self._infos.get(name)
        if info is None:
            info = self._infos[name] = NodeInfo(node)
            self._listed = None
        else:
            if not info.node:
                self._listed = None
            before = _labels(info)
            info.set_node(node)
            self._relabel(info, before)
        return info

    def remove_node(self, name: str) -> None:
        info = self._infos.get(name)
        if info is None:
            return
        if info.pods:
            before = _labels(info)
            info.node = {}  # keep the pods' accounting until they are deleted too
            self._relabel(info, before)
        else:
            del self._infos[name]
        self._listed = None

    # -- the index of required anti-affinity terms -------------------------------------------------------------------
    def _index_anti(self, pod: PodInfo, labels: Mapping[str, str], delta: int) -> None:
        for term in pod.required_anti_affinity:
            value = labels.get(term.topology_key)
            if value is None:
                continue
            pairs = self._anti_terms.setdefault(term, {})
            pair = (term.topology_key, value)
            left = pairs.get(pair, 0) + delta
            if left:
                pairs[pair] = left
            else:
                pairs.pop(pair, None)
                if not pairs:
                    del self._anti_terms[term]

    def _relabel(self, info: NodeInfo, before: Mapping[str, str]) -> None:
        """The node's labels changed (or it came or went): its pods' terms count in other domains now."""
        after = _labels(info)
        if after != before:
            for pod in info.pods_with_required_anti_affinity.values():
                self._index_anti(pod, before, -1)
                self._index_anti(pod, after, 1)

    # -- pods -----------------------------------------------------------------------------------------------------
    def node_of(self, key: str) -> str | None:
        return self._pod_nodes.get(key)

    def pod(self, key: str) -> PodInfo | None:
        node = self._pod_nodes.get(key)
        return self._infos[node].pods.get(key) if node is not None else None

    def _place(self, pod: PodInfo, node_name: str) -> None:
        info = self._infos.get(node_name)
        if info is None:
            info = self._infos[node_name] = NodeInfo(name=node_name)
        info.add_pod(pod)
        self._pod_nodes[pod.key] = node_name
        if pod.has_affinity_terms:
            self._track_affinity(info)
            self._index_anti(pod, _labels(info), 1)

    def assume(self, pod: PodInfo, node_name: str) -> None:
        """Count the pod on the node at once (the scheduling cycle's decision), before the bind is written."""
        self.remove_pod(pod.key)
        self._place(pod, node_name)
        self.assumed.add(pod.key)

    def forget(self, key: str) -> None:
        """Undo an assumption whose bind failed."""
        if key in self.assumed:
            self.remove_pod(key)

    def is_assumed(self, key: str) -> bool:
        return key in self.assumed

    def add_pod(self, pod: PodInfo) -> None:
        """A bound pod from the informer (added or updated): counted on its node, replacing any assumption."""
        if self._pod_nodes.get(pod.key) == pod.node_name:
            # the common update: the bind of an assumed pod, or a status change of a running one; when nothing the
            # node's sums count changed, the new version takes the old one's place and no sum is redone
            info = self._infos[pod.node_name]
            if info.replace_pod(pod):
                self.assumed.discard(pod.key)
                return
        self.remove_pod(pod.key)
        self._place(pod, pod.node_name)

    def remove_pod(self, key: str) -> PodInfo | None:
        self.assumed.discard(key)
        node_name = self._pod_nodes.pop(key, None)
        if node_name is None:
            return None
        info = self._infos.get(node_name)
        if info is None:
            return None
        removed = info.remove_pod(key)
        if removed is not None and removed.has_affinity_terms:
            self._track_affinity(info)
            self._index_anti(removed, _labels(info), -1)
        if not info.node and not info.pods:
            del self._infos[node_name]
        return removed

    def _track_affinity(self, info: NodeInfo) -> None:
        for index, pods in ((self._affinity, info.pods_with_affinity),
                            (self._anti_affinity, info.pods_with_required_anti_affinity)):
            if pods:
                index[info.name] = info
            else:
                index.pop(info.name, None)

    def pod_count(self) -> int:
        return len(self._pod_nodes)
