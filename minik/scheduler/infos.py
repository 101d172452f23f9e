"""The pod and the node as the scheduler reads them, parsed once: ``PodInfo`` (requests in integer units, host
ports, tolerations, compiled affinity terms) and ``NodeInfo`` (a node and the pods on it, with running sums), so
that the per-node work of a cycle is a few integer comparisons. Objects are parsed when they enter the cache or
the queue, never on the hot path, and never deep-copied there. ``NodeList`` is what one cycle sees of the nodes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from minik.api.selectors import EQUALS, IN, LabelSelector
from minik.scheduler.arrays import NodeArrays
from minik.scheduler.resources import Resource, pod_requests
from minik.scheduler.terms import AffinityTerm, compile_preferred, compile_required

Obj = dict[str, Any]

DEFAULT_SCHEDULER_NAME = "default-scheduler"


def one_requirement(selector: LabelSelector) -> tuple[str, tuple[str, ...]] | None:
    """(key, values) when the selector is one ``key in (values)`` or ``key=value`` requirement."""
    requirements = selector.requirements
    if len(requirements) == 1 and requirements[0].operator in (EQUALS, IN):
        return requirements[0].key, requirements[0].values
    return None


LabelKey = tuple[str, str, str]  # (namespace, label key, label value), as NodeInfo.label_counts counts pods


def label_keys(selector: LabelSelector, namespaces: Collection[str]) -> tuple[LabelKey, ...] | None:
    """The ``label_counts`` entries whose sum counts the pods the selector selects in those namespaces, when it
    is one ``key in (values)`` requirement (worked out once per cycle, then one lookup per node)."""
    simple = one_requirement(selector)
    if simple is None:
        return None
    key, values = simple
    return tuple((ns, key, v) for ns in namespaces for v in values)


# -- pods --------------------------------------------------------------------------------------------------------
HostPort = tuple[str, str, int]  # (hostIP, protocol, port)


def _host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    ports: list[HostPort] = []
    for container in spec.get("containers") or []:
        for port in container.get("ports") or []:
            host_port = port.get("hostPort") or 0
            if host_port > 0:
                ports.append((port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP", int(host_port)))
    return tuple(ports)


class PodInfo:
    """A pod as the scheduler reads it, parsed once. ``pod`` is the object as the informer gave it (shared,
    read-only)."""

    __slots__ = ("pod", "key", "namespace", "name", "uid", "labels", "node_name", "priority", "preemption_policy",
                 "requests", "non_zero_cpu", "non_zero_memory", "host_ports", "tolerations", "node_selector",
                 "affinity", "required_affinity", "required_anti_affinity", "preferred_affinity",
                 "preferred_anti_affinity", "spread_constraints", "owner", "created", "scheduler_name",
                 "terminal", "deleting", "nominated_node")

    def __init__(self, pod: Obj) -> None:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        self.pod = pod
        self.namespace: str = meta.get("namespace") or "default"
        self.name: str = meta.get("name") or ""
        self.key = f"{self.namespace}/{self.name}"
        self.uid: str = meta.get("uid") or ""
        self.labels: Mapping[str, str] = meta.get("labels") or {}
        self.created: str = meta.get("creationTimestamp") or ""
        self.deleting = bool(meta.get("deletionTimestamp"))
        self.node_name: str = spec.get("nodeName") or ""
        self.scheduler_name: str = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
        self.priority: int = int(spec.get("priority") or 0)
        self.preemption_policy: str = spec.get("preemptionPolicy") or "PreemptLowerPriority"
        self.requests, self.non_zero_cpu, self.non_zero_memory = pod_requests(spec)
        self.host_ports = _host_ports(spec)
        self.tolerations: list[Obj] = spec.get("tolerations") or []
        self.node_selector: Mapping[str, str] = spec.get("nodeSelector") or {}
        self.affinity: Obj = spec.get("affinity") or {}
        self.required_affinity: tuple[AffinityTerm, ...] = ()
        self.required_anti_affinity: tuple[AffinityTerm, ...] = ()
        self.preferred_affinity: tuple[AffinityTerm, ...] = ()
        self.preferred_anti_affinity: tuple[AffinityTerm, ...] = ()
        pod_affinity = self.affinity.get("podAffinity")
        anti = self.affinity.get("podAntiAffinity")
        if pod_affinity:
            self.required_affinity = compile_required(
                pod_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or [], self.namespace, self.labels)
            self.preferred_affinity = compile_preferred(
                pod_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or [], self.namespace,
                self.labels)
        if anti:
            self.required_anti_affinity = compile_required(
                anti.get("requiredDuringSchedulingIgnoredDuringExecution") or [], self.namespace, self.labels)
            self.preferred_anti_affinity = compile_preferred(
                anti.get("preferredDuringSchedulingIgnoredDuringExecution") or [], self.namespace, self.labels)
        self.spread_constraints: list[Obj] = spec.get("topologySpreadConstraints") or []
        self.owner: Mapping[str, Any] | None = None
        """The controller's ownerReference (kind, name, uid), if any."""
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller"):
                self.owner = ref
                break
        self.terminal = status.get("phase") in ("Succeeded", "Failed")
        self.nominated_node: str = status.get("nominatedNodeName") or ""

    @property
    def has_scoring_terms(self) -> bool:
        """Terms by which this pod, running, scores the nodes for other pods (InterPodAffinity's pre-score)."""
        return bool(self.required_affinity or self.preferred_affinity or self.preferred_anti_affinity)

    @property
    def has_affinity_terms(self) -> bool:
        return bool(self.required_affinity or self.required_anti_affinity or self.preferred_affinity or
                    self.preferred_anti_affinity)

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


