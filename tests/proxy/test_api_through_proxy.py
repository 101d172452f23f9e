"""The API as pods reach it: the `kubernetes` Service's cluster IP, forwarded by the node proxy to the API server on
127.0.0.1. The proxy connects from loopback, and that counts for nothing: a request without a token gets 401 there
as anywhere, over plain HTTP as over HTTPS. (A cluster that trusted loopback would make every pod an admin.)"""

from __future__ import annotations

import aiohttp
import pytest

from minik.client import Client
from minik.cluster import Cluster
from minik.proxy.servicemap import PortKey
from tests.access import admin_headers
from tests.proxy.conftest import proxy_of
from tests.proxy.helpers import eventually


async def kubernetes_service_url(cluster: Cluster, api: Client) -> str:
    """The API's URL at the `kubernetes` Service's cluster IP, once the proxy forwards it."""
    proxy = proxy_of(cluster)
    assert proxy.chain is not None, proxy.iptables_problem
    cluster_ip = (await api.get("services", "kubernetes", "default"))["spec"]["clusterIP"]

    async def forwarded() -> bool:
        forwarder = proxy.proxier.forwarders.get(PortKey("default", "kubernetes", "https", "TCP"))
        return forwarder is not None and forwarder.listening and \
            any(r.ip == cluster_ip for r in proxy.chain.applied or ())  # type: ignore[union-attr]
    await eventually(forwarded, what="the kubernetes Service forwarded")
    return f"{'http' if cluster.settings.plain_http else 'https'}://{cluster_ip}:443"


@pytest.mark.parametrize("plain_http", [True, False], ids=["plain-http", "https"])
async def test_a_request_through_the_proxy_to_the_kubernetes_service_without_a_token_is_401(
        proxied: Cluster, api: Client) -> None:
    url = await kubernetes_service_url(proxied, api) + "/api/v1/pods"
    connector = aiohttp.TCPConnector(ssl=proxied.client_ssl_context() or True)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(url) as response:
            body = await response.json()
            assert (response.status, body.get("reason")) == (401, "Unauthorized")
        async with session.get(url, headers=admin_headers(proxied)) as response:
            assert response.status == 200  # the same way with the admin's token: the 401 is the API's answer
