"""The proxy and cluster DNS of one node, as one component (``NodeProxy``): `minik up` runs it for its local node
(the "proxy" component), and a joined node runs its own (``NodeProxy(client, ProxySettings(node_name=...))``).

Start-up returns at once and sets itself up in the background (``ready`` is set when it is done): informers on
Services and Endpoints, the NAT chain when iptables can be used here (without it, node ports still work and cluster
IPs do not: that is logged), the DNS server, and the ``kube-dns`` Service in ``kube-system`` whose cluster IP pods
use as their nameserver. Stopping undoes all of it in reverse: no listener, connection, task or NAT rule is left.
"""

from __future__ import annotations

import asyncio
import ipaddress
from dataclasses import dataclass

import structlog

from minik.aio import Backoff, start_task, stop_task
from minik.api.errors import StatusError
from minik.client import Client, TransportError
from minik.informers import Informer
from minik.proxy.dns import DnsServer, Upstream, bridge_addresses, resolv_conf_nameservers
from minik.proxy.dnszone import DEFAULT_DOMAIN, ClusterZone
from minik.proxy.iptables import IptablesError, NatChain
from minik.proxy.proxier import Proxier

log = structlog.get_logger("minik.proxy")

DNS_NAMESPACE = "kube-system"
DNS_SERVICE = "kube-dns"
#: kubeadm's choice: the DNS Service takes the tenth address of the service range
DNS_IP_OFFSET = 10


@dataclass(frozen=True)
class ProxySettings:
    node_name: str
    """The node this proxy serves (names its NAT chain)."""

    iptables: bool = True
    """Redirect cluster IPs with NAT rules when iptables can be used here (root, iptables on PATH)."""

    bind: str = "0.0.0.0"
    """Where node ports (and the portals the cluster IPs are redirected to) listen: every address of the node."""

    dns: bool = True
    """Serve the cluster DNS (and publish the kube-dns Service)."""

    cluster_domain: str = DEFAULT_DOMAIN
    """The DNS zone the cluster's names are served under (Services as NAME.NAMESPACE.svc.DOMAIN)."""

    dns_addresses: tuple[str, ...] | None = None
    """Where the DNS server listens [default: 127.0.0.1 and the addresses of the machine's bridge interfaces]."""

    dns_upstreams: tuple[Upstream, ...] | None = None
    """Where names outside the cluster zone are forwarded [default: the nameservers of /etc/resolv.conf]."""

    resync_seconds: float = 10.0
    """How often the proxier syncs without a change (retries busy node ports, expires idle sessions)."""


