"""Service cluster IPs and node ports: allocated by the API server from its ranges, never twice, released on delete,
kept across restarts, refused with Kubernetes' messages when taken or out of range."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.store import Store, StoreSettings
from tests.access import admin_session

SERVICES = "/api/v1/namespaces/default/services"


def service(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"selector": {"app": name}, "ports": [{"port": 80}], **spec}}


def settings(tmp_path: Path, cidr: str = "10.96.0.0/12") -> ClusterSettings:
    return ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL", service_cidr=cidr,
                           disabled=frozenset(COMPONENTS))


@pytest.fixture
async def small_cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """A cluster whose service range holds 30 addresses (10.100.0.1 - 10.100.0.30)."""
    async with Cluster(settings(tmp_path, "10.100.0.0/27")) as cluster:
        yield cluster


async def call(session: aiohttp.ClientSession, method: str, path: str, body: Any = None,
               **params: str) -> tuple[int, dict[str, Any]]:
    async with session.request(method, path, json=body, params=params or None) as response:
        return response.status, await response.json()


async def test_a_service_gets_a_cluster_ip_from_the_service_range(http) -> None:
    status, created = await http.post(SERVICES, service("web"))
    assert status == 201, created
    spec = created["spec"]
    assert ipaddress.ip_address(spec["clusterIP"]) in ipaddress.ip_network("10.96.0.0/12")
    assert spec["clusterIPs"] == [spec["clusterIP"]] and spec["ipFamilies"] == ["IPv4"]
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]


async def test_concurrent_creates_never_share_a_cluster_ip_and_a_full_range_is_an_error(small_cluster) -> None:
    async with admin_session(small_cluster) as session:
        results = await asyncio.gather(*(call(session, "POST", SERVICES, service(f"s{i}")) for i in range(35)))
    created = [body["spec"]["clusterIP"] for status, body in results if status == 201]
    refused = [body for status, body in results if status != 201]
    assert len(created) == 29  # 30 addresses, the first one is the kubernetes service's
    assert len(set(created)) == 29 and "10.100.0.1" not in created
    assert len(refused) == 6
    assert all(b["code"] == 500 and b["message"] == "Internal error occurred: failed to allocate a serviceIP: "
               "range is full" for b in refused), refused[0]


async def test_concurrent_creates_never_share_a_node_port_and_one_asked_for_is_given_once(cluster) -> None:
    two_ports = [{"name": "http", "port": 80}, {"name": "https", "port": 443}]
    async with admin_session(cluster) as session:  # 30042: in the band kept for asked ports
        dynamic = await asyncio.gather(*(call(session, "POST", SERVICES, service(f"d{i}", type="NodePort",
                                                                                 ports=two_ports))
                                         for i in range(30)))
        static = await asyncio.gather(*(call(session, "POST", SERVICES, service(f"s{i}", type="NodePort", ports=[
            {"port": 80, "nodePort": 30042}])) for i in range(12)))
    assert all(status == 201 for status, _ in dynamic)
    ports = [p["nodePort"] for _, body in dynamic for p in body["spec"]["ports"]]
    assert len(set(ports)) == 60
    assert sorted(status for status, _ in static) == [201] + [422] * 11
    assert {body["message"].split(": ", 1)[1] for status, body in static if status == 422} == {
        "spec.ports[0].nodePort: Invalid value: 30042: provided port is already allocated"}


async def test_deleting_a_service_releases_its_cluster_ip_and_node_ports(http) -> None:
    status, _ = await http.post(SERVICES, service("a", type="NodePort", clusterIP="10.96.5.5",
                                                  ports=[{"port": 80, "nodePort": 30080}]))
    assert status == 201
    status, body = await http.post(SERVICES, service("b", clusterIP="10.96.5.5"))
    assert status == 422
    status, _ = await http.delete(f"{SERVICES}/a")
    assert status == 200
    status, body = await http.post(SERVICES, service("b", type="NodePort", clusterIP="10.96.5.5",
                                                     ports=[{"port": 80, "nodePort": 30080}]))
    assert status == 201, body
    assert body["spec"]["clusterIP"] == "10.96.5.5" and body["spec"]["ports"][0]["nodePort"] == 30080


async def test_a_taken_cluster_ip_is_invalid_with_kubernetes_message(http) -> None:
    await http.post(SERVICES, service("a", clusterIP="10.96.0.50"))
    status, body = await http.post(SERVICES, service("b", clusterIP="10.96.0.50"))
    assert status == 422 and body["reason"] == "Invalid"
    assert body["message"] == ('Service "b" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.50"}: '
                               'failed to allocate IP 10.96.0.50: provided IP is already allocated')
    assert body["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.clusterIPs", "message":
                                          'Invalid value: []string{"10.96.0.50"}: failed to allocate IP 10.96.0.50: '
                                          'provided IP is already allocated'}]


async def test_a_cluster_ip_outside_the_range_is_invalid(http) -> None:
    for ip in ("10.0.0.5", "10.96.0.0", "10.111.255.255"):  # outside, the network and the broadcast address
        status, body = await http.post(SERVICES, service("a", clusterIP=ip))
        assert status == 422
        assert body["message"].endswith(f"failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid "
                                        "range. The range of valid IPs is 10.96.0.0/12")


async def test_node_ports_are_allocated_in_range_and_a_clash_is_invalid(http) -> None:
    status, a = await http.post(SERVICES, service("a", type="NodePort", ports=[{"port": 80, "name": "http"},
                                                                                {"port": 443, "name": "https"}]))
    assert status == 201
    ports = [p["nodePort"] for p in a["spec"]["ports"]]
    assert len(set(ports)) == 2 and all(30000 <= p <= 32767 for p in ports)
    status, body = await http.post(SERVICES, service("b", type="NodePort", ports=[{"port": 80, "nodePort": ports[1]}]))
    assert status == 422
    assert body["message"] == (f'Service "b" is invalid: spec.ports[0].nodePort: Invalid value: {ports[1]}: '
                               "provided port is already allocated")
    status, _ = await http.get(f"{SERVICES}/b")
    assert status == 404


async def test_a_port_served_over_tcp_and_udp_shares_one_node_port(http) -> None:
    status, body = await http.post(SERVICES, service("dns", type="NodePort", ports=[
        {"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]))
    assert status == 201, body
    udp, tcp = body["spec"]["ports"]
    assert udp["nodePort"] == tcp["nodePort"]


async def test_a_failed_create_gives_back_what_it_allocated(http) -> None:
    assert (await http.post(SERVICES, service("a")))[0] == 201
    status, _ = await http.post(SERVICES, service("a", type="NodePort", clusterIP="10.96.7.7",
                                                  ports=[{"port": 80, "nodePort": 30007}]))
    assert status == 409  # the name is taken: the IP and the port it had claimed are free again
    status, body = await http.post(SERVICES, service("b", type="NodePort", clusterIP="10.96.7.7",
                                                     ports=[{"port": 80, "nodePort": 30007}]))
    assert status == 201, body


async def test_a_dry_run_allocates_nothing(http) -> None:
    status, body = await http.call("POST", SERVICES, service("a", type="NodePort", clusterIP="10.96.8.8",
                                                             ports=[{"port": 80, "nodePort": 30008}]),
                                   params={"dryRun": "All"})
    assert status == 201 and body["spec"]["clusterIP"] == "10.96.8.8"
    status, body = await http.post(SERVICES, service("b", type="NodePort", clusterIP="10.96.8.8",
                                                     ports=[{"port": 80, "nodePort": 30008}]))
    assert status == 201, body


async def test_a_headless_service_gets_no_cluster_ip(http) -> None:
    status, body = await http.post(SERVICES, service("db", clusterIP="None"))
    assert status == 201 and body["spec"]["clusterIP"] == "None"
    status, body = await http.post(SERVICES, service("np", clusterIP="None", type="NodePort"))
    assert status == 422
    assert body["details"]["causes"][0]["message"] == ("Invalid value: \"None\": may not be set to 'None' for "
                                                       "NodePort services")


async def test_type_changes_allocate_and_release(http) -> None:
    status, body = await http.post(SERVICES, service("web"))
    ip = body["spec"]["clusterIP"]
    status, body = await http.patch(f"{SERVICES}/web", {"spec": {"type": "NodePort"}})
    assert status == 200, body
    node_port = body["spec"]["ports"][0]["nodePort"]
    assert body["spec"]["clusterIP"] == ip and 30000 <= node_port <= 32767
    status, body = await http.patch(f"{SERVICES}/web", {"spec": {"type": "ClusterIP"}})
    assert status == 200, body
    assert "nodePort" not in body["spec"]["ports"][0]
    status, _ = await http.post(SERVICES, service("other", type="NodePort", ports=[{"port": 80, "nodePort": node_port}]))
    assert status == 201  # the node port went back
    status, body = await http.patch(f"{SERVICES}/web", {"spec": {"type": "ExternalName",
                                                                 "externalName": "example.com"}})
    assert status == 200, body
    assert "clusterIP" not in body["spec"]
    status, _ = await http.post(SERVICES, service("third", clusterIP=ip))
    assert status == 201  # so did the cluster IP
    status, body = await http.patch(f"{SERVICES}/web", {"spec": {"type": "ClusterIP", "externalName": None}})
    assert status == 200, body
    assert body["spec"]["clusterIP"] not in ("", None, ip)


async def test_an_update_without_the_allocated_values_keeps_them(http) -> None:
    status, body = await http.post(SERVICES, service("web", type="NodePort"))
    ip, node_port = body["spec"]["clusterIP"], body["spec"]["ports"][0]["nodePort"]
    resent = service("web", type="NodePort", ports=[{"port": 80}, {"port": 81, "name": "b"}])
    resent["spec"]["ports"][0]["name"] = "a"
    status, body = await http.put(f"{SERVICES}/web", resent)
    assert status == 200, body
    assert body["spec"]["clusterIP"] == ip and body["spec"]["ports"][0]["nodePort"] == node_port
    assert body["spec"]["ports"][1]["nodePort"] not in (None, node_port)


async def test_the_kubernetes_service_points_at_the_api_server(cluster, http) -> None:
    status, svc = await http.get("/api/v1/namespaces/default/services/kubernetes")
    assert status == 200
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": cluster.port}]
    status, endpoints = await http.get("/api/v1/namespaces/default/endpoints/kubernetes")
    assert status == 200
    assert endpoints["subsets"] == [{"addresses": [{"ip": "127.0.0.1"}],
                                     "ports": [{"name": "https", "port": cluster.port, "protocol": "TCP"}]}]


async def test_allocations_survive_a_restart_and_leaks_are_repaired(tmp_path: Path) -> None:
    s = settings(tmp_path)
    async with Cluster(s) as first:
        async with admin_session(first) as session:
            status, body = await call(session, "POST", SERVICES, service("web", type="NodePort"))
            assert status == 201
    ip, node_port = body["spec"]["clusterIP"], body["spec"]["ports"][0]["nodePort"]
    store = await Store.open(StoreSettings(path=s.db_path, synchronous="NORMAL"))
    try:  # what a crash between allocating and writing the Service leaves behind
        await store.create("/ranges/serviceips/10.96.9.9", {"metadata": {"name": "10.96.9.9"}, "spec": {
            "parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "never"}}})
        await store.delete(f"/ranges/servicenodeports/{node_port}")  # and a record lost
    finally:
        await store.close()
    async with Cluster(s) as second:
        async with admin_session(second) as session:
            status, body = await call(session, "POST", SERVICES, service("b", clusterIP=ip))
            assert status == 422 and body["message"].endswith("provided IP is already allocated")
            status, body = await call(session, "POST", SERVICES,
                                      service("c", type="NodePort", ports=[{"port": 80, "nodePort": node_port}]))
            assert status == 422 and body["message"].endswith("provided port is already allocated")
            status, body = await call(session, "POST", SERVICES, service("d", clusterIP="10.96.9.9"))
            assert status == 201, body
