"""Resource amounts as the scheduler counts them: quantities in integer units (millicores, bytes, counts), and a
pod's effective request (kube-scheduler's computePodResourceRequest)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from minik.api.quantity import milli_value_of, value_of

#: what a container without requests counts for when scoring (kube-scheduler's non-zero defaults)
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

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
    def from_list(cls, amounts: Mapping[str, Any] | None) -> Resource:
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

    def add(self, other: Resource, sign: int = 1) -> None:
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        for name, value in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + sign * value

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        for name, value in other.scalar.items():
            self.scalar[name] = max(self.scalar.get(name, 0), value)

    def same_as(self, other: Resource) -> bool:
        return self.milli_cpu == other.milli_cpu and self.memory == other.memory and \
            self.ephemeral_storage == other.ephemeral_storage and self.pods == other.pods and \
            self.scalar == other.scalar

    def copy(self) -> Resource:
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
        init = Resource.from_list(_container_requests(container))
        if container.get("restartPolicy") == "Always":  # a sidecar runs beside the containers
            sidecars.add(init)
            total.add(init)
            continue
        init.add(sidecars)
        total.set_max(init)
        non_zero_cpu = max(non_zero_cpu, init.milli_cpu)
        non_zero_memory = max(non_zero_memory, init.memory)
    overhead = spec.get("overhead")
    if overhead:
        extra = Resource.from_list(overhead)
        total.add(extra)
        non_zero_cpu += extra.milli_cpu
        non_zero_memory += extra.memory
    return total, non_zero_cpu, non_zero_memory
