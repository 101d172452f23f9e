"""The node's cluster DNS against a real API server: Services and Endpoints written by the test are answered at
once, over UDP and TCP; other names go to the node's resolver (a real DNS server started by the test)."""

from __future__ import annotations

import ipaddress

from dnslib import QTYPE, RCODE, DNSRecord

from minik.client import Client
from minik.cluster import Cluster
from minik.proxy import NodeProxy
from tests.proxy.conftest import proxy_of
from tests.proxy.helpers import DnsUpstream, endpoints, eventually, query, service

NS = "default"
ZONE = "svc.cluster.local"


def dns_of(cluster: Cluster) -> tuple[str, int]:
    proxy: NodeProxy = proxy_of(cluster)
    assert proxy.dns is not None
    return ("127.0.0.1", proxy.dns.port)


def answers(reply: DNSRecord, qtype: str = "A") -> list[str]:
    return sorted(str(rr.rdata) for rr in reply.rr if rr.rtype == getattr(QTYPE, qtype))


async def test_a_service_name_resolves_to_its_cluster_ip(proxied: Cluster, api: Client) -> None:
    created = await api.create("services", service("web"), NS)
    server = dns_of(proxied)

    async def resolved() -> DNSRecord | None:
        reply = await query(server, f"web.{NS}.{ZONE}")
        return reply if reply.rr else None
    reply = await eventually(resolved, timeout=1.0, what="an answer within a second")
    assert answers(reply) == [created["spec"]["clusterIP"]]
    assert reply.header.aa == 1 and reply.header.rcode == RCODE.NOERROR and reply.rr[0].ttl == 5
    assert answers(await query(server, f"WEB.{NS}.{ZONE}.", tcp=True)) == [created["spec"]["clusterIP"]]
    assert (await query(server, f"web.{NS}.{ZONE}", "AAAA")).rr == []  # IPv4 only: no data, not NXDOMAIN


async def test_a_headless_service_resolves_to_its_ready_pods_and_their_hostnames(proxied: Cluster,
                                                                               api: Client) -> None:
    await api.create("services", service("db", clusterIP="None", ports=[{"name": "pg", "port": 5432}]), NS)
    body = endpoints("db", ["172.17.0.7", "172.17.0.8"], [{"name": "pg", "port": 5432}], not_ready=["172.17.0.9"])
    body["subsets"][0]["addresses"][0]["hostname"] = "db-0"
    await api.create("endpoints", body, NS)
    server = dns_of(proxied)

    async def both() -> DNSRecord | None:
        reply = await query(server, f"db.{NS}.{ZONE}")
        return reply if len(reply.rr) == 2 else None
    assert answers(await eventually(both)) == ["172.17.0.7", "172.17.0.8"]  # the not-ready pod is left out
    assert answers(await query(server, f"db-0.db.{NS}.{ZONE}")) == ["172.17.0.7"]
    assert answers(await query(server, f"172-17-0-8.db.{NS}.{ZONE}")) == ["172.17.0.8"]
    srv = await query(server, f"_pg._tcp.db.{NS}.{ZONE}", "SRV")
    assert sorted(str(rr.rdata) for rr in srv.rr) == [f"0 50 5432 172-17-0-8.db.{NS}.{ZONE}.",
                                                      f"0 50 5432 db-0.db.{NS}.{ZONE}."]
    assert sorted(str(rr.rdata) for rr in srv.ar) == ["172.17.0.7", "172.17.0.8"]


async def test_a_named_port_has_an_srv_record_pointing_at_the_service(proxied: Cluster, api: Client) -> None:
    created = await api.create("services", service("web", ports=[{"name": "http", "port": 80},
                                                                  {"name": "dns", "port": 53, "protocol": "UDP"}]), NS)
    server = dns_of(proxied)
    target = f"web.{NS}.{ZONE}."

    async def srv() -> DNSRecord | None:
        reply = await query(server, f"_http._tcp.web.{NS}.{ZONE}", "SRV")
        return reply if reply.rr else None
    reply = await eventually(srv)
    assert [str(rr.rdata) for rr in reply.rr] == [f"0 100 80 {target}"]
    assert [(str(rr.rname), str(rr.rdata)) for rr in reply.ar] == [(target, created["spec"]["clusterIP"])]
    assert [str(rr.rdata) for rr in (await query(server, f"_dns._udp.web.{NS}.{ZONE}", "SRV")).rr] == \
        [f"0 100 53 {target}"]
    assert (await query(server, f"_dns._tcp.web.{NS}.{ZONE}", "SRV")).header.rcode == RCODE.NXDOMAIN


