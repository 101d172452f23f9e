"""Service environment variables, as the kubelet gives them to containers."""

from __future__ import annotations

from typing import Any

import pytest

from minik.api.serviceenv import env_name, from_service, service_env


def svc(name: str, ip: str | None, *ports: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": list(ports)}
    if ip is not None:
        spec["clusterIP"] = ip
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


@pytest.mark.parametrize(("name", "expected"), [
    ("db", "DB"), ("redis-primary", "REDIS_PRIMARY"), ("a-b-c9", "A_B_C9"), ("web", "WEB"),
])
def test_names_are_upper_cased_with_dashes_as_underscores(name: str, expected: str) -> None:
    assert env_name(name) == expected


@pytest.mark.parametrize(("service", "expected"), [
    (svc("db", "10.96.0.11", {"port": 5432, "protocol": "TCP"}), [
        ("DB_SERVICE_HOST", "10.96.0.11"), ("DB_SERVICE_PORT", "5432"),
        ("DB_PORT", "tcp://10.96.0.11:5432"), ("DB_PORT_5432_TCP", "tcp://10.96.0.11:5432"),
        ("DB_PORT_5432_TCP_PROTO", "tcp"), ("DB_PORT_5432_TCP_PORT", "5432"), ("DB_PORT_5432_TCP_ADDR", "10.96.0.11"),
    ]),
    (svc("redis-primary", "10.96.0.12", {"name": "redis", "port": 6379}, {"name": "metrics-udp", "port": 9121,
                                                                          "protocol": "UDP"}), [
        ("REDIS_PRIMARY_SERVICE_HOST", "10.96.0.12"), ("REDIS_PRIMARY_SERVICE_PORT", "6379"),
        ("REDIS_PRIMARY_SERVICE_PORT_REDIS", "6379"), ("REDIS_PRIMARY_SERVICE_PORT_METRICS_UDP", "9121"),
        ("REDIS_PRIMARY_PORT", "tcp://10.96.0.12:6379"),
        ("REDIS_PRIMARY_PORT_6379_TCP", "tcp://10.96.0.12:6379"), ("REDIS_PRIMARY_PORT_6379_TCP_PROTO", "tcp"),
        ("REDIS_PRIMARY_PORT_6379_TCP_PORT", "6379"), ("REDIS_PRIMARY_PORT_6379_TCP_ADDR", "10.96.0.12"),
        ("REDIS_PRIMARY_PORT_9121_UDP", "udp://10.96.0.12:9121"), ("REDIS_PRIMARY_PORT_9121_UDP_PROTO", "udp"),
        ("REDIS_PRIMARY_PORT_9121_UDP_PORT", "9121"), ("REDIS_PRIMARY_PORT_9121_UDP_ADDR", "10.96.0.12"),
    ]),
    (svc("v6", "fd00::10", {"port": 80}), [
        ("V6_SERVICE_HOST", "fd00::10"), ("V6_SERVICE_PORT", "80"), ("V6_PORT", "tcp://[fd00::10]:80"),
        ("V6_PORT_80_TCP", "tcp://[fd00::10]:80"), ("V6_PORT_80_TCP_PROTO", "tcp"), ("V6_PORT_80_TCP_PORT", "80"),
        ("V6_PORT_80_TCP_ADDR", "fd00::10"),
    ]),
    (svc("headless", "None", {"port": 80}), []),
    (svc("pending", None, {"port": 80}), []),
    (svc("external", "", {"port": 80}), []),
])
def test_a_service_gives_kubernetes_variables(service: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert from_service(service) == expected


def test_a_pod_sees_the_services_of_its_namespace_and_the_kubernetes_service() -> None:
    services = [svc("kubernetes", "10.96.0.1", {"name": "https", "port": 443}),
                svc("web", "10.96.0.20", {"port": 80}, namespace="shop"),
                svc("db", "10.96.0.21", {"port": 5432}, namespace="other")]
    env = service_env(services, "shop")
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1" and env["KUBERNETES_SERVICE_PORT_HTTPS"] == "443"
    assert env["WEB_SERVICE_HOST"] == "10.96.0.20"
    assert not any(name.startswith("DB_") for name in env)


def test_without_service_links_only_the_kubernetes_service_is_given() -> None:
    services = [svc("web", "10.96.0.20", {"port": 80}, namespace="shop"),
                svc("kubernetes", "10.96.0.1", {"name": "https", "port": 443})]
    assert set(service_env(services, "shop", enable_service_links=False)) == {
        "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_SERVICE_PORT_HTTPS", "KUBERNETES_PORT",
        "KUBERNETES_PORT_443_TCP", "KUBERNETES_PORT_443_TCP_PROTO", "KUBERNETES_PORT_443_TCP_PORT",
        "KUBERNETES_PORT_443_TCP_ADDR"}


@pytest.mark.parametrize("order", [1, -1])
def test_a_kubernetes_service_in_the_pods_namespace_wins_over_the_default_one(order: int) -> None:
    services = [svc("kubernetes", "10.96.0.1", {"port": 443}), svc("kubernetes", "10.96.0.99", {"port": 8443},
                                                                   namespace="shop")][::order]
    env = service_env(services, "shop")
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.99" and env["KUBERNETES_SERVICE_PORT"] == "8443"
