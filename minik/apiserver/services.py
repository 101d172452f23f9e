"""What the API server does for Services beyond the strategy: allocating cluster IPs and node ports on create and
update, releasing them on delete, repairing the allocation records at start-up, and the `kubernetes` Service in
`default` that points at the API server (Kubernetes' service REST storage, its repair loops and the master
endpoint reconciler).

Allocation happens after validation and before the write: values are claimed in the store first, and released
again if the write does not happen (a conflict, a name taken, a dry run), so nothing leaks in normal operation;
the start-up repair puts right what a crash between the two left behind.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from minik.api import validation as v
from minik.api.errors import internal, invalid
from minik.apiserver.allocators import AllocationError, IPRange, Owner, PortRange, RangeFull
from minik.store import Store

log = structlog.get_logger("minik.apiserver.services")

Obj = dict[str, Any]
Finish = Callable[[bool], Awaitable[None]]

DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
DEFAULT_NODE_PORT_RANGE = (30000, 32767)

MASTER_SERVICE = "kubernetes"
MASTER_NAMESPACE = "default"
MASTER_PORT = 443


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def needs_cluster_ip(obj: Obj) -> bool:
    spec = _spec(obj)
    return spec.get("type", "ClusterIP") != "ExternalName" and spec.get("clusterIP") != "None"


def needs_node_ports(obj: Obj) -> bool:
    spec = _spec(obj)
    kind = spec.get("type")
    return kind == "NodePort" or (kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False)


def cluster_ips_of(obj: Obj) -> set[str]:
    spec = _spec(obj)
    if not needs_cluster_ip(obj):
        return set()
    ips = [ip for ip in (spec.get("clusterIPs") or []) if isinstance(ip, str) and ip and ip != "None"]
    if spec.get("clusterIP") and spec["clusterIP"] != "None":
        ips.append(spec["clusterIP"])
    return set(ips)


def node_ports_of(obj: Obj) -> set[int]:
    ports = _spec(obj).get("ports") or []
    return {p["nodePort"] for p in ports if isinstance(p, dict) and v.is_int(p.get("nodePort")) and p["nodePort"]}


class ServiceAllocations:
    """The allocation hooks the services REST storage calls around its writes."""

    def __init__(self, store: Store, service_cidr: str = DEFAULT_SERVICE_CIDR,
                 node_ports: tuple[int, int] = DEFAULT_NODE_PORT_RANGE) -> None:
        self.store = store
        self.ips = IPRange(store, service_cidr)
        self.ports = PortRange(store, *node_ports)

    # -- the hooks -------------------------------------------------------------------------------------------
    async def begin_create(self, obj: Obj, dry_run: bool) -> Finish:
        return await self._allocate(obj, None, dry_run)

    async def begin_update(self, obj: Obj, old: Obj, dry_run: bool) -> Finish:
        return await self._allocate(obj, old, dry_run)

    async def after_delete(self, obj: Obj) -> None:
        owner = _owner(obj)
        for ip in cluster_ips_of(obj):
            await self._release_ip(ip, owner)
        for port in node_ports_of(obj):
            await self._release_port(port, owner)

    # -- allocation ------------------------------------------------------------------------------------------
    async def _allocate(self, obj: Obj, old: Obj | None, dry_run: bool) -> Finish:
        """Give ``obj`` the cluster IP and node ports it needs, claiming the new ones; the returned function
        releases what was claimed (the write failed) or what the old object held and the new one no longer does
        (the write succeeded)."""
        owner = _owner(obj)
        spec = _spec(obj)
        old_ips = cluster_ips_of(old) if old is not None else set()
        old_ports = node_ports_of(old) if old is not None else set()
        claimed_ips: list[str] = []
        claimed_ports: list[int] = []

        async def undo() -> None:
            for ip in claimed_ips:
                await self.ips.release(ip)
            for port in claimed_ports:
                await self.ports.release(str(port))

        try:
            if needs_cluster_ip(obj):
                await self._allocate_ip(spec, owner, old_ips, dry_run, claimed_ips)
            if needs_node_ports(obj):
                await self._allocate_node_ports(spec, owner, old_ports, dry_run, claimed_ports)
        except BaseException:
            await undo()
            raise

        async def finish(success: bool) -> None:
            if not success:
                await undo()
                return
            for ip in old_ips - cluster_ips_of(obj):
                await self._release_ip(ip, owner)
            for port in old_ports - node_ports_of(obj):
                await self._release_port(port, owner)

        return finish

    async def _allocate_ip(self, spec: Obj, owner: Owner, held: set[str], dry_run: bool, claimed: list[str]) -> None:
        requested = spec.get("clusterIP") or next(iter(spec.get("clusterIPs") or []), "")
        if requested and requested in held:
            ip = requested
        elif requested:
            try:
                if dry_run:
                    self.ips.check(requested)
                else:
                    await self.ips.allocate(requested, owner)
                    claimed.append(requested)
            except AllocationError as exc:
                raise invalid("Service", "", owner.name, [v.invalid(
                    "spec.clusterIPs", [requested], f"failed to allocate IP {requested}: {exc}")]) from None
            ip = requested
        else:
            try:
                ip = self.ips.next_free() if dry_run else await self.ips.allocate_next(owner)
            except RangeFull:
                raise internal("failed to allocate a serviceIP: range is full") from None
            if not dry_run:
                claimed.append(ip)
        spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip]
        spec["ipFamilies"] = ["IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"]

    async def _allocate_node_ports(self, spec: Obj, owner: Owner, held: set[int], dry_run: bool,
                                   claimed: list[int]) -> None:
        ours = set(held)
        by_port: dict[Any, int] = {}  # a port number served over two protocols shares one node port
        ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
        for i, port in enumerate(ports):
            wanted = port.get("nodePort")
            if not wanted:
                continue
            if wanted not in ours:
                try:
                    if dry_run:
                        self.ports.check(wanted)
                    else:
                        await self.ports.allocate(wanted, owner)
                        claimed.append(wanted)
                except AllocationError as exc:
                    raise invalid("Service", "", owner.name,
                                  [v.invalid(f"spec.ports[{i}].nodePort", wanted, str(exc))]) from None
                ours.add(wanted)
            by_port.setdefault(port.get("port"), wanted)
        for port in ports:
            if port.get("nodePort"):
                continue
            shared = by_port.get(port.get("port"))
            if shared is not None:
                port["nodePort"] = shared
                continue
            try:
                value = int(self.ports.next_free() if dry_run else await self.ports.allocate_next(owner))
            except RangeFull:
                raise internal("failed to allocate a nodePort: range is full") from None
            if not dry_run:
                claimed.append(value)
            port["nodePort"] = value
            by_port[port.get("port")] = value

    async def _release_ip(self, ip: str, owner: Owner) -> None:
        if self.ips.holder(ip) == owner:
            await self.ips.release(ip)

    async def _release_port(self, port: int, owner: Owner) -> None:
        if self.ports.holder(str(port)) == owner:
            await self.ports.release(str(port))

    # -- start-up --------------------------------------------------------------------------------------------
    async def repair(self, services: list[Obj]) -> None:
        """Make the allocation records match the stored Services (Kubernetes' repair loops, run once at start-up
        before any request): a record no Service holds is released, a value a Service holds without a record is
        recorded again."""
        for allocator, wanted in ((self.ips, {ip: _owner(s) for s in services for ip in cluster_ips_of(s)}),
                                  (self.ports, {str(p): _owner(s) for s in services for p in node_ports_of(s)})):
            recorded = await allocator.records()
            for value, holder in recorded.items():
                if wanted.get(value) != holder:
                    log.warning("releasing a leaked allocation", value=value,
                                holder=f"{holder.namespace}/{holder.name}" if holder else None)
                    await allocator.release(value)
            for value, owner in wanted.items():
                if recorded.get(value) == owner:
                    continue
                if not await allocator.claim(value, owner):
                    log.error("a value is held by two services", value=value, service=f"{owner.namespace}/"
                              f"{owner.name}")

    # -- the kubernetes service ------------------------------------------------------------------------------
    @property
    def master_ip(self) -> str:
        """The first address of the service range, as Kubernetes gives the `kubernetes` Service."""
        return self.ips.value(0)

    def master_service(self, api_port: int) -> Obj:
        return {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": MASTER_SERVICE, "namespace": MASTER_NAMESPACE,
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": self.master_ip, "sessionAffinity": "None",
                     "ports": [{"name": "https", "port": MASTER_PORT, "protocol": "TCP", "targetPort": api_port}]},
        }


def master_endpoints(ip: str, api_port: int) -> Obj:
    return {
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": MASTER_SERVICE, "namespace": MASTER_NAMESPACE,
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "https", "port": api_port, "protocol": "TCP"}]}],
    }


def _owner(obj: Obj) -> Owner:
    meta = obj.get("metadata") or {}
    return Owner(str(meta.get("namespace") or ""), str(meta.get("name") or ""))

