"""The scheduling framework's types (kube-scheduler's framework package, in Python's shape).

A plugin has a ``name`` and implements any of the extension points below: ``pre_filter`` (once per pod; may
answer SKIP to say its ``filter`` has nothing to check for this pod), ``filter`` (once per node), ``pre_score``
(once per pod, over the feasible nodes; SKIP leaves its ``score`` out), ``score`` (once per feasible node, any
integer) and ``normalize`` (the plugin's scores of all feasible nodes, brought to 0..MAX_NODE_SCORE in place).

``PodInfo`` and ``NodeInfo`` are the pod and node precomputed once (requests in integer units, ports,
tolerations, affinity terms), so the per-node work of a cycle is a few integer comparisons: objects are parsed
when they enter the cache or the queue, never on the hot path, and never deep-copied there.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from minik.api.quantity import milli_value_of, value_of

Obj = dict[str, Any]

MAX_NODE_SCORE = 100
#: what a container without requests counts for when scoring (kube-scheduler's non-zero defaults)
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
DEFAULT_SCHEDULER_NAME = "default-scheduler"


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    """The node does not fit now; preempting pods on it may help."""
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    """The node does not fit, and preemption cannot change that (labels, taints, a node name)."""
    SKIP = 5
    """From pre_filter or pre_score: this plugin has nothing to do for this pod."""


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> "Status":
        return self if self.plugin == plugin else Status(self.code, self.reasons, plugin)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


class CycleState(dict[str, Any]):
    """What plugins compute in pre_filter / pre_score and read per node, by plugin name; one per cycle.

    ``nodes`` is the cycle's view of every node (the cache's, read-only: a cycle runs without awaiting, so it
    sees one consistent state)."""

    def __init__(self, nodes: "NodeList") -> None:
        super().__init__()
        self.nodes = nodes
        self.skip_filters: set[str] = set()
        self.skip_scores: set[str] = set()


# -- resources ---------------------------------------------------------------------------------------------------
@lru_cache(maxsize=4096)
def _milli(text: str) -> int:
    return milli_value_of(text)


@lru_cache(maxsize=4096)
def _whole(text: str) -> int:
    return value_of(text)


def quantity_milli(value: Any) -> int:
    try:
        return _milli(value) if isinstance(value, str) else milli_value_of(value)
    except (ValueError, TypeError):
        return 0


def quantity_value(value: Any) -> int:
    try:
        return _whole(value) if isinstance(value, str) else value_of(value)
    except (ValueError, TypeError):
        return 0


class Resource:
    """Amounts in integer units: millicores, bytes, pods, and extended resources (by name, as whole numbers)."""

    __slots__ = ("milli_cpu", "memory", "ephemeral_storage", "pods", "scalar")

    def __init__(self, milli_cpu: int = 0, memory: int = 0, ephemeral_storage: int = 0, pods: int = 0,
                 scalar: dict[str, int] | None = None) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.pods = pods
        self.scalar: dict[str, int] = scalar or {}

    @classmethod
    def from_list(cls, amounts: Mapping[str, Any] | None) -> "Resource":
        r = cls()
        for name, value in (amounts or {}).items():
            r.set(name, value)
        return r

    def set(self, name: str, value: Any) -> None:
        if name == "cpu":
            self.milli_cpu = quantity_milli(value)
        elif name == "memory":
            self.memory = quantity_value(value)
        elif name == "ephemeral-storage":
            self.ephemeral_storage = quantity_value(value)
        elif name == "pods":
            self.pods = quantity_value(value)
        elif is_scalar_resource(name):
            self.scalar[name] = quantity_value(value)

    def add(self, other: "Resource", sign: int = 1) -> None:
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        for name, value in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + sign * value

    def set_max(self, other: "Resource") -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        for name, value in other.scalar.items():
            self.scalar[name] = max(self.scalar.get(name, 0), value)

    def copy(self) -> "Resource":
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.pods, dict(self.scalar))

    def __repr__(self) -> str:
        return (f"Resource(cpu={self.milli_cpu}m, memory={self.memory}, ephemeral={self.ephemeral_storage}, "
                f"pods={self.pods}, scalar={self.scalar})")


def is_scalar_resource(name: str) -> bool:
    """Extended resources (``example.com/gpu``), hugepages and attachable volumes: counted like cpu, by name."""
    return name.startswith("hugepages-") or ("/" in name and not name.startswith("kubernetes.io/")) or \
        name.startswith("attachable-volumes-")


def _container_requests(container: Mapping[str, Any]) -> Mapping[str, Any]:
    resources = container.get("resources") or {}
    return resources.get("requests") or {}


def pod_requests(spec: Mapping[str, Any]) -> tuple[Resource, int, int]:
    """The pod's effective request (kube-scheduler's computePodResourceRequest): the containers summed, at
    least the largest init container, plus the overhead; and the non-zero cpu and memory used for scoring."""
    total = Resource()
    non_zero_cpu = non_zero_memory = 0
    for container in spec.get("containers") or []:
        requests = _container_requests(container)
        total.add(Resource.from_list(requests))
        cpu = requests.get("cpu")
        memory = requests.get("memory")
        non_zero_cpu += quantity_milli(cpu) if cpu is not None else DEFAULT_MILLI_CPU_REQUEST
        non_zero_memory += quantity_value(memory) if memory is not None else DEFAULT_MEMORY_REQUEST
    sidecars = Resource()
    for container in spec.get("initContainers") or []:
        requests = Resource.from_list(_container_requests(container))
        if container.get("restartPolicy") == "Always":  # a sidecar runs beside the containers
            sidecars.add(requests)
            total.add(requests)
            continue
        requests.add(sidecars)
        total.set_max(requests)
        non_zero_cpu = max(non_zero_cpu, requests.milli_cpu)
        non_zero_memory = max(non_zero_memory, requests.memory)
    overhead = spec.get("overhead")
    if overhead:
        extra = Resource.from_list(overhead)
        total.add(extra)
        non_zero_cpu += extra.milli_cpu
        non_zero_memory += extra.memory
    return total, non_zero_cpu, non_zero_memory


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
                 "preferred_anti_affinity", "spread_constraints", "owner_uid", "created", "scheduler_name",
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
        pod_affinity = self.affinity.get("podAffinity") or {}
        anti = self.affinity.get("podAntiAffinity") or {}
        self.required_affinity: list[Obj] = pod_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        self.required_anti_affinity: list[Obj] = anti.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        self.preferred_affinity: list[Obj] = pod_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        self.preferred_anti_affinity: list[Obj] = anti.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        self.spread_constraints: list[Obj] = spec.get("topologySpreadConstraints") or []
        self.owner_uid = ""
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller"):
                self.owner_uid = ref.get("uid") or ""
                break
        self.terminal = status.get("phase") in ("Succeeded", "Failed")
        self.nominated_node: str = status.get("nominatedNodeName") or ""

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
                 "pods_with_required_anti_affinity", "owner_counts", "generation", "has_hard_taints",
                 "free_milli_cpu", "free_memory", "free_pods", "alloc_milli_cpu", "alloc_memory")

    def __init__(self, node: Obj | None = None, name: str = "") -> None:
        self.name = name
        self.node: Obj = {}
        self.labels: Mapping[str, str] = {}
        self.taints: list[Obj] = []
        self.has_hard_taints = False
        self.unschedulable = False
        self.allocatable = Resource()
        self.requested = Resource()
        self.non_zero_cpu = 0
        self.non_zero_memory = 0
        self.pods: dict[str, PodInfo] = {}
        self.used_ports: dict[HostPort, int] = {}
        self.pods_with_affinity: dict[str, PodInfo] = {}
        self.pods_with_required_anti_affinity: dict[str, PodInfo] = {}
        self.owner_counts: dict[str, int] = {}
        self.generation = 0
        # flat copies of the hot numbers, so a cycle's per-node checks are plain attribute reads
        self.free_milli_cpu = self.free_memory = self.free_pods = 0
        self.alloc_milli_cpu = self.alloc_memory = 0
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
        self.unschedulable = bool(spec.get("unschedulable"))
        self.allocatable = Resource.from_list(status.get("allocatable") or status.get("capacity") or {})
        self._refresh()

    def _refresh(self) -> None:
        alloc, used = self.allocatable, self.requested
        self.alloc_milli_cpu = alloc.milli_cpu
        self.alloc_memory = alloc.memory
        self.free_milli_cpu = alloc.milli_cpu - used.milli_cpu
        self.free_memory = alloc.memory - used.memory
        self.free_pods = alloc.pods - used.pods
        self.generation += 1

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
        if pod.required_anti_affinity:
            self.pods_with_required_anti_affinity[pod.key] = pod
        if pod.owner_uid:
            self.owner_counts[pod.owner_uid] = self.owner_counts.get(pod.owner_uid, 0) + 1
        self._refresh()

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
        self.pods_with_affinity.pop(key, None)
        self.pods_with_required_anti_affinity.pop(key, None)
        if pod.owner_uid:
            left = self.owner_counts.get(pod.owner_uid, 0) - 1
            if left > 0:
                self.owner_counts[pod.owner_uid] = left
            else:
                self.owner_counts.pop(pod.owner_uid, None)
        self._refresh()
        return pod

    def clone(self) -> "NodeInfo":
        """A copy whose pods can be added and removed without touching this one (preemption's what-ifs)."""
        other = NodeInfo(name=self.name)
        other.node, other.labels, other.taints = self.node, self.labels, self.taints
        other.has_hard_taints, other.unschedulable = self.has_hard_taints, self.unschedulable
        other.allocatable = self.allocatable
        other.requested = self.requested.copy()
        other.non_zero_cpu, other.non_zero_memory = self.non_zero_cpu, self.non_zero_memory
        other.pods = dict(self.pods)
        other.used_ports = dict(self.used_ports)
        other.pods_with_affinity = dict(self.pods_with_affinity)
        other.pods_with_required_anti_affinity = dict(self.pods_with_required_anti_affinity)
        other.owner_counts = dict(self.owner_counts)
        other._refresh()
        return other

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"


class NodeList(Protocol):
    """The nodes a cycle sees: in a stable order, and by name."""

    def all(self) -> list[NodeInfo]: ...

    def get(self, name: str) -> NodeInfo | None: ...


@dataclass
class StaticNodes:
    """A NodeList over a fixed list (for tests and what-if evaluations)."""

    nodes: list[NodeInfo] = field(default_factory=list)

    def all(self) -> list[NodeInfo]:
        return self.nodes

    def get(self, name: str) -> NodeInfo | None:
        for node in self.nodes:
            if node.name == name:
                return node
        return None


# -- plugin protocols ------------------------------------------------------------------------------------------
@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status: ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    """A filter that can also check many nodes in one call (Python's per-call cost is most of a simple
    filter's); ``filter_nodes`` must keep exactly the nodes for which ``filter`` succeeds, in order."""

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[NodeInfo]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int: ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    """A score plugin that scores many nodes in one call; ``score_nodes`` equals ``score`` node by node."""

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[int]: ...


@runtime_checkable
class NormalizePlugin(Plugin, Protocol):
    def normalize(self, state: CycleState, pod: PodInfo, scores: list[int]) -> None: ...


def default_normalize(scores: list[int], reverse: bool = False) -> None:
    """Scale to 0..MAX_NODE_SCORE by the highest score; ``reverse`` makes the highest the worst
    (kube-scheduler's DefaultNormalizeScore)."""
    highest = max(scores, default=0)
    if highest == 0:
        if reverse:
            scores[:] = [MAX_NODE_SCORE] * len(scores)
        return
    for i, value in enumerate(scores):
        value = MAX_NODE_SCORE * value // highest
        scores[i] = MAX_NODE_SCORE - value if reverse else value


def now_seconds() -> float:
    return time.monotonic()


def node_names(nodes: Iterable[NodeInfo]) -> list[str]:
    return [n.name for n in nodes]
