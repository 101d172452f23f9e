"""What the proxy serves, read from Services and Endpoints (pure functions).

A Service becomes one ``ServicePort`` per entry of ``spec.ports``: the cluster IP and port the proxy redirects to
itself, the node port it listens on, and the session affinity. Its Endpoints give each service port the ready
addresses with that port's number (the endpoints controller resolved named target ports per pod), as
kube-proxy's service and endpoints change trackers do. Headless and ExternalName Services are not proxied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

#: the protocols the proxy forwards (SCTP is accepted by the API and left alone)
PROXIED_PROTOCOLS = ("TCP", "UDP")


@dataclass(frozen=True, order=True)
class PortKey:
    """A service port's identity: ``namespace/name:port-name/PROTOCOL``."""

    namespace: str
    name: str
    port_name: str
    protocol: str

    def __str__(self) -> str:
        port = f":{self.port_name}" if self.port_name else ""
        return f"{self.namespace}/{self.name}{port}/{self.protocol}"


@dataclass(frozen=True)
class ServicePort:
    """One port of a Service as the proxy serves it; two equal ServicePorts need no change to the listeners."""

    key: PortKey
    cluster_ip: str
    port: int
    node_port: int | None = None
    affinity_seconds: float | None = None
    """ClientIP session affinity: how long a client sticks to its endpoint (None: no affinity)."""


@dataclass(frozen=True, order=True)
class Endpoint:
    ip: str
    port: int

    def __str__(self) -> str:
        return f"{self.ip}:{self.port}"


def service_ports(service: Obj) -> list[ServicePort]:
    """The ports of a Service the proxy forwards (none for headless and ExternalName Services)."""
    meta, spec = service.get("metadata") or {}, service.get("spec") or {}
    cluster_ip = str(spec.get("clusterIP") or "")
    if spec.get("type") == "ExternalName" or not cluster_ip or cluster_ip == "None":
        return []
    affinity: float | None = None
    if spec.get("sessionAffinity") == "ClientIP":
        config = (spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}
        affinity = float(config.get("timeoutSeconds") or 10800)
    node_ports = spec.get("type") in ("NodePort", "LoadBalancer")
    ports = []
    for port in spec.get("ports") or []:
        if not isinstance(port, dict) or str(port.get("protocol") or "TCP") not in PROXIED_PROTOCOLS:
            continue
        key = PortKey(str(meta.get("namespace") or ""), str(meta.get("name") or ""), str(port.get("name") or ""),
                      str(port.get("protocol") or "TCP"))
        node_port = int(port["nodePort"]) if node_ports and port.get("nodePort") else None
        ports.append(ServicePort(key, cluster_ip, int(port.get("port") or 0), node_port, affinity))
    return ports


def ready_endpoints(endpoints: Obj | None, key: PortKey) -> list[Endpoint]:
    """The ready addresses of a service port (the subset port with the same name and protocol), sorted."""
    found: set[Endpoint] = set()
    for subset in (endpoints or {}).get("subsets") or []:
        for port in subset.get("ports") or []:
            if str(port.get("name") or "") == key.port_name and str(port.get("protocol") or "TCP") == key.protocol:
                found.update(Endpoint(str(a["ip"]), int(port["port"])) for a in subset.get("addresses") or []
                             if a.get("ip"))
    return sorted(found)
