"""Round robin and ClientIP affinity (pure), and what the proxy reads from Services and Endpoints."""

from __future__ import annotations

from minik.proxy.balancer import RoundRobin
from minik.proxy.servicemap import Endpoint, PortKey, ServicePort, ready_endpoints, service_ports
from minik.testing.clock import FakeClock

A, B, C = Endpoint("10.0.0.1", 80), Endpoint("10.0.0.2", 80), Endpoint("10.0.0.3", 80)


def first(balancer: RoundRobin, client: str = "192.0.2.1") -> Endpoint | None:
    return next(balancer.candidates(client), None)


def test_connections_take_the_endpoints_in_turn_and_the_turn_survives_a_change() -> None:
    balancer = RoundRobin()
    assert first(balancer) is None and not balancer
    balancer.update([A, B, C])
    assert [first(balancer) for _ in range(6)] == [A, B, C, A, B, C]
    first(balancer)  # A
    assert balancer.update([A, C]) and not balancer.update([A, C])
    assert [first(balancer) for _ in range(4)] == [C, A, C, A]


def test_a_failed_endpoint_is_followed_by_the_others_in_turn() -> None:
    balancer = RoundRobin()
    balancer.update([A, B, C])
    first(balancer)
    assert list(balancer.candidates("192.0.2.1")) == [B, C, A]


def test_client_ip_affinity_sticks_until_idle_for_the_timeout_or_the_endpoint_goes() -> None:
    clock = FakeClock(100.0)
    balancer = RoundRobin(affinity_seconds=60, clock=clock)
    balancer.update([A, B, C])
    assert [first(balancer, "192.0.2.1") for _ in range(3)] == [A, A, A]
    assert first(balancer, "192.0.2.2") == B  # another client takes the next turn
    clock.step(59)
    assert first(balancer, "192.0.2.1") == A  # used again: the idle time starts over
    clock.step(61)
    assert first(balancer, "192.0.2.1") == C
    balancer.update([A, B])
    assert first(balancer, "192.0.2.1") != C


def test_a_failover_moves_the_client_to_the_endpoint_that_answered() -> None:
    balancer = RoundRobin(affinity_seconds=60, clock=FakeClock(100.0))
    balancer.update([A, B])
    assert first(balancer, "192.0.2.1") == A
    balancer.failed("192.0.2.1", A)
    balancer.chosen("192.0.2.1", B)
    assert first(balancer, "192.0.2.1") == B


def test_service_ports_cover_cluster_ip_and_node_port_services_only() -> None:
    web = {"metadata": {"name": "web", "namespace": "shop"},
           "spec": {"type": "NodePort", "clusterIP": "10.96.0.5", "sessionAffinity": "ClientIP",
                    "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 30}},
                    "ports": [{"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080},
                              {"name": "dns", "port": 53, "protocol": "UDP", "nodePort": 30053},
                              {"name": "sctp", "port": 9, "protocol": "SCTP"}]}}
    assert service_ports(web) == [
        ServicePort(PortKey("shop", "web", "http", "TCP"), "10.96.0.5", 80, 30080, 30.0),
        ServicePort(PortKey("shop", "web", "dns", "UDP"), "10.96.0.5", 53, 30053, 30.0)]
    headless = {"metadata": {"name": "db", "namespace": "shop"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}}
    external = {"metadata": {"name": "x", "namespace": "shop"}, "spec": {"type": "ExternalName", "externalName": "a"}}
    assert service_ports(headless) == service_ports(external) == []


def test_ready_endpoints_take_each_subsets_number_for_the_named_port() -> None:
    endpoints = {"subsets": [
        {"addresses": [{"ip": "10.0.0.2"}, {"ip": "10.0.0.1"}], "notReadyAddresses": [{"ip": "10.0.0.9"}],
         "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]},
        {"addresses": [{"ip": "10.0.0.3"}], "ports": [{"name": "http", "port": 9090, "protocol": "TCP"},
                                                      {"name": "dns", "port": 53, "protocol": "UDP"}]}]}
    assert ready_endpoints(endpoints, PortKey("shop", "web", "http", "TCP")) == [
        Endpoint("10.0.0.1", 8080), Endpoint("10.0.0.2", 8080), Endpoint("10.0.0.3", 9090)]
    assert ready_endpoints(endpoints, PortKey("shop", "web", "dns", "UDP")) == [Endpoint("10.0.0.3", 53)]
    assert ready_endpoints(None, PortKey("shop", "web", "http", "TCP")) == []
