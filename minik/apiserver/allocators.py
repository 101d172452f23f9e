"""Range allocators kept in the store: Service cluster IPs and node ports.

Every allocated value is one record in the store (``/ranges/serviceips/10.96.0.10``,
``/ranges/servicenodeports/30080``), as Kubernetes' IPAddress allocator keeps one IPAddress object per cluster IP.
The store's create is atomic (a second create of a key is KeyExists), so two concurrent Service creates can never
get the same value, and what is allocated survives restarts with everything else. A record names the Service that
holds it (its ``parentRef``), which lets the API server repair leaks at start-up.

These keys are outside every resource's prefix, so no list or watch of the API ever shows them.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from minik.store import KeyExists, KeyNotFound, Store

Obj = dict[str, Any]

IP_PREFIX = "/ranges/serviceips/"
NODE_PORT_PREFIX = "/ranges/servicenodeports/"


class AllocationError(Exception):
    """A requested value cannot be had (taken, or outside the range); the message is Kubernetes'."""


class RangeFull(Exception):
    """No value is free."""


@dataclass(frozen=True)
class Owner:
    """The Service an allocation belongs to."""

    namespace: str
    name: str

    def ref(self) -> Obj:
        return {"group": "", "resource": "services", "namespace": self.namespace, "name": self.name}

    @classmethod
    def of(cls, record: Obj) -> Owner | None:
        ref = (record.get("spec") or {}).get("parentRef") or {}
        if not ref.get("name"):
            return None
        return cls(str(ref.get("namespace") or ""), str(ref["name"]))


def static_band(size: int, low: int, high: int, step: int) -> int:
    """How many values at the bottom of a range are kept for requested (static) values: dynamic allocation takes
    from above this first (Kubernetes' ServiceIPStaticSubrange / ServiceNodePortStaticSubrange)."""
    if size < low:
        return 0
    return max(low, min(high, size // step))


class StoreRange:
    """A range of values (offsets 0..size-1) allocated as one store record per value."""

    def __init__(self, store: Store, prefix: str, size: int, band: int) -> None:
        self.store = store
        self.prefix = prefix
        self.size = size
        self.band = band

    # subclasses turn offsets into values and back
    def value(self, offset: int) -> str:
        raise NotImplementedError

    def offset(self, value: str) -> int | None:
        """The offset of ``value`` in the range, or None when it is outside."""
        raise NotImplementedError

    def key(self, value: str) -> str:
        return self.prefix + value

    def holder(self, value: str) -> Owner | None:
        record = self.store.get(self.key(value))
        return Owner.of(record.object()) if record is not None else None

    def is_free(self, value: str) -> bool:
        return self.store.get(self.key(value)) is None

    async def claim(self, value: str, owner: Owner) -> bool:
        """Record ``value`` as ``owner``'s; False when it is taken already."""
        try:
            await self.store.create(self.key(value), {"metadata": {"name": value}, "spec": {"parentRef": owner.ref()}})
        except KeyExists:
            return False
        return True

    async def release(self, value: str) -> None:
        try:
            await self.store.delete(self.key(value))
        except KeyNotFound:
            pass

    def _candidates(self) -> Iterator[int]:
        """Every offset once: the dynamic band from a random point (wrapping), then the static band likewise."""
        for low, high in ((self.band, self.size), (0, self.band)):
            if high <= low:
                continue
            start = random.randrange(low, high)
            yield from range(start, high)
            yield from range(low, start)

    def next_free(self) -> str:
        """A free value, without claiming it (for dry runs)."""
        for offset in self._candidates():
            value = self.value(offset)
            if self.is_free(value):
                return value
        raise RangeFull()

    async def allocate_next(self, owner: Owner) -> str:
        for offset in self._candidates():
            value = self.value(offset)
            if self.is_free(value) and await self.claim(value, owner):
                return value
        raise RangeFull()

    async def records(self) -> dict[str, Owner | None]:
        """Every value recorded under this range's prefix (in range or not) with its holder."""
        listed = await self.store.list(self.prefix)
        return {r.key[len(self.prefix):]: Owner.of(r.object()) for r in listed.items}


class IPRange(StoreRange):
    """Service cluster IPs from a CIDR; the network and broadcast addresses are never handed out."""

    def __init__(self, store: Store, cidr: str) -> None:
        self.network = ipaddress.ip_network(cidr, strict=False)
        self.cidr = str(self.network)
        self.base = int(self.network.network_address) + 1
        size = max(self.network.num_addresses - 2, 0) if self.network.version == 4 else self.network.num_addresses - 1
        super().__init__(store, IP_PREFIX, size, static_band(size, 16, 256, 16))

    def value(self, offset: int) -> str:
        return str(ipaddress.ip_address(self.base + offset))

    def offset(self, value: str) -> int | None:
        try:
            ip = ipaddress.ip_address(value)
        except ValueError:
            return None
        if ip.version != self.network.version:
            return None
        offset = int(ip) - self.base
        return offset if 0 <= offset < self.size else None

    def not_in_range(self, value: str) -> str:
        return f"the provided IP ({value}) is not in the valid range. The range of valid IPs is {self.cidr}"

    async def allocate(self, value: str, owner: Owner) -> None:
        """Claim a requested IP; AllocationError with Kubernetes' message when it is outside or taken."""
        if self.offset(value) is None:
            raise AllocationError(self.not_in_range(value))
        if not await self.claim(value, owner):
            raise AllocationError("provided IP is already allocated")

    def check(self, value: str) -> None:
        """As allocate, without claiming (dry run)."""
        if self.offset(value) is None:
            raise AllocationError(self.not_in_range(value))
        if not self.is_free(value):
            raise AllocationError("provided IP is already allocated")


class PortRange(StoreRange):
    """Node ports from an inclusive range (30000-32767 by default)."""

    def __init__(self, store: Store, first: int, last: int) -> None:
        self.first = first
        self.last = last
        size = last - first + 1
        super().__init__(store, NODE_PORT_PREFIX, size, static_band(size, 16, 128, 32))

    @property
    def text(self) -> str:
        return f"{self.first}-{self.last}"

    def value(self, offset: int) -> str:
        return str(self.first + offset)

    def offset(self, value: str) -> int | None:
        try:
            port = int(value)
        except ValueError:
            return None
        return port - self.first if self.first <= port <= self.last else None

    def not_in_range(self) -> str:
        return f"provided port is not in the valid range. The range of valid ports is {self.text}"

    async def allocate(self, value: int, owner: Owner) -> None:
        if self.offset(str(value)) is None:
            raise AllocationError(self.not_in_range())
        if not await self.claim(str(value), owner):
            raise AllocationError("provided port is already allocated")

    def check(self, value: int) -> None:
        if self.offset(str(value)) is None:
            raise AllocationError(self.not_in_range())
        if not self.is_free(str(value)):
            raise AllocationError("provided port is already allocated")
