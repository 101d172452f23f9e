"""Round robin over a service port's ready endpoints, with ClientIP session affinity (kube-proxy's userspace
load balancer): each new connection goes to the next endpoint in turn; with affinity, a client keeps the endpoint
it got until it has been idle for the affinity timeout or that endpoint goes away.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from minik.aio.clock import SYSTEM_CLOCK, Clock
from minik.proxy.servicemap import Endpoint


@dataclass
class _Sticky:
    endpoint: Endpoint
    last_used: float


class RoundRobin:
    def __init__(self, affinity_seconds: float | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.affinity_seconds = affinity_seconds
        self._now = clock.monotonic
        self.endpoints: tuple[Endpoint, ...] = ()
        self._next = 0
        self._sticky: dict[str, _Sticky] = {}

    def __bool__(self) -> bool:
        return bool(self.endpoints)

    def update(self, endpoints: Sequence[Endpoint]) -> bool:
        """Take a new endpoint list; True when it changed. The turn carries on where it was, and clients stuck to
        an endpoint that went away lose it."""
        fresh = tuple(endpoints)
        if fresh == self.endpoints:
            return False
        self.endpoints = fresh
        self._next = self._next % len(fresh) if fresh else 0
        present = set(fresh)
        for client in [c for c, s in self._sticky.items() if s.endpoint not in present]:
            del self._sticky[client]
        return True

    def candidates(self, client_ip: str) -> Iterator[Endpoint]:
        """The endpoints to try for a new connection from ``client_ip``, best first: the client's sticky endpoint
        or the next in turn, then the others in turn (for when a connect fails). Empty without endpoints."""
        if not self.endpoints:
            return iter(())
        now = self._now()
        first = self._sticky_for(client_ip, now)
        if first is None:
            first = self.endpoints[self._next]
            self._next = (self._next + 1) % len(self.endpoints)
            if self.affinity_seconds is not None:
                self._sticky[client_ip] = _Sticky(first, now)
        start = self.endpoints.index(first)
        ring = self.endpoints[start:] + self.endpoints[:start]
        return iter(ring)

    def _sticky_for(self, client_ip: str, now: float) -> Endpoint | None:
        if self.affinity_seconds is None:
            return None
        sticky = self._sticky.get(client_ip)
        if sticky is None:
            return None
        if now - sticky.last_used > self.affinity_seconds:
            del self._sticky[client_ip]
            return None
        sticky.last_used = now
        return sticky.endpoint

    def failed(self, client_ip: str, endpoint: Endpoint) -> None:
        """A connect to ``endpoint`` failed: the client is no longer stuck to it."""
        sticky = self._sticky.get(client_ip)
        if sticky is not None and sticky.endpoint == endpoint:
            del self._sticky[client_ip]

    def chosen(self, client_ip: str, endpoint: Endpoint) -> None:
        """The connection went to ``endpoint`` (after a failover): with affinity, the client sticks to it."""
        if self.affinity_seconds is not None:
            self._sticky[client_ip] = _Sticky(endpoint, self._now())

    def expire(self) -> None:
        """Forget clients idle for longer than the affinity timeout (called now and then)."""
        if self.affinity_seconds is None:
            return
        now = self._now()
        for client in [c for c, s in self._sticky.items() if now - s.last_used > self.affinity_seconds]:
            del self._sticky[client]
