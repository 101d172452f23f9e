"""A StatefulSet's stable network identity through the whole cluster: the controller gives each pod hostname
NAME-i and subdomain serviceName, the endpoints controller publishes them on the headless Service's Endpoints,
and the node's cluster DNS answers NAME-i.SERVICE.NS.svc.cluster.local with that pod's IP (simulated nodes, no
Docker)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.client import Client
from minik.cluster import Cluster, ClusterSettings
from minik.proxy import ProxySettings
from minik.testing.nodes import SimulatedNodes
from tests.proxy.conftest import proxy_of, random_service_cidr
from tests.proxy.helpers import DnsUpstream, eventually, query, service
from tests.proxy.test_dns import answers, dns_of

STATEFULSET = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
               "spec": {"replicas": 2, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}}


@pytest.fixture
async def whole(tmp_path: Path, upstream: DnsUpstream) -> AsyncIterator[tuple[Cluster, Client]]:
    """The API server, scheduler, controllers and proxy (with its DNS server), and one simulated node."""
    node = f"sts-dns-{random.randrange(1 << 30):x}"
    settings = ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                               disabled=frozenset({"node"}), service_cidr=random_service_cidr(), node_name=node,
                               proxy=ProxySettings(node_name=node, dns_addresses=("127.0.0.1",),
                                                   dns_upstreams=(upstream.address,), resync_seconds=1.0))
    async with Cluster(settings) as cluster:
        await proxy_of(cluster).wait_ready(20)
        assert cluster.client is not None
        nodes = SimulatedNodes(cluster.client)
        try:
            await nodes.add("node-0")
            async with cluster.admin_client() as api:
                yield cluster, api
        finally:
            await nodes.close()


async def test_each_statefulset_pod_resolves_by_name_under_its_headless_service(
        whole: tuple[Cluster, Client]) -> None:
    cluster, api = whole
    await api.create("services", service("web", clusterIP="None", selector={"app": "web"},
                                         ports=[{"name": "http", "port": 80}]), "default")
    await api.create("statefulsets", STATEFULSET, "default")
    server = dns_of(cluster)

    async def resolved() -> dict[str, list[str]]:
        found = {f"web-{i}": answers(await query(server, f"web-{i}.web.default.svc.cluster.local"))
                 for i in range(2)}
        return found if all(found.values()) else {}
    found = await eventually(resolved, timeout=30, what="both pods in the DNS")
    ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in (await api.list("pods", "default"))["items"]}
    assert found == {"web-0": [ips["web-0"]], "web-1": [ips["web-1"]]}
    assert answers(await query(server, "web.default.svc.cluster.local")) == sorted(ips.values())
