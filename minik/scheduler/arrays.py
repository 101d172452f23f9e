"""The hot numbers of every node as columns (numpy), one row per node in the NodeList's order, so the common
filters and scores check thousands of nodes in a few vector operations instead of a Python loop per node.

A NodeInfo attached to a NodeArrays writes its row whenever its numbers change (a pod added or removed, the node
updated), so the columns are always current. Plugins that can work on columns offer ``filter_mask`` and
``score_array`` next to their per-node ``filter`` and ``score``, with exactly the same results (tests check it).
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from minik.scheduler.infos import NodeInfo

    Mask = npt.NDArray[np.bool_]
    Ints = npt.NDArray[np.int64]


class LazyModule:
    """A module imported at the first use of one of its attributes, each attribute then kept on this object (so
    later uses cost a plain attribute read). numpy takes about 130 ms to import: `minik up` starts the scheduler
    before it is ready, and pays for numpy only when the first pod is scheduled (or sooner, off the event loop,
    through ``load`` in a thread: ``Scheduler.warm_up``)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._imported: ModuleType | None = None

    def load(self) -> ModuleType:
        """The module, imported now if it was not yet (safe from any thread)."""
        if self._imported is None:
            with self._lock:
                if self._imported is None:
                    self._imported = importlib.import_module(self._name)
        return self._imported

    @property
    def loaded(self) -> bool:
        return self._imported is not None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        value = getattr(self.load(), attr)
        setattr(self, attr, value)  # found on the instance from now on: __getattr__ runs once per attribute
        return value


NUMPY = LazyModule("numpy")
if not TYPE_CHECKING:  # the modules that compute on columns take ``np`` from here
    np = NUMPY

_COLUMNS = ("alloc_cpu", "alloc_memory", "free_cpu", "free_memory", "free_pods", "non_zero_cpu",
            "non_zero_memory", "unschedulable", "hard_taints", "soft_taints")


#: the cached properties of NodeArrays worked out from the nodes themselves
_DERIVED = ("all_allocatable", "any_soft_taints", "any_hard_taints", "any_unschedulable")


class NodeArrays:
    """Columns: allocatable cpu (millicores) and memory, what is free of cpu, memory and pod slots, the non-zero
    requests used for scoring, and 0/1 flags (cordoned, NoSchedule/NoExecute taints, PreferNoSchedule taints)."""

    def __init__(self, infos: list[NodeInfo]) -> None:
        self.size = len(infos)
        self.infos = infos
        self._objects: Any = None  # the infos as a numpy object array, for nodes_at
        self._labels: dict[str, tuple[Ints, list[str]]] = {}
        # column-major: each column is contiguous for the vector operations
        self.data: Ints = np.zeros((self.size, len(_COLUMNS)), dtype=np.int64, order="F")
        (self.alloc_cpu, self.alloc_memory, self.free_cpu, self.free_memory, self.free_pods, self.non_zero_cpu,
         self.non_zero_memory, self.unschedulable, self.hard_taints, self.soft_taints) = \
            (self.data[:, i] for i in range(len(_COLUMNS)))
        for row, info in enumerate(infos):
            info.attach(self, row)

    def write(self, row: int, info: NodeInfo) -> None:
        self.data[row] = (info.alloc_milli_cpu, info.alloc_memory, info.free_milli_cpu, info.free_memory,
                          info.free_pods, info.non_zero_cpu, info.non_zero_memory, info.unschedulable,
                          info.has_hard_taints, info.has_soft_taints)

    def nodes_at(self, rows: Ints) -> list[NodeInfo]:
        """The NodeInfos at ``rows``, in that order (one C-level gather instead of a Python loop)."""
        if self._objects is None:
            self._objects = np.empty(self.size, dtype=object)
            self._objects[:] = self.infos
        found: list[NodeInfo] = self._objects[rows].tolist()
        return found

    def label_ids(self, key: str) -> tuple[Ints, list[str]]:
        """The nodes' values of a label as numbers: ``(ids, values)`` with ``values[ids[row]]`` the value of
        the node at ``row``, and -1 where the node lacks the label (so ``table[ids]`` with one extra False
        entry at the end reads as False there)."""
        found = self._labels.get(key)
        if found is None:
            values: list[str] = []
            seen: dict[str, int] = {}
            ids = np.empty(self.size, dtype=np.int64)
            for row, info in enumerate(self.infos):
                value = info.labels.get(key)
                if value is None:
                    ids[row] = -1
                else:
                    index = seen.get(value)
                    if index is None:
                        index = seen[value] = len(values)
                        values.append(value)
                    ids[row] = index
            found = self._labels[key] = (ids, values)
        return found

    # what is worked out from the nodes once per change of them (``nodes_changed`` forgets it), not per cycle
    @functools.cached_property
    def all_allocatable(self) -> bool:
        """Whether every node has some allocatable cpu and memory (the scores then need no guard against 0)."""
        return bool((self.alloc_cpu > 0).all() and (self.alloc_memory > 0).all())

    @functools.cached_property
    def any_soft_taints(self) -> bool:
        """Whether any node has a PreferNoSchedule taint."""
        return bool(self.soft_taints.any())

    @functools.cached_property
    def any_hard_taints(self) -> bool:
        """Whether any node has a NoSchedule or NoExecute taint."""
        return bool(self.hard_taints.any())

    @functools.cached_property
    def any_unschedulable(self) -> bool:
        """Whether any node is cordoned (spec.unschedulable)."""
        return bool(self.unschedulable.any())

    def nodes_changed(self) -> None:
        """A node object changed (its labels, taints or allocatable): forget what was worked out from them."""
        self._labels.clear()
        for name in _DERIVED:
            self.__dict__.pop(name, None)

    def detach(self, infos: list[NodeInfo]) -> None:
        for info in infos:
            if info.arrays is self:
                info.attach(None, -1)


class RowNodes(Sequence["NodeInfo"]):
    """The NodeInfos at ``rows`` of ``arrays``, in that order: one is read without making the list (a cycle whose
    scores all work on columns reads only the node it chooses); iterating makes it once."""

    __slots__ = ("_arrays", "_rows", "_list")

    def __init__(self, arrays: NodeArrays, rows: Ints) -> None:
        self._arrays = arrays
        self._rows = rows
        self._list: list[NodeInfo] | None = None

    def _all(self) -> list[NodeInfo]:
        if self._list is None:
            self._list = self._arrays.nodes_at(self._rows)
        return self._list

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodeInfo]: ...

    def __getitem__(self, index: int | slice) -> NodeInfo | list[NodeInfo]:
        if isinstance(index, slice) or self._list is not None:
            return self._all()[index]
        return self._arrays.infos[int(self._rows[index])]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self._all())
