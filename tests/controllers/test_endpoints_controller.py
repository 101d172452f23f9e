"""The endpoints controller against a real API server: the test plays scheduler and kubelet (it writes pods'
nodeName, IPs and Ready conditions) and watches the Endpoints follow."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from minik.api.errors import StatusError
from minik.client import Client
from minik.cluster import Cluster
from minik.controllers.base import InformerFactory
from minik.controllers.endpoints import EndpointsController, endpoint_subsets

Obj = dict[str, Any]
NS = "default"


@pytest.fixture
async def api(cluster: Cluster) -> AsyncIterator[Client]:
    async with cluster.admin_client() as client:
        yield client


@pytest.fixture
async def controller(cluster: Cluster) -> AsyncIterator[EndpointsController]:
    assert cluster.api is not None
    async with cluster.in_process_client() as client:
        factory = InformerFactory(client)
        c = EndpointsController(client, factory)
        await factory.start()
        await c.start()
        try:
            yield c
        finally:
            await c.stop()
            await factory.stop()


def pod_body(name: str, labels: dict[str, str], ports: list[Obj] | None = None) -> Obj:
    container: Obj = {"name": "app", "image": "busybox:1.36"}
    if ports:
        container["ports"] = ports
    return {"metadata": {"name": name, "labels": labels}, "spec": {"containers": [container]}}


async def run_pod(api: Client, name: str, ip: str, *, ready: bool = True, labels: dict[str, str] | None = None,
                  ports: list[Obj] | None = None, node: str = "node-a") -> Obj:
    """Create a pod, bind it to ``node`` and report it running with ``ip`` (ready or not), as a kubelet would."""
    await api.create("pods", pod_body(name, labels or {"app": "web"}, ports), NS)
    await api.bind(name, node, NS)
    return await set_ready(api, name, ready, ip)


async def set_ready(api: Client, name: str, ready: bool, ip: str | None = None) -> Obj:
    pod = await api.get("pods", name, NS)
    status = pod.setdefault("status", {})
    status["phase"] = "Running"
    if ip:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"] + [
        {"type": "Ready", "status": "True" if ready else "False"}]
    return await api.update_status("pods", pod, NS)


async def eventually(api: Client, name: str, check: Callable[[Obj | None], bool], timeout: float = 5.0) -> Obj | None:
    """Poll the Endpoints named ``name`` until ``check`` holds (None: absent)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            endpoints: Obj | None = await api.get("endpoints", name, NS)
        except StatusError as exc:
            if exc.code != 404:
                raise
            endpoints = None
        if check(endpoints):
            return endpoints
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"endpoints {name} never got there; last seen: {endpoints}")
        await asyncio.sleep(0.02)


def ips(endpoints: Obj | None, field: str = "addresses") -> list[str]:
    return sorted(a["ip"] for s in (endpoints or {}).get("subsets") or [] for a in s.get(field) or [])


async def web_service(api: Client, **spec: Any) -> Obj:
    body = {"metadata": {"name": "web", "labels": {"tier": "front"}},
            "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
                     **spec}}
    return await api.create("services", body, NS)


