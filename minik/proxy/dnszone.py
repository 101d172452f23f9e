"""The cluster's DNS zone (Kubernetes' DNS-based service discovery spec), answered from the proxy's caches of
Services and Endpoints:

- ``SVC.NS.svc.cluster.local``: A with the cluster IP, or, for a headless Service, the ready addresses; CNAME to
  ``spec.externalName`` for an ExternalName Service; SRV for each of its named ports.
- ``_PORT._PROTO.SVC.NS.svc.cluster.local``: SRV for a named port (to the Service, or to each ready address of a
  headless Service), with the A records as additional answers.
- ``HOST.SVC.NS.svc.cluster.local``: A for a headless Service's ready address whose hostname (or dashed IP) is HOST.
- ``A-B-C-D.NS.pod.cluster.local``: A with A.B.C.D.
- PTR for the cluster IPs of Services.

Names in the zone that match nothing are NXDOMAIN (with the zone's SOA, so resolvers walking the search list move on
at once); names outside it are not answered here (``answer`` returns None) and go to the node's resolver.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from typing import Any

from dnslib import AAAA, CNAME, PTR, QTYPE, RCODE, RR, SOA, SRV, A, DNSRecord

Obj = dict[str, Any]
Lookup = Callable[[str], Obj | None]

DEFAULT_DOMAIN = "cluster.local"
TTL = 5
_ADDRESS_TYPES = (QTYPE.A, QTYPE.ANY)


def dashed(ip: str) -> str:
    return ip.replace(".", "-").replace(":", "-")


def undashed(label: str) -> str | None:
    """``10-1-2-3`` -> ``10.1.2.3`` (None when it is not an IPv4 address)."""
    try:
        return str(ipaddress.IPv4Address(label.replace("-", ".")))
    except ValueError:
        return None


class ClusterZone:
    def __init__(self, services: Lookup, endpoints: Lookup, all_services: Callable[[], Iterable[Obj]],
                 domain: str = DEFAULT_DOMAIN, ttl: int = TTL) -> None:
        """``services`` and ``endpoints`` look objects up by ``namespace/name`` (an informer's ``get``);
        ``all_services`` lists every Service (for PTR and namespace names)."""
        self.services = services
        self.endpoints = endpoints
        self.all_services = all_services
        self.domain = domain.strip(".").lower()
        self.ttl = ttl

    # -- the entry point ---------------------------------------------------------------------------------------
    def answer(self, request: DNSRecord) -> DNSRecord | None:
        """The reply to a query for a name in the zone (or a cluster IP's PTR); None for other names."""
        if not request.questions:
            return None
        question = request.q
        name = str(question.qname).rstrip(".").lower()
        qtype = question.qtype
        if qtype == QTYPE.PTR:
            return self._ptr(request, name)
        if name != self.domain and not name.endswith("." + self.domain):
            return None
        labels = name[:-len(self.domain)].rstrip(".").split(".") if name != self.domain else []
        reply = request.reply()
        found = self._resolve(reply, [label for label in labels if label], qtype)
        if not found:
            reply.header.rcode = RCODE.NXDOMAIN
        if not reply.rr:
            reply.add_auth(self._soa())
        return reply

    # -- names -------------------------------------------------------------------------------------------------
    def _resolve(self, reply: DNSRecord, labels: list[str], qtype: int) -> bool:
        """Add the answers for ``labels`` (the name without the zone); False when the name does not exist."""
        qname = reply.q.qname
        if not labels or labels in (["svc"], ["pod"]):
            if not labels and qtype == QTYPE.SOA:
                reply.add_answer(self._soa())
            return True
        if labels[-1] == "pod":
            if len(labels) == 3:
                ip = undashed(labels[0])
                if ip is None:
                    return False
                if qtype in _ADDRESS_TYPES:
                    reply.add_answer(RR(qname, QTYPE.A, rdata=A(ip), ttl=self.ttl))
                return True
            return len(labels) == 2  # NS.pod
        if labels[-1] != "svc":
            return False
        if len(labels) == 2:  # NS.svc: exists while the namespace has Services
            return any((s.get("metadata") or {}).get("namespace") == labels[0] for s in self.all_services())
        if len(labels) == 3:
            return self._service(reply, labels[1], labels[0], qtype)
        if len(labels) == 4:
            return self._endpoint_host(reply, labels[2], labels[1], labels[0], qtype)
        if len(labels) == 5 and labels[0].startswith("_") and labels[1].startswith("_"):
            return self._named_port(reply, labels[3], labels[2], labels[0][1:], labels[1][1:], qtype)
        return False

    def fqdn(self, *labels: str) -> str:
        return ".".join((*labels, self.domain)) + "."

    def _service(self, reply: DNSRecord, namespace: str, name: str, qtype: int) -> bool:
        service = self.services(f"{namespace}/{name}")
        if service is None:
            return False
        spec = service.get("spec") or {}
        qname = reply.q.qname
        if spec.get("type") == "ExternalName":
            target = str(spec.get("externalName") or "").rstrip(".") + "."
            reply.add_answer(RR(qname, QTYPE.CNAME, rdata=CNAME(target), ttl=self.ttl))
            return True
        headless = spec.get("clusterIP") == "None"
        if qtype in _ADDRESS_TYPES:
            ips = [ip for ip, _ in self._ready(namespace, name)] if headless else [str(spec.get("clusterIP") or "")]
            for ip in dict.fromkeys(ip for ip in ips if ip and ":" not in ip):
                reply.add_answer(RR(qname, QTYPE.A, rdata=A(ip), ttl=self.ttl))
        if qtype in (QTYPE.AAAA, QTYPE.ANY):
            ips = [ip for ip, _ in self._ready(namespace, name)] if headless else [str(spec.get("clusterIP") or "")]
            for ip in dict.fromkeys(ip for ip in ips if ":" in ip):
                reply.add_answer(RR(qname, QTYPE.AAAA, rdata=AAAA(ip), ttl=self.ttl))
        if qtype == QTYPE.SRV:
            for port in spec.get("ports") or []:
                if port.get("name"):
                    self._named_port(reply, namespace, name, str(port["name"]),
                                     str(port.get("protocol") or "TCP").lower(), qtype, owner=qname)
        return True

    def _ready(self, namespace: str, name: str) -> list[tuple[str, str]]:
        """(ip, host label) of each ready address of a Service's Endpoints; the label is the address's hostname,
        or its dashed IP."""
        seen: dict[str, str] = {}
        for subset in (self.endpoints(f"{namespace}/{name}") or {}).get("subsets") or []:
            for address in subset.get("addresses") or []:
                ip = str(address.get("ip") or "")
                if ip:
                    seen.setdefault(ip, str(address.get("hostname") or dashed(ip)).lower())
        return sorted(seen.items())

    def _endpoint_host(self, reply: DNSRecord, namespace: str, name: str, host: str, qtype: int) -> bool:
        service = self.services(f"{namespace}/{name}")
        if service is None or (service.get("spec") or {}).get("clusterIP") != "None":
            return False
        ips = [ip for ip, label in self._ready(namespace, name) if label == host]
        if not ips:
            return False
        if qtype in _ADDRESS_TYPES:
            for ip in ips:
                reply.add_answer(RR(reply.q.qname, QTYPE.A, rdata=A(ip), ttl=self.ttl))
        return True

    def _named_port(self, reply: DNSRecord, namespace: str, name: str, port_name: str, protocol: str, qtype: int,
                    owner: Any = None) -> bool:
        service = self.services(f"{namespace}/{name}")
        if service is None:
            return False
        spec = service.get("spec") or {}
        port = next((p for p in spec.get("ports") or [] if str(p.get("name") or "") == port_name and
                     str(p.get("protocol") or "TCP").lower() == protocol), None)
        if port is None:
            return False
        if qtype not in (QTYPE.SRV, QTYPE.ANY):
            return True
        owner = owner if owner is not None else reply.q.qname
        if spec.get("clusterIP") != "None":
            target = self.fqdn(name, namespace, "svc")
            reply.add_answer(RR(owner, QTYPE.SRV, rdata=SRV(0, 100, int(port.get("port") or 0), target),
                                ttl=self.ttl))
            if spec.get("clusterIP") and ":" not in str(spec["clusterIP"]):
                reply.add_ar(RR(target, QTYPE.A, rdata=A(str(spec["clusterIP"])), ttl=self.ttl))
            return True
        ready = self._ready(namespace, name)
        for subset in (self.endpoints(f"{namespace}/{name}") or {}).get("subsets") or []:
            number = next((int(p["port"]) for p in subset.get("ports") or [] if str(p.get("name") or "") == port_name
                           and str(p.get("protocol") or "TCP").lower() == protocol), None)
            if number is None:
                continue
            ips = {str(a.get("ip")) for a in subset.get("addresses") or []}
            weight = max(1, 100 // max(1, len(ready)))
            for ip, label in ready:
                if ip in ips:
                    target = self.fqdn(label, name, namespace, "svc")
                    reply.add_answer(RR(owner, QTYPE.SRV, rdata=SRV(0, weight, number, target), ttl=self.ttl))
                    reply.add_ar(RR(target, QTYPE.A, rdata=A(ip), ttl=self.ttl))
        return True

    # -- reverse lookups and the zone's SOA --------------------------------------------------------------------
    def _ptr(self, request: DNSRecord, name: str) -> DNSRecord | None:
        if not name.endswith(".in-addr.arpa"):
            return None
        parts = name[:-len(".in-addr.arpa")].split(".")
        if len(parts) != 4:
            return None
        ip = ".".join(reversed(parts))
        for service in self.all_services():
            if (service.get("spec") or {}).get("clusterIP") == ip:
                meta = service.get("metadata") or {}
                reply = request.reply()
                target = self.fqdn(str(meta.get("name")), str(meta.get("namespace")), "svc")
                reply.add_answer(RR(request.q.qname, QTYPE.PTR, rdata=PTR(target), ttl=self.ttl))
                return reply
        return None

    def _soa(self) -> RR:
        return RR(self.domain + ".", QTYPE.SOA, ttl=self.ttl,
                  rdata=SOA(f"ns.dns.{self.domain}.", f"hostmaster.{self.domain}.", (1, 7200, 1800, 86400, self.ttl)))
