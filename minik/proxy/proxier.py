"""The proxier: makes the forwarders and the NAT rules match the Services and Endpoints in the informers' caches.

Informer handlers only mark the state dirty; one loop syncs (at once after a change, and every
``resync_seconds`` anyway, to retry node ports that were busy and to expire idle affinity and UDP sessions). A sync
closes the forwarders of service ports that went away or changed, creates the new ones, hands every forwarder its
ready endpoints (a change takes effect for the next connection), opens or closes listeners, and rewrites the NAT
chain when the redirects changed.

Services the node agent serves itself (``local``: the cluster DNS) get no forwarder: their cluster IP is
redirected straight to the local port.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import structlog

from minik.aio import Backoff
from minik.informers import Informer, object_key
from minik.proxy.balancer import RoundRobin
from minik.proxy.iptables import IptablesError, NatChain, Redirect
from minik.proxy.servicemap import PortKey, ServicePort, ready_endpoints, service_ports
from minik.proxy.tcp import TcpForwarder
from minik.proxy.udp import UdpForwarder

log = structlog.get_logger("minik.proxy")

Forwarder = TcpForwarder | UdpForwarder


class Proxier:
    def __init__(self, services: Informer, endpoints: Informer, chain: NatChain | None, *,
                 local: Mapping[tuple[str, str], int] | None = None, bind: str = "0.0.0.0",
                 resync_seconds: float = 10.0) -> None:
        self.services = services
        self.endpoints = endpoints
        self.chain = chain
        self.local = dict(local or {})
        self.bind = bind
        self.resync_seconds = resync_seconds
        self.forwarders: dict[PortKey, Forwarder] = {}
        self.syncs = 0
        self._dirty = asyncio.Event()
        self._backoff = Backoff(initial=0.5, maximum=10.0)
        services.add_handlers(self.changed, self.changed, self.changed)
        endpoints.add_handlers(self.changed, self.changed, self.changed)

    def changed(self, *_objects: object) -> None:
        self._dirty.set()

    async def run(self) -> None:
        """Sync on every change (and every ``resync_seconds``) until cancelled."""
        while True:
            try:
                async with asyncio.timeout(self.resync_seconds):
                    await self._dirty.wait()
            except TimeoutError:
                pass
            self._dirty.clear()
            try:
                await self.sync()
                self._backoff.reset()
            except Exception as exc:  # noqa: BLE001 - iptables, a port, or a bug: log, back off, sync again
                delay = self._backoff.next()
                log.warning("proxy sync failed; retrying", error=f"{type(exc).__name__}: {exc}", seconds=delay,
                            exc_info=not isinstance(exc, (OSError, IptablesError)))
                await asyncio.sleep(delay)
                self._dirty.set()

    def wanted(self) -> dict[PortKey, ServicePort]:
        ports = {}
        for service in self.services.list():
            meta = service.get("metadata") or {}
            if (meta.get("namespace"), meta.get("name")) in self.local:
                continue
            for port in service_ports(service):
                ports[port.key] = port
        return ports

    async def sync(self) -> None:
        self.syncs += 1
        wanted = self.wanted()
        for key in [k for k, f in self.forwarders.items() if wanted.get(k) != f.port]:
            closing = self.forwarders.pop(key)
            await closing.close()
            log.info("service port closed", service=str(key))
        for key, port in wanted.items():
            forwarder = self.forwarders.get(key)
            if forwarder is None:
                forwarder = self.forwarders[key] = self._forwarder(port)
                log.info("service port opened", service=str(key), cluster_ip=port.cluster_ip, port=port.port,
                         node_port=port.node_port)
            endpoints = ready_endpoints(self.endpoints.get(f"{key.namespace}/{key.name}"), key)
            if forwarder.balancer.update(endpoints):
                log.debug("endpoints changed", service=str(key), endpoints=[str(e) for e in endpoints])
            forwarder.balancer.expire()
            if isinstance(forwarder, UdpForwarder):
                forwarder.expire()
            await forwarder.sync()
        if self.chain is not None and self.chain.installed:
            await self.chain.apply(self.redirects())

    def _forwarder(self, port: ServicePort) -> Forwarder:
        balancer = RoundRobin(port.affinity_seconds)
        portal = self.chain is not None  # without NAT rules nothing would reach a portal
        if port.key.protocol == "UDP":
            return UdpForwarder(port, balancer, portal=portal, bind=self.bind)
        return TcpForwarder(port, balancer, portal=portal, bind=self.bind)

    def redirects(self) -> list[Redirect]:
        rules = [Redirect(f.port.cluster_ip, f.port.key.protocol, f.port.port, f.portal_port, str(key))
                 for key, f in self.forwarders.items() if f.portal_port and ":" not in f.port.cluster_ip]
        for service in self.services.list():
            meta, spec = service.get("metadata") or {}, service.get("spec") or {}
            local_port = self.local.get((str(meta.get("namespace") or ""), str(meta.get("name") or "")))
            cluster_ip = str(spec.get("clusterIP") or "")
            if local_port is None or not cluster_ip or cluster_ip == "None" or ":" in cluster_ip:
                continue
            for port in spec.get("ports") or []:
                protocol = str(port.get("protocol") or "TCP")
                if protocol in ("TCP", "UDP"):
                    rules.append(Redirect(cluster_ip, protocol, int(port.get("port") or 0), local_port,
                                          object_key(service)))
        return rules

    async def close(self) -> None:
        """Close every forwarder (listeners and connections)."""
        for forwarder in self.forwarders.values():
            await forwarder.close()
        self.forwarders.clear()
