"""Limits that keep an overloaded or attacked server answering: concurrent requests per lane, and timeouts for
idle, slow and silent connections.

Lanes are kube-apiserver's max-in-flight filter with API Priority and Fairness' ``system`` level for nodes: reads
(get, list), writes (everything else) and node heartbeats (a node's own Node and Lease writes) each have a
number of slots; a request that finds its lane full is answered at once with 429 TooManyRequests and
``Retry-After``, as Kubernetes does, so clients back off instead of piling up. Watches are long-running and
exempt, and so are admins (``system:masters``: the admin kubeconfig, the API server's own requests), as in
Kubernetes' max-in-flight filter and APF's ``exempt`` level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minik.api.errors import StatusError
from minik.apiserver.request import User
from minik.apiserver.requestinfo import RequestInfo

MASTERS = "system:masters"
NODES = "system:nodes"
NODE_SIMULATOR = "system:minik:node-simulator"
LANES = ("read", "write", "node")


@dataclass(frozen=True)
class Limits:
    max_reads: int = 400
    """Concurrent get/list requests (kube-apiserver's --max-requests-inflight)."""

    max_writes: int = 200
    """Concurrent writes (kube-apiserver's --max-mutating-requests-inflight)."""

    max_node_heartbeats: int = 100
    """Concurrent Node and Lease requests from nodes: their own lane, so a flood of writes never makes a node
    miss its heartbeat and be marked NotReady."""

    retry_after_seconds: int = 1
    """What a 429 asks the client to wait."""

    idle_timeout_seconds: float = 32.0
    """A connection that has not sent a complete request within this long (after connecting, or after its last
    response) is closed: idle keep-alive connections and slow or silent headers alike."""

    body_timeout_seconds: float = 60.0
    """How long reading a request body may take (then 408, and the connection is closed)."""

    lingering_seconds: float = 2.0
    """How long a connection closed with its request body unread is kept reading (so the client gets the
    answer before the connection goes) - aiohttp's lingering_time, 10 s by default."""

    def server_args(self) -> dict[str, Any]:
        """The aiohttp server options these limits set."""
        return {"keepalive_timeout": self.idle_timeout_seconds, "lingering_time": self.lingering_seconds}


def too_many_requests(retry_after: int) -> StatusError:
    return StatusError(429, "TooManyRequests", "Too many requests, please try again later.",
                       {"retryAfterSeconds": retry_after}, {"Retry-After": str(retry_after)})


class Lanes:
    """Counts the requests in flight per lane; ``acquire`` raises 429 when the request's lane is full."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.capacity = {"read": limits.max_reads, "write": limits.max_writes, "node": limits.max_node_heartbeats}
        self.in_flight = dict.fromkeys(LANES, 0)
        self.rejected = dict.fromkeys(LANES, 0)

    @staticmethod
    def lane(user: User, info: RequestInfo) -> str | None:
        """The lane of a request, or None when it is exempt (watches, admins)."""
        if info.verb == "watch" or MASTERS in user.groups:
            return None
        resource = (info.resource.group, info.resource.plural)
        if (NODES in user.groups or user.name == NODE_SIMULATOR) and \
                resource in (("", "nodes"), ("coordination.k8s.io", "leases")):
            return "node"
        return "read" if info.verb in ("get", "list") else "write"

    def acquire(self, lane: str | None) -> None:
        """Take a slot in ``lane`` (nothing for an exempt request), or raise 429 when the lane is full. Every
        ``acquire`` that returns is followed by one ``release`` of the same lane."""
        if lane is None:
            return
        if self.in_flight[lane] >= self.capacity[lane]:
            self.rejected[lane] += 1
            raise too_many_requests(self.limits.retry_after_seconds)
        self.in_flight[lane] += 1

    def release(self, lane: str | None) -> None:
        if lane is not None:
            self.in_flight[lane] -= 1
