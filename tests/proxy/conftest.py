"""A real cluster running only the proxy (its NAT chain on this machine's iptables, its DNS server on 127.0.0.1),
with a service range of its own so that its cluster IPs clash with no other cluster on the machine; the tests
play the endpoints controller (they write Endpoints) and run the endpoints themselves: small TCP and UDP servers
on loopback addresses (127.0.0.2, 127.0.0.3...)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from minik.client import Client
from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.proxy import NodeProxy, ProxySettings
from tests.proxy.helpers import Backends, DnsUpstream


def random_service_cidr() -> str:
    """A /24 of 10.128.0.0/9 (the usual 10.96.0.0/12 and the machine's own 10.255.x.x stay clear)."""
    return f"10.{random.randint(128, 250)}.{random.randint(0, 255)}.0/24"


@pytest.fixture
async def upstream() -> AsyncIterator[DnsUpstream]:
    """The node's resolver for the test: a real DNS server on 127.0.0.1 that knows one outside name."""
    server = DnsUpstream({"outside.example.": "192.0.2.80"})
    await server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def plain_http() -> bool:
    """Whether the cluster serves plain HTTP rather than HTTPS (a test may parametrize this)."""
    return False


@pytest.fixture
async def proxied(tmp_path: Path, upstream: DnsUpstream, plain_http: bool) -> AsyncIterator[Cluster]:
    node = f"proxy-test-{random.randrange(1 << 30):x}"
    settings = ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL", plain_http=plain_http,
                               disabled=frozenset(COMPONENTS) - {"proxy"}, service_cidr=random_service_cidr(),
                               node_name=node,
                               proxy=ProxySettings(node_name=node, dns_addresses=("127.0.0.1",),
                                                   dns_upstreams=(upstream.address,), resync_seconds=1.0))
    async with Cluster(settings) as cluster:
        await proxy_of(cluster).wait_ready(20)
        yield cluster


def proxy_of(cluster: Cluster) -> NodeProxy:
    proxy = cluster.components["proxy"]
    assert isinstance(proxy, NodeProxy)
    return proxy


@pytest.fixture
async def api(proxied: Cluster) -> AsyncIterator[Client]:
    async with proxied.admin_client() as client:
        yield client


@pytest.fixture
async def backends() -> AsyncIterator[Backends]:
    servers = Backends()
    try:
        yield servers
    finally:
        await servers.close()


def pytest_asyncio_loop_factories(config: pytest.Config,
                                  item: pytest.Item) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Every proxy test on asyncio's loop and on uvloop (which `minik up` runs on): their transports differ."""
    import uvloop

    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
