"""A pod's resolver configuration, as Kubernetes' kubelet builds it from dnsPolicy and dnsConfig.

- ClusterFirst (the default) and ClusterFirstWithHostNet: the cluster DNS (the cluster IP of the ``kube-dns``
  Service in ``kube-system``, which the proxy serves), search ``NS.svc.DOMAIN svc.DOMAIN DOMAIN`` then the node's
  own search domains, ``options ndots:5``. A hostNetwork pod with ClusterFirst gets Default, and so does every pod
  when the cluster has no DNS Service (Kubernetes' kubelet without --cluster-dns does the same, and warns).
- Default: the node's resolv.conf (``None``: the runtime's default, which is the node's file).
- None: only what dnsConfig gives.

dnsConfig's nameservers and searches are appended (duplicates dropped), its options override by name.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import structlog

from minik.api.errors import StatusError
from minik.client import Client

log = structlog.get_logger("minik.kubelet.dns")

Obj = dict[str, Any]

CLUSTER_DOMAIN = "cluster.local"
DNS_NAMESPACE = "kube-system"
DNS_SERVICE = "kube-dns"
MAX_NAMESERVERS = 3
MAX_SEARCHES = 32
CLUSTER_OPTIONS = ("ndots:5",)


@dataclass(frozen=True)
class PodDns:
    """A resolv.conf: what a runtime gives the pod's sandbox."""

    servers: list[str] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)


def read_resolv_conf(path: str = "/etc/resolv.conf") -> PodDns:
    servers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    try:
        with open(path) as conf:
            for line in conf:
                parts = line.split("#", 1)[0].split()
                if not parts:
                    continue
                if parts[0] == "nameserver" and len(parts) > 1:
                    servers.append(parts[1])
                elif parts[0] in ("search", "domain"):
                    searches = parts[1:]  # the last search or domain line wins
                elif parts[0] == "options":
                    options += parts[1:]
    except OSError:
        pass
    return PodDns(servers, searches, options)


def _merge_options(base: list[str], extra: list[Obj]) -> list[str]:
    merged: dict[str, str] = {}
    for option in base:
        merged[option.partition(":")[0]] = option
    for entry in extra:
        name = str(entry.get("name") or "")
        if name:
            value = entry.get("value")
            merged[name] = f"{name}:{value}" if value not in (None, "") else name
    return list(merged.values())


def policy(pod: Obj, cluster_dns: str | None) -> str:
    """The policy that applies: ClusterFirst falls back to Default on the host network or without cluster DNS."""
    spec = pod.get("spec") or {}
    chosen = str(spec.get("dnsPolicy") or "ClusterFirst")
    if chosen == "ClusterFirst" and spec.get("hostNetwork"):
        return "Default"
    if chosen in ("ClusterFirst", "ClusterFirstWithHostNet") and not cluster_dns:
        return "Default"
    return chosen


def pod_dns(pod: Obj, cluster_dns: str | None, host: PodDns, domain: str = CLUSTER_DOMAIN) -> PodDns | None:
    """The pod's resolver configuration; None to leave the runtime's default (the node's resolv.conf)."""
    spec = pod.get("spec") or {}
    config = spec.get("dnsConfig") or {}
    chosen = policy(pod, cluster_dns)
    if chosen == "Default" and not config:
        return None
    if chosen == "Default":
        base = PodDns(list(host.servers), list(host.searches), list(host.options))
    elif chosen == "None":
        base = PodDns()
    else:
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        base = PodDns([str(cluster_dns)], [f"{namespace}.svc.{domain}", f"svc.{domain}", domain, *host.searches],
                      list(CLUSTER_OPTIONS))
    servers = list(dict.fromkeys([*base.servers, *(str(s) for s in config.get("nameservers") or [])]))
    searches = list(dict.fromkeys([*base.searches, *(str(s) for s in config.get("searches") or [])]))
    options = _merge_options(base.options, [o for o in config.get("options") or [] if isinstance(o, dict)])
    return PodDns(servers[:MAX_NAMESERVERS], searches[:MAX_SEARCHES], options)


def pod_hostname(pod: Obj, domain: str = CLUSTER_DOMAIN) -> tuple[str, str]:
    """The pod's host name and domain, as the kubelet gives them (GeneratePodHostNameAndDomain): spec.hostname,
    else the pod's name (cut to 63 characters); with a subdomain, the domain ``SUBDOMAIN.NS.svc.DOMAIN``, so a
    StatefulSet's pod knows itself as ``web-0.web.NS.svc.cluster.local``."""
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    hostname = str(spec.get("hostname") or meta.get("name") or "")[:63].rstrip("-.")
    subdomain = str(spec.get("subdomain") or "")
    if not subdomain:
        return hostname, ""
    return hostname, f"{subdomain}.{meta.get('namespace') or 'default'}.svc.{domain}"


class ClusterDns:
    """Finds the cluster DNS (the kube-dns Service's cluster IP, through the client) and gives each pod its
    resolver configuration. The runtime asks when it makes a pod's sandbox."""

    def __init__(self, client: Client, domain: str = CLUSTER_DOMAIN, resolv_conf: str = "/etc/resolv.conf",
                 cache_seconds: float = 5.0) -> None:
        self.client = client
        self.domain = domain
        self.host = read_resolv_conf(resolv_conf)
        self.cache_seconds = cache_seconds
        self._cached: tuple[float, str | None] | None = None
        self._warned = False

    async def server(self) -> str | None:
        """The cluster DNS address (None when the cluster has no DNS Service)."""
        now = time.monotonic()
        if self._cached is not None and now - self._cached[0] < self.cache_seconds:
            return self._cached[1]  # only found addresses are kept: a DNS published a moment later is seen at once
        try:
            service = await self.client.get("services", DNS_SERVICE, DNS_NAMESPACE)
            ip = (service.get("spec") or {}).get("clusterIP")
            found = str(ip) if ip and ip != "None" else None
        except StatusError as exc:
            if exc.code != 404:
                raise
            found = None
        self._cached = (now, found) if found else None
        return found

    async def for_pod(self, pod: Obj) -> PodDns | None:
        server = await self.server()
        if server is None and not self._warned and policy(pod, "-") != policy(pod, None):
            self._warned = True
            log.warning("the cluster has no DNS service (kube-system/kube-dns): pods with dnsPolicy ClusterFirst "
                        "get the node's resolver (the Default policy)")
        return pod_dns(pod, server, self.host, self.domain)
