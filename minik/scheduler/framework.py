"""The scheduling framework's types (kube-scheduler's framework package, in Python's shape).

A plugin has a ``name`` and implements any of the extension points below: ``pre_filter`` (once per pod; may
answer SKIP to say its ``filter`` has nothing to check for this pod), ``filter`` (once per node), ``pre_score``
(once per pod, over the feasible nodes; SKIP leaves its ``score`` out), ``score`` (once per feasible node, any
integer) and ``normalize`` (the plugin's scores of all feasible nodes, brought to 0..MAX_NODE_SCORE in place).

Plugins see pods and nodes as ``PodInfo`` and ``NodeInfo`` (``minik.scheduler.infos``, re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from minik.scheduler.arrays import NodeArrays
from minik.scheduler.infos import DEFAULT_SCHEDULER_NAME, HostPort, NodeInfo, NodeList, PodInfo, StaticNodes

if TYPE_CHECKING:
    from minik.scheduler.arrays import Ints, Mask

Obj = dict[str, Any]

MAX_NODE_SCORE = 100

__all__ = ["DEFAULT_SCHEDULER_NAME", "HostPort", "NodeInfo", "NodeList", "PodInfo", "StaticNodes"]


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

    def with_plugin(self, plugin: str) -> Status:
        return self if self.plugin == plugin else Status(self.code, self.reasons, plugin)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


class ClusterView(Protocol):
    """What plugins read of the cluster besides nodes and pods (kube-scheduler's listers)."""

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The labels of a namespace (for namespaceSelector); None when the namespace is unknown."""
        ...

    def default_spread_selector(self, pod: PodInfo) -> Any:
        """The LabelSelector of the pods that belong with ``pod`` (its Services' and its controller's
        selectors, as kube-scheduler's DefaultSelector), or None when nothing groups it."""
        ...

    def claim(self, namespace: str, name: str) -> Obj | None:
        """A PersistentVolumeClaim (None when unknown)."""
        ...

    def volume(self, name: str) -> Obj | None:
        """A PersistentVolume (None when unknown)."""
        ...

    def candidate_volumes(self, claim_key: str, class_name: str) -> list[Obj]:
        """The PersistentVolumes a claim (NAMESPACE/NAME) might bind to: those that name it, and the free ones of
        its class."""
        ...

    def storage_class(self, name: str) -> Obj | None:
        """A StorageClass (None when unknown)."""
        ...


class CycleState(dict[str, Any]):
    """What plugins compute in pre_filter / pre_score and read per node, by plugin name; one per cycle.

    ``nodes`` is the cycle's view of every node (the cache's, read-only: a cycle runs without awaiting, so it
    sees one consistent state); ``cluster`` the namespaces, services and controllers. A plugin's value may have
    a ``clone()`` method: preemption's what-ifs clone the state per node and change the copies through the
    plugins' ``add_pod`` / ``remove_pod``."""

    def __init__(self, nodes: NodeList, cluster: ClusterView | None = None) -> None:
        super().__init__()
        self.nodes = nodes
        self.cluster: ClusterView = cluster if cluster is not None else EMPTY_CLUSTER
        self.skip_filters: set[str] = set()
        self.skip_scores: set[str] = set()
        self.active_filters: list[tuple[str, Any]] | None = None
        """The filters not skipped, as (name, filter): worked out once the pre-filters ran (Algorithm)."""

    def clone(self) -> CycleState:
        other = CycleState(self.nodes, self.cluster)
        other.skip_filters = set(self.skip_filters)
        other.active_filters = self.active_filters
        other.skip_scores = set(self.skip_scores)
        for name, value in self.items():
            clone = getattr(value, "clone", None)
            other[name] = clone() if clone is not None else value
        return other


class _EmptyCluster:
    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return None

    def default_spread_selector(self, pod: PodInfo) -> Any:
        return None

    def claim(self, namespace: str, name: str) -> Obj | None:
        return None

    def volume(self, name: str) -> Obj | None:
        return None

    def candidate_volumes(self, claim_key: str, class_name: str) -> list[Obj]:
        return []

    def storage_class(self, name: str) -> Obj | None:
        return None


EMPTY_CLUSTER: ClusterView = _EmptyCluster()


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
class VectorFilterPlugin(FilterPlugin, Protocol):
    """A filter that can also check every node at once on the cycle's columns (``minik.scheduler.arrays``):
    ``filter_mask`` is True exactly where ``filter`` succeeds, or None when it cannot say for this pod (then
    ``filter`` runs node by node); plain ``True`` (no array) when it passes every node."""

    def filter_mask(self, state: CycleState, pod: PodInfo, arrays: NodeArrays) -> Mask | bool | None: ...


@runtime_checkable
class PreFilterExtensions(Plugin, Protocol):
    """A pre-filter whose state can follow pods added to or removed from a node without being recomputed
    (preemption's what-ifs, and nominated pods)."""

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, node: NodeInfo) -> None: ...

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, node: NodeInfo) -> None: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int: ...


@runtime_checkable
class VectorScorePlugin(ScorePlugin, Protocol):
    """A score plugin that scores the nodes at ``rows`` of the cycle's columns at once; equal to ``score`` node
    by node."""

    def score_array(self, state: CycleState, pod: PodInfo, arrays: NodeArrays, rows: Ints) -> Ints: ...


@runtime_checkable
class NormalizePlugin(Plugin, Protocol):
    def normalize(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: list[int]) -> None:
        """Bring the scores of ``nodes`` (in that order) to 0..MAX_NODE_SCORE, in place."""
        ...


class Binding(Protocol):
    """What a pre-bind step may do between the decision and the pod's binding (kube-scheduler's PreBind): write
    through the scheduler's client, and wait for the cluster to change (its informers' view)."""

    cluster: ClusterView

    async def patch_claim(self, namespace: str, name: str, patch: Obj) -> None: ...

    async def wait_until(self, done: Any, claims: Sequence[str], timeout: float) -> bool:
        """Wait until ``done()`` is true, checking it again whenever one of ``claims`` (NAMESPACE/NAME) changes;
        False when ``timeout`` seconds pass first."""
        ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    """A plugin with work to finish before the pod is bound to the node chosen (a pod whose claims must be
    bound first). ``needs_pre_bind`` is asked in the cycle, without awaiting; ``pre_bind`` runs in the bind
    step, and a failure sends the pod back to the queue."""

    def needs_pre_bind(self, cluster: ClusterView, pod: PodInfo) -> bool: ...

    async def pre_bind(self, binding: Binding, pod: PodInfo, node: str) -> Status: ...


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