# -- nodes -------------------------------------------------------------------------------------------------------
class NodeInfo:
    """A node and the pods on it (bound or assumed), with their sums kept current as pods come and go."""

    __slots__ = ("name", "node", "labels", "taints", "unschedulable", "allocatable", "requested",
                 "non_zero_cpu", "non_zero_memory", "pods", "used_ports", "pods_with_affinity",
                 "pods_with_required_anti_affinity", "generation", "has_hard_taints", "has_soft_taints",
                 "free_milli_cpu", "free_memory", "free_pods", "alloc_milli_cpu", "alloc_memory", "arrays", "row",
                 "label_counts", "deleting_pods", "scoring_affinity_pods")

    def __init__(self, node: Obj | None = None, name: str = "") -> None:
        self.name = name
        self.node: Obj = {}
        self.labels: Mapping[str, str] = {}
        self.taints: list[Obj] = []
        self.has_hard_taints = False
        self.has_soft_taints = False
        self.unschedulable = False
        self.allocatable = Resource()
        self.requested = Resource()
        self.non_zero_cpu = 0
        self.non_zero_memory = 0
        self.pods: dict[str, PodInfo] = {}
        self.used_ports: dict[HostPort, int] = {}
        self.pods_with_affinity: dict[str, PodInfo] = {}
        self.pods_with_required_anti_affinity: dict[str, PodInfo] = {}
        self.label_counts: dict[tuple[str, str, str], int] = {}
        """How many pods carry each (namespace, label key, value): counting pods by a one-requirement selector
        (``app=web``, the common case) is then a few lookups instead of a look at every pod."""
        self.deleting_pods = 0
        self.scoring_affinity_pods = 0
        """Pods with terms that score other pods (required affinity, preferred affinity or anti-affinity)."""
        self.generation = 0
        # flat copies of the hot numbers, so a cycle's per-node checks are plain attribute reads
        self.free_milli_cpu = self.free_memory = self.free_pods = 0
        self.alloc_milli_cpu = self.alloc_memory = 0
        self.arrays: NodeArrays | None = None
        self.row = -1
        if node is not None:
            self.set_node(node)

    def set_node(self, node: Obj) -> None:
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        self.node = node
        self.name = meta.get("name") or self.name
        self.labels = meta.get("labels") or {}
        self.taints = spec.get("taints") or []
        self.has_hard_taints = any(t.get("effect") in ("NoSchedule", "NoExecute") for t in self.taints)
        self.has_soft_taints = any(t.get("effect") == "PreferNoSchedule" for t in self.taints)
        self.unschedulable = bool(spec.get("unschedulable"))
        self.allocatable = Resource.from_list(status.get("allocatable") or status.get("capacity") or {})
        if self.arrays is not None:
            self.arrays.nodes_changed()
        self._refresh()

    def _refresh(self) -> None:
        alloc, used = self.allocatable, self.requested
        self.alloc_milli_cpu = alloc.milli_cpu
        self.alloc_memory = alloc.memory
        self.free_milli_cpu = alloc.milli_cpu - used.milli_cpu
        self.free_memory = alloc.memory - used.memory
        self.free_pods = alloc.pods - used.pods
        self.generation += 1
        if self.arrays is not None:
            self.arrays.write(self.row, self)

    def attach(self, arrays: NodeArrays | None, row: int) -> None:
        """Keep row ``row`` of ``arrays`` current from now on (None: stop)."""
        self.arrays, self.row = arrays, row
        if arrays is not None:
            arrays.write(row, self)

    def add_pod(self, pod: PodInfo) -> None:
        self.pods[pod.key] = pod
        self.requested.add(pod.requests)
        self.requested.pods += 1
        self.non_zero_cpu += pod.non_zero_cpu
        self.non_zero_memory += pod.non_zero_memory
        for port in pod.host_ports:
            self.used_ports[port] = self.used_ports.get(port, 0) + 1
        if pod.has_affinity_terms:
            self.pods_with_affinity[pod.key] = pod
            if pod.has_scoring_terms:
                self.scoring_affinity_pods += 1
        if pod.required_anti_affinity:
            self.pods_with_required_anti_affinity[pod.key] = pod
        counts, namespace = self.label_counts, pod.namespace
        for label in pod.labels.items():
            key = (namespace, *label)
            counts[key] = counts.get(key, 0) + 1
        if pod.deleting:
            self.deleting_pods += 1
        self._refresh()

    def replace_pod(self, pod: PodInfo) -> bool:
        """Put ``pod`` in the place of the version of it counted here, when everything the sums and indexes count
        is the same in both (requests, host ports, labels, deletion, no affinity terms); False (nothing done)
        otherwise."""
        old = self.pods.get(pod.key)
        if old is None or old.has_affinity_terms or pod.has_affinity_terms or old.deleting != pod.deleting or \
                old.non_zero_cpu != pod.non_zero_cpu or old.non_zero_memory != pod.non_zero_memory or \
                not old.requests.same_as(pod.requests) or old.host_ports != pod.host_ports or \
                old.labels != pod.labels:
            return False
        self.pods[pod.key] = pod
        return True

    def remove_pod(self, key: str) -> PodInfo | None:
        pod = self.pods.pop(key, None)
        if pod is None:
            return None
        self.requested.add(pod.requests, -1)
        self.requested.pods -= 1
        self.non_zero_cpu -= pod.non_zero_cpu
        self.non_zero_memory -= pod.non_zero_memory
        for port in pod.host_ports:
            left = self.used_ports.get(port, 0) - 1
            if left > 0:
                self.used_ports[port] = left
            else:
                self.used_ports.pop(port, None)
        if self.pods_with_affinity.pop(key, None) is not None and pod.has_scoring_terms:
            self.scoring_affinity_pods -= 1
        self.pods_with_required_anti_affinity.pop(key, None)
        counts, namespace = self.label_counts, pod.namespace
        for label in pod.labels.items():
            index = (namespace, *label)
            left = counts[index] - 1
            if left:
                counts[index] = left
            else:
                del counts[index]
        if pod.deleting:
            self.deleting_pods -= 1
        self._refresh()
        return pod

    def count_pods(self, selector: LabelSelector, namespaces: Collection[str], *,
                   skip_deleting: bool = False) -> int:
        """Pods on the node in one of ``namespaces`` that the selector selects (leaving out those being deleted,
        when asked)."""
        if not self.pods:
            return 0
        simple = one_requirement(selector)
        if simple is not None and not (skip_deleting and self.deleting_pods):
            key, values = simple
            counts = self.label_counts
            return sum(counts.get((ns, key, v), 0) for ns in namespaces for v in values)
        return self._scan(selector, namespaces, skip_deleting)

    def count_labelled(self, keys: tuple[LabelKey, ...]) -> int:
        """Pods counted under ``keys`` (from ``label_keys``); those being deleted included."""
        counts = self.label_counts
        if len(keys) == 1:
            return counts.get(keys[0], 0)
        return sum(counts.get(k, 0) for k in keys)

    def _scan(self, selector: LabelSelector, namespaces: Collection[str], skip_deleting: bool) -> int:
        return sum(1 for p in self.pods.values() if p.namespace in namespaces and
                   not (skip_deleting and p.deleting) and selector.matches(p.labels))

    def clone(self) -> NodeInfo:
        """A copy whose pods can be added and removed without touching this one (preemption's what-ifs)."""
        other = NodeInfo(name=self.name)
        other.node, other.labels, other.taints = self.node, self.labels, self.taints
        other.has_hard_taints, other.has_soft_taints = self.has_hard_taints, self.has_soft_taints
        other.unschedulable = self.unschedulable
        other.allocatable = self.allocatable
        other.requested = self.requested.copy()
        other.non_zero_cpu, other.non_zero_memory = self.non_zero_cpu, self.non_zero_memory
        other.pods = dict(self.pods)
        other.used_ports = dict(self.used_ports)
        other.pods_with_affinity = dict(self.pods_with_affinity)
        other.pods_with_required_anti_affinity = dict(self.pods_with_required_anti_affinity)
        other.label_counts = dict(self.label_counts)
        other.deleting_pods = self.deleting_pods
        other.scoring_affinity_pods = self.scoring_affinity_pods
        other._refresh()
        return other

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"