async def test_ready_pods_are_addresses_and_the_others_not_ready_addresses(api, controller) -> None:
    await web_service(api)
    a = await run_pod(api, "a", "10.244.0.5")
    await run_pod(api, "b", "10.244.0.6", ready=False, node="node-b")
    await run_pod(api, "other", "10.244.0.7", labels={"app": "other"})
    endpoints = await eventually(api, "web", lambda e: ips(e) == ["10.244.0.5"] and
                                 ips(e, "notReadyAddresses") == ["10.244.0.6"])
    assert endpoints is not None
    assert endpoints["metadata"]["labels"] == {"tier": "front"}
    assert endpoints["subsets"] == [{
        "addresses": [{"ip": "10.244.0.5", "nodeName": "node-a", "targetRef": {
            "kind": "Pod", "namespace": NS, "name": "a", "uid": a["metadata"]["uid"]}}],
        "notReadyAddresses": [{"ip": "10.244.0.6", "nodeName": "node-b", "targetRef": {
            "kind": "Pod", "namespace": NS, "name": "b", "uid": endpoints["subsets"][0]["notReadyAddresses"][0][
                "targetRef"]["uid"]}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]


async def test_endpoints_follow_readiness_labels_and_deletion(api, controller) -> None:
    await web_service(api)
    await run_pod(api, "a", "10.244.0.5")
    await run_pod(api, "b", "10.244.0.6")
    await eventually(api, "web", lambda e: ips(e) == ["10.244.0.5", "10.244.0.6"])
    await set_ready(api, "a", False)
    await eventually(api, "web", lambda e: ips(e) == ["10.244.0.6"] and ips(e, "notReadyAddresses") == ["10.244.0.5"])
    await api.patch("pods", "b", {"metadata": {"labels": {"app": "elsewhere"}}}, NS)
    await eventually(api, "web", lambda e: ips(e) == [] and ips(e, "notReadyAddresses") == ["10.244.0.5"])
    await api.delete("pods", "a", NS, grace_period_seconds=0)
    endpoints = await eventually(api, "web", lambda e: e is not None and not e.get("subsets"))
    assert endpoints is not None


async def test_a_named_target_port_is_resolved_in_each_pod(api, controller) -> None:
    await api.create("services", {"metadata": {"name": "web"}, "spec": {
        "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "web"}]}}, NS)
    await run_pod(api, "old", "10.244.0.5", ports=[{"name": "web", "containerPort": 8080}])
    await run_pod(api, "new", "10.244.0.6", ports=[{"name": "web", "containerPort": 9090}])
    await run_pod(api, "unnamed", "10.244.0.7", ports=[{"name": "metrics", "containerPort": 9100}])
    endpoints = await eventually(api, "web", lambda e: len(ips(e)) == 2)
    assert endpoints is not None
    by_port = {s["ports"][0]["port"]: ips({"subsets": [s]}) for s in endpoints["subsets"]}
    assert by_port == {8080: ["10.244.0.5"], 9090: ["10.244.0.6"]}


async def test_deleting_the_service_deletes_its_endpoints(api, controller) -> None:
    await web_service(api)
    await run_pod(api, "a", "10.244.0.5")
    await eventually(api, "web", lambda e: ips(e) == ["10.244.0.5"])
    await api.delete("services", "web", NS)
    await eventually(api, "web", lambda e: e is None)


async def test_endpoints_deleted_by_hand_come_back(api, controller) -> None:
    await web_service(api)
    await run_pod(api, "a", "10.244.0.5")
    await eventually(api, "web", lambda e: ips(e) == ["10.244.0.5"])
    await api.delete("endpoints", "web", NS)
    await eventually(api, "web", lambda e: ips(e) == ["10.244.0.5"])


async def test_a_service_without_a_selector_keeps_the_endpoints_written_for_it(api, controller) -> None:
    await api.create("services", {"metadata": {"name": "manual"}, "spec": {"ports": [{"port": 80}]}}, NS)
    await api.create("endpoints", {"metadata": {"name": "manual"}, "subsets": [
        {"addresses": [{"ip": "192.0.2.10"}], "ports": [{"port": 80}]}]}, NS)
    await run_pod(api, "a", "10.244.0.5")
    await asyncio.sleep(0.2)
    assert ips(await api.get("endpoints", "manual", NS)) == ["192.0.2.10"]
    kubernetes = await api.get("endpoints", "kubernetes", NS)  # the API server's own, untouched
    assert ips(kubernetes) == ["127.0.0.1"]


def test_addresses_with_the_same_ports_share_a_subset_and_headless_services_need_no_ports() -> None:
    def pod(name: str, ip: str, ready: bool = True) -> Obj:
        return {"metadata": {"name": name, "namespace": NS, "uid": name},
                "spec": {"nodeName": "n", "hostname": name, "subdomain": "db", "containers": []},
                "status": {"podIP": ip, "phase": "Running",
                           "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}

    headless = {"metadata": {"name": "db"}, "spec": {"clusterIP": "None", "selector": {"app": "db"}}}
    subsets = endpoint_subsets(headless, [pod("db-1", "10.0.0.2"), pod("db-0", "10.0.0.1"),
                                          pod("db-2", "10.0.0.3", ready=False)])
    assert subsets == [{"addresses": [
        {"ip": "10.0.0.1", "hostname": "db-0", "nodeName": "n", "targetRef": {"kind": "Pod", "namespace": NS,
                                                                              "name": "db-0", "uid": "db-0"}},
        {"ip": "10.0.0.2", "hostname": "db-1", "nodeName": "n", "targetRef": {"kind": "Pod", "namespace": NS,
                                                                              "name": "db-1", "uid": "db-1"}}],
        "notReadyAddresses": [
        {"ip": "10.0.0.3", "hostname": "db-2", "nodeName": "n", "targetRef": {"kind": "Pod", "namespace": NS,
                                                                              "name": "db-2", "uid": "db-2"}}]}]
    publishing = {"metadata": {"name": "db"}, "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                                                       "ports": [{"port": 5432, "targetPort": 5432}]}}
    subsets = endpoint_subsets(publishing, [pod("db-0", "10.0.0.1"), pod("db-2", "10.0.0.3", ready=False)])
    assert [len(s["addresses"]) for s in subsets] == [2] and subsets[0]["ports"] == [{"port": 5432,
                                                                                     "protocol": "TCP"}]


async def test_the_controller_manager_runs_the_endpoints_controller(controlled: Cluster) -> None:
    assert "endpoints" in controlled.components["controllers"].controllers  # type: ignore[attr-defined]
    async with controlled.admin_client() as client:
        await web_service(client)
        await run_pod(client, "a", "10.244.0.5")
        await eventually(client, "web", lambda e: ips(e) == ["10.244.0.5"])