class NodeProxy:
    """kube-proxy and the node's DNS server in one component; talks to the cluster only through ``client``."""

    def __init__(self, client: Client, settings: ProxySettings) -> None:
        self.client = client
        self.settings = settings
        self.services = Informer(client, "services")
        self.endpoints = Informer(client, "endpoints")
        self.chain: NatChain | None = None
        self.iptables_problem: str | None = None
        """Why cluster IPs are not redirected on this node (None when they are)."""
        self.dns: DnsServer | None = None
        self.proxier: Proxier | None = None
        self.ready = asyncio.Event()
        self._setup: asyncio.Task[None] | None = None
        self._loop: asyncio.Task[None] | None = None
        self._log = log.bind(node=settings.node_name)

    async def start(self) -> None:
        self._setup = start_task(self._start(), "proxy start")

    async def wait_ready(self, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout):
            await self.ready.wait()

    async def _start(self) -> None:
        s = self.settings
        self.iptables_problem = await self._install_chain() if s.iptables else "disabled by the settings"
        if self.iptables_problem is not None:
            self._log.warning("iptables cannot be used: cluster IPs are not reachable from this node; node ports "
                              "are", reason=self.iptables_problem)
        local: dict[tuple[str, str], int] = {}
        if s.dns:
            zone = ClusterZone(self.services.get, self.endpoints.get, self.services.list, s.cluster_domain)
            upstreams = list(s.dns_upstreams) if s.dns_upstreams is not None else resolv_conf_nameservers()
            addresses = list(s.dns_addresses) if s.dns_addresses is not None else ["127.0.0.1", *bridge_addresses()]
            dns = DnsServer(zone, upstreams, addresses)
            try:
                await dns.start()
                self.dns = dns
                local[(DNS_NAMESPACE, DNS_SERVICE)] = dns.port
            except OSError as exc:
                self._log.warning("cannot serve the cluster DNS", addresses=addresses, error=str(exc))
        chain = self.chain if self.chain is not None and self.chain.installed else None
        self.proxier = Proxier(self.services, self.endpoints, chain, local=local, bind=s.bind,
                               resync_seconds=s.resync_seconds)
        self.services.start()
        self.endpoints.start()
        await self.services.wait_for_sync()
        await self.endpoints.wait_for_sync()
        await self.proxier.sync()
        self._loop = start_task(self.proxier.run(), "proxy sync")
        if self.dns is not None:
            await self._publish_dns_service()
        self.ready.set()
        self._log.info("proxy ready", iptables=self.chain.name if self.chain else self.iptables_problem,
                       dns_port=self.dns.port if self.dns else None)

    async def _install_chain(self) -> str | None:
        """Install this node's NAT chain; None when done, else why iptables cannot be used here."""
        chain = NatChain(self.settings.node_name)
        problem = await chain.probe()
        if problem is not None:
            return problem
        self.chain = chain  # before installing: stop() removes whatever part of it got made
        try:
            await chain.install()
        except (IptablesError, OSError) as exc:
            return str(exc)
        return None

    async def _publish_dns_service(self) -> None:
        """Create kube-system/kube-dns when it is missing (kept as it is when it exists), at the tenth address of
        the service range when that is free."""
        backoff = Backoff(initial=0.2, maximum=5.0)
        while True:
            try:
                await publish_dns_service(self.client)
                return
            except (StatusError, TransportError) as exc:
                self._log.warning("cannot publish the kube-dns service; retrying", error=str(exc))
            await asyncio.sleep(backoff.next())

    async def stop(self) -> None:
        await stop_task(self._setup)
        await stop_task(self._loop)
        self._setup = self._loop = None
        if self.proxier is not None:
            await self.proxier.close()
        if self.chain is not None:
            try:
                await self.chain.uninstall()
            except Exception as exc:  # noqa: BLE001 - the rest must still stop
                self._log.warning("cannot remove the iptables chain", chain=self.chain.name, error=str(exc))
        if self.dns is not None:
            await self.dns.stop()
        await self.endpoints.stop()
        await self.services.stop()
        self.ready.clear()
        self._log.info("proxy stopped")


#: the DNS pods (the node's DNS shown as a static pod, ``minik.controlplane``), and their named ports: the
#: Service's Endpoints are where pods reach the DNS servers (while this node's proxy redirects the cluster IP to
#: its own DNS server directly)
DNS_SELECTOR = {"k8s-app": "kube-dns"}
DNS_PORTS = [{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": "dns"},
             {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": "dns-tcp"}]


def dns_service(cluster_ip: str | None) -> dict[str, object]:
    spec: dict[str, object] = {"selector": dict(DNS_SELECTOR), "ports": [dict(p) for p in DNS_PORTS]}
    if cluster_ip:
        spec["clusterIP"] = cluster_ip
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": DNS_SERVICE, "namespace": DNS_NAMESPACE,
                         "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
                                    "kubernetes.io/name": "minik-dns"}},
            "spec": spec}


async def publish_dns_service(client: Client) -> None:
    try:
        current = await client.get("services", DNS_SERVICE, DNS_NAMESPACE)
    except StatusError as exc:
        if exc.code != 404:
            raise
    else:
        spec = current.get("spec") or {}
        if not spec.get("selector") and ((current.get("metadata") or {}).get("labels") or {}).get(
                "kubernetes.io/name") == "minik-dns":  # published by an older minik: select the DNS pods
            await client.patch("services", DNS_SERVICE, {"spec": {"selector": DNS_SELECTOR, "ports": DNS_PORTS}},
                               DNS_NAMESPACE)
            log.info("kube-dns service now selects the DNS pods")
        return
    wanted: str | None = None
    try:
        master = await client.get("services", "kubernetes", "default")
        first = ipaddress.ip_address(str(master["spec"]["clusterIP"]))
        wanted = str(first + DNS_IP_OFFSET - 1)
    except (StatusError, KeyError, ValueError):
        pass
    for cluster_ip in dict.fromkeys([wanted, None]):
        try:
            await client.create("services", dns_service(cluster_ip), DNS_NAMESPACE)
            log.info("kube-dns service published", cluster_ip=cluster_ip or "allocated")
            return
        except StatusError as exc:
            if exc.code == 409:
                return  # another node published it first
            if exc.code != 422 or cluster_ip is None:
                raise