async def test_unknown_names_in_the_zone_are_nxdomain_with_the_zone_soa(proxied: Cluster, api: Client) -> None:
    server = dns_of(proxied)
    for name in (f"nothing.{NS}.{ZONE}", f"outside.example.{NS}.{ZONE}", "a.b.c.cluster.local",
                 f"nothing.{NS}.pod.cluster.local"):
        reply = await query(server, name)
        assert reply.header.rcode == RCODE.NXDOMAIN and reply.rr == [], name
        assert [rr.rtype for rr in reply.auth] == [QTYPE.SOA]
    assert (await query(server, f"{NS}.{ZONE}")).header.rcode == RCODE.NOERROR  # it has the kubernetes service


async def test_names_outside_the_zone_go_to_the_nodes_resolver(proxied: Cluster, upstream: DnsUpstream) -> None:
    server = dns_of(proxied)
    for tcp in (False, True):
        reply = await query(server, "outside.example", tcp=tcp)
        assert answers(reply) == ["192.0.2.80"] and reply.header.aa == 0
        assert (await query(server, "missing.example", tcp=tcp)).header.rcode == RCODE.NXDOMAIN
    assert upstream.queries.count("outside.example.") == 2


async def test_pods_external_names_and_reverse_lookups(proxied: Cluster, api: Client) -> None:
    server = dns_of(proxied)
    assert answers(await query(server, f"10-1-2-3.{NS}.pod.cluster.local")) == ["10.1.2.3"]
    await api.create("services", {"metadata": {"name": "ext"}, "spec": {"type": "ExternalName",
                                                                         "externalName": "outside.example"}}, NS)

    async def cname() -> DNSRecord | None:
        reply = await query(server, f"ext.{NS}.{ZONE}")
        return reply if reply.rr else None
    assert answers(await eventually(cname), "CNAME") == ["outside.example."]
    kubernetes = await api.get("services", "kubernetes", NS)
    reverse = ipaddress.ip_address(kubernetes["spec"]["clusterIP"]).reverse_pointer
    assert answers(await query(server, reverse, "PTR"), "PTR") == [f"kubernetes.{NS}.{ZONE}."]


async def test_a_large_answer_over_udp_is_truncated_and_complete_over_tcp(proxied: Cluster, api: Client) -> None:
    await api.create("services", service("many", clusterIP="None"), NS)
    ips = [f"172.17.1.{i}" for i in range(1, 61)]
    await api.create("endpoints", endpoints("many", ips, [{"port": 80}]), NS)
    server = dns_of(proxied)

    async def full_over_tcp() -> DNSRecord | None:
        reply = await query(server, f"many.{NS}.{ZONE}", tcp=True)
        return reply if len(reply.rr) == 60 else None
    assert answers(await eventually(full_over_tcp)) == sorted(ips)
    short = await query(server, f"many.{NS}.{ZONE}")
    assert short.header.tc == 1 and short.rr == []
    assert len((await query(server, f"many.{NS}.{ZONE}", edns=True)).rr) == 60  # EDNS: up to 4096 bytes


async def test_the_kube_dns_service_takes_the_tenth_address_and_leads_to_the_dns_server(proxied: Cluster,
                                                                                       api: Client) -> None:
    kube_dns = await api.get("services", "kube-dns", "kube-system")
    network = ipaddress.ip_network(proxied.settings.service_cidr)
    assert kube_dns["spec"]["clusterIP"] == str(network.network_address + 10)
    assert [(p["name"], p["protocol"], p["port"]) for p in kube_dns["spec"]["ports"]] == [
        ("dns", "UDP", 53), ("dns-tcp", "TCP", 53)]
    created = await api.create("services", service("web"), NS)
    through_the_cluster_ip = (kube_dns["spec"]["clusterIP"], 53)  # the NAT chain redirects it to the DNS server

    async def resolved() -> DNSRecord | None:
        reply = await query(through_the_cluster_ip, f"web.{NS}.{ZONE}")
        return reply if reply.rr else None
    assert answers(await eventually(resolved)) == [created["spec"]["clusterIP"]]
    assert answers(await query(through_the_cluster_ip, f"web.{NS}.{ZONE}", tcp=True)) == \
        [created["spec"]["clusterIP"]]


async def test_a_deleted_service_stops_resolving_at_once(proxied: Cluster, api: Client) -> None:
    await api.create("services", service("web"), NS)
    server = dns_of(proxied)

    async def rcode(expected: int) -> bool:
        return (await query(server, f"web.{NS}.{ZONE}")).header.rcode == expected
    await eventually(lambda: rcode(RCODE.NOERROR), timeout=1.0)
    await api.delete("services", "web", NS)
    await eventually(lambda: rcode(RCODE.NXDOMAIN), timeout=1.0, what="NXDOMAIN within a second")
