"""The environment variables a container gets for the Services it can see, as the kubelet builds them.

For a service ``redis-primary`` with cluster IP 10.96.0.11 and a port 6379 named ``redis``::

    REDIS_PRIMARY_SERVICE_HOST=10.96.0.11
    REDIS_PRIMARY_SERVICE_PORT=6379                 (the first port)
    REDIS_PRIMARY_SERVICE_PORT_REDIS=6379           (every named port)
    REDIS_PRIMARY_PORT=tcp://10.96.0.11:6379        (Docker links: the first port)
    REDIS_PRIMARY_PORT_6379_TCP=tcp://10.96.0.11:6379
    REDIS_PRIMARY_PORT_6379_TCP_PROTO=tcp
    REDIS_PRIMARY_PORT_6379_TCP_PORT=6379
    REDIS_PRIMARY_PORT_6379_TCP_ADDR=10.96.0.11

Names are upper-cased with dashes turned into underscores. Services without a cluster IP (headless, ExternalName)
give none. Pure functions: the kubelet passes the Services it has listed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Obj = dict[str, Any]

MASTER_SERVICES = ("kubernetes",)


def env_name(name: str) -> str:
    """Kubernetes' makeEnvVariableName: upper case, dashes to underscores."""
    return name.replace("-", "_").upper()


def _host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def has_cluster_ip(service: Obj) -> bool:
    ip = (service.get("spec") or {}).get("clusterIP")
    return bool(ip) and ip != "None"


def from_service(service: Obj) -> list[tuple[str, str]]:
    """The variables of one Service, in the kubelet's order (none without a cluster IP or ports)."""
    spec = service.get("spec") or {}
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    if not has_cluster_ip(service) or not ports:
        return []
    ip = str(spec["clusterIP"])
    prefix = env_name(str((service.get("metadata") or {}).get("name") or ""))
    result = [(f"{prefix}_SERVICE_HOST", ip), (f"{prefix}_SERVICE_PORT", str(ports[0].get("port")))]
    for port in ports:
        if port.get("name"):
            result.append((f"{prefix}_SERVICE_PORT_{env_name(str(port['name']))}", str(port.get("port"))))
    for i, port in enumerate(ports):
        protocol = str(port.get("protocol") or "TCP")
        url = f"{protocol.lower()}://{_host_port(ip, int(port.get('port') or 0))}"
        if i == 0:
            result.append((f"{prefix}_PORT", url))
        port_prefix = f"{prefix}_PORT_{port.get('port')}_{protocol.upper()}"
        result += [(port_prefix, url), (f"{port_prefix}_PROTO", protocol.lower()),
                   (f"{port_prefix}_PORT", str(port.get("port"))), (f"{port_prefix}_ADDR", ip)]
    return result


def service_env(services: Iterable[Obj], namespace: str, enable_service_links: bool = True) -> dict[str, str]:
    """The variables a pod in ``namespace`` gets, from every Service the kubelet knows (any namespace): those of
    its own namespace (unless the pod's spec.enableServiceLinks is false) and, always, the `kubernetes` Service of
    `default` -- unless the pod's namespace has a Service of that name, which wins (the kubelet's
    getServiceEnvVarMap). Container env given in the pod spec takes precedence over all of these."""
    chosen: dict[str, Obj] = {}
    for service in services:
        meta = service.get("metadata") or {}
        name, ns = str(meta.get("name") or ""), meta.get("namespace")
        if not has_cluster_ip(service):
            continue
        if ns == "default" and name in MASTER_SERVICES:
            chosen.setdefault(name, service)
        elif ns == namespace and enable_service_links:
            chosen[name] = service
    env: dict[str, str] = {}
    for name in sorted(chosen):
        env.update(from_service(chosen[name]))
    return env