class NodeList(Protocol):
    """The nodes a cycle sees: in a stable order, and by name; and the few nodes inter-pod affinity looks at."""

    def all(self) -> list[NodeInfo]: ...

    def get(self, name: str) -> NodeInfo | None: ...

    def with_affinity_pods(self) -> list[NodeInfo]:
        """The nodes running a pod with any inter-pod affinity or anti-affinity term."""
        ...

    def with_required_anti_affinity_pods(self) -> list[NodeInfo]:
        """The nodes running a pod with a required anti-affinity term."""
        ...

    def nominated(self, node: str) -> list[PodInfo]:
        """The pending pods nominated to run on ``node`` (by preemption), which others must leave room for."""
        ...

    def nominated_nodes(self) -> Collection[str]:
        """The nodes with nominated pods."""
        ...

    def arrays(self) -> NodeArrays:
        """The nodes' hot numbers as columns, rows in ``all()`` order."""
        ...

    def anti_affinity_terms(self) -> Mapping[AffinityTerm, Mapping[tuple[str, str], int]]:
        """Every distinct required anti-affinity term of the running pods, with how many pods hold it in each
        topology domain (key, value): new pods check each distinct term once, not each pod's."""
        ...


@dataclass
class StaticNodes:
    """A NodeList over a fixed list (for tests and what-if evaluations)."""

    nodes: list[NodeInfo] = field(default_factory=list)
    nominations: dict[str, list[PodInfo]] = field(default_factory=dict)
    _arrays: NodeArrays | None = None

    def all(self) -> list[NodeInfo]:
        return self.nodes

    def get(self, name: str) -> NodeInfo | None:
        for node in self.nodes:
            if node.name == name:
                return node
        return None

    def with_affinity_pods(self) -> list[NodeInfo]:
        return [n for n in self.nodes if n.pods_with_affinity]

    def with_required_anti_affinity_pods(self) -> list[NodeInfo]:
        return [n for n in self.nodes if n.pods_with_required_anti_affinity]

    def nominated(self, node: str) -> list[PodInfo]:
        return self.nominations.get(node, [])

    def nominated_nodes(self) -> Collection[str]:
        return self.nominations.keys()

    def anti_affinity_terms(self) -> Mapping[AffinityTerm, Mapping[tuple[str, str], int]]:
        index: dict[AffinityTerm, dict[tuple[str, str], int]] = {}
        for node in self.nodes:
            for pod in node.pods_with_required_anti_affinity.values():
                for term in pod.required_anti_affinity:
                    value = node.labels.get(term.topology_key)
                    if value is not None:
                        pairs = index.setdefault(term, {})
                        pairs[(term.topology_key, value)] = pairs.get((term.topology_key, value), 0) + 1
        return index

    def arrays(self) -> NodeArrays:
        if self._arrays is None or self._arrays.size != len(self.nodes) or \
                any(n.arrays is not self._arrays for n in self.nodes):
            self._arrays = NodeArrays(self.nodes)
        return self._arrays
