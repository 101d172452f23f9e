"""Limits: objects over the store's 1.5 MiB are refused and nothing is stored, absurd query parameters are bounded
or refused, lanes of concurrent requests answer 429 with Retry-After past their size (heartbeats keep their own
lane, watches and admins are exempt) and the server recovers, and slow or silent connections are closed."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
import pytest

from minik.apiserver.auth.credentials import mint
from minik.apiserver.limits import Limits
from minik.apiserver.request import User
from minik.cluster import COMPONENTS, Cluster, ClusterSettings

if TYPE_CHECKING:
    from conftest import ApiHttp

PODS = "/api/v1/namespaces/default/pods"


async def test_an_object_over_one_and_a_half_mib_is_refused_and_not_stored(cluster: Cluster, http: ApiHttp) -> None:
    assert cluster.store is not None
    args = ["x" * 1000] * 1700  # 1.7 MB: under the 3 MiB body limit, over the store's 1.5 MiB
    pod = {"metadata": {"name": "big"}, "spec": {"containers": [{"name": "c", "image": "i", "args": args}]}}
    before = cluster.store.revision
    status, body = await http.post(PODS, pod)
    assert (status, body["reason"]) == (413, "RequestEntityTooLarge")
    assert "over the store's limit of 1572864 bytes" in body["message"]
    assert cluster.store.revision == before
    assert (await http.get(PODS + "/big"))[0] == 404
    pod["spec"]["containers"][0]["args"] = args[:100]
    status, _ = await http.post(PODS, pod)
    assert status == 201
    status, body = await http.patch(PODS + "/big", {"spec": {"containers": [{"name": "c", "args": args}]}},
                                    "application/strategic-merge-patch+json")
    assert status in (413, 422)  # too large, or refused earlier as an invalid pod update
    assert (await http.get(PODS + "/big"))[1]["spec"]["containers"][0]["args"] == args[:100]


async def test_absurd_query_parameters_are_bounded_or_refused(http: ApiHttp) -> None:
    status, body = await http.get(PODS, limit=str(2 ** 63 - 1))
    assert status == 200 and body["kind"] == "PodList"
    for name, value in (("limit", "9" * 5000), ("limit", str(10 ** 30)), ("limit", "-1"), ("timeoutSeconds", "1e9"),
                        ("limit", "0x10"), ("timeoutSeconds", str(2 ** 63))):
        status, body = await http.get(PODS, **{name: value})
        assert (status, body["reason"]) == (400, "BadRequest"), (name, value)
    async with http.session.get(PODS, params={"watch": "1", "timeoutSeconds": str(2 ** 63 - 1)}) as response:
        assert response.status == 200  # bounded to a day, not an overflow


@pytest.fixture
async def small(tmp_path: Path) -> AsyncIterator[Cluster]:
    """A cluster (HTTPS, authenticated, as `minik up` serves) with tiny lanes and short connection timeouts."""
    c = Cluster(ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="FULL", disabled=frozenset(COMPONENTS),
                                limits=Limits(max_reads=2, max_writes=2, max_node_heartbeats=50,
                                              idle_timeout_seconds=0.5, body_timeout_seconds=0.5,
                                              lingering_seconds=0.5)))
    await c.start()
    try:
        yield c
    finally:
        await c.stop()


async def test_an_overload_gets_429_with_retry_after_and_the_server_recovers(small: Cluster) -> None:
    await small.in_process_client().create("clusterrolebindings.rbac.authorization.k8s.io", {
        "metadata": {"name": "writer"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                    "name": "edit"}, "subjects": [{"kind": "User", "name": "writer"}]})
    writer = mint(small.tokens, User("writer"))  # not exempt, as an admin would be
    node = mint(small.tokens, User("system:node:n1", ("system:nodes",)))
    headers = {"Authorization": f"Bearer {writer}"}
    connector = aiohttp.TCPConnector(limit=0, ssl=tls(small))
    async with aiohttp.ClientSession(base_url=small.url, connector=connector) as session:
        async with session.post("/api/v1/nodes", json={"metadata": {"name": "n1"}},
                                headers={"Authorization": f"Bearer {node}"}) as response:
            assert response.status == 201

        async def write(i: int) -> tuple[int, dict, str | None]:
            async with session.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": f"c{i}"}},
                                    headers=headers) as response:
                return response.status, await response.json(), response.headers.get("Retry-After")

        async def heartbeat(i: int) -> int:
            async with session.patch("/api/v1/nodes/n1/status", json={"status": {"conditions": [
                    {"type": "Ready", "status": "True", "message": str(i)}]}},
                    headers={"Authorization": f"Bearer {node}",
                             "Content-Type": "application/merge-patch+json"}) as response:
                return response.status

        results = await asyncio.gather(*(write(i) for i in range(60)), *(heartbeat(i) for i in range(10)))
        writes, beats = results[:60], results[60:]
        refused = [r for r in writes if r[0] == 429]  # type: ignore[index]
        assert refused, "no write was refused with 2 write slots and 60 concurrent writes"
        status, body, retry_after = refused[0]  # type: ignore[misc]
        assert (body["reason"], body["message"], body["details"], retry_after) == (
            "TooManyRequests", "Too many requests, please try again later.", {"retryAfterSeconds": 1}, "1")
        assert {r[0] for r in writes} <= {201, 429}  # type: ignore[index]
        assert beats == [200] * 10  # heartbeats have their own lane
        assert small.api is not None and small.api.lanes.in_flight == {"read": 0, "write": 0, "node": 0}
        status, _, _ = await write(1000)
        assert status == 201  # recovered
        async with session.get("/api/v1/namespaces/default/configmaps", params={"watch": "1", "timeoutSeconds": "1"},
                               headers=headers) as watching:
            assert watching.status == 200  # watches are exempt


def tls(cluster: Cluster) -> ssl.SSLContext:
    assert cluster.credentials is not None
    return ssl.create_default_context(cadata=cluster.credentials.ca.cert_pem.decode())


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes:
    deadline = time.monotonic() + seconds
    received = b""
    while time.monotonic() < deadline:
        chunk = await asyncio.wait_for(reader.read(4096), max(deadline - time.monotonic(), 0.01))
        if not chunk:
            return received
        received += chunk
    raise AssertionError("the connection was not closed")


async def test_silent_slow_header_and_slow_body_connections_are_closed(small: Cluster) -> None:
    silent_reader, silent = await asyncio.open_connection("127.0.0.1", small.port, ssl=tls(small))
    slow_reader, slow = await asyncio.open_connection("127.0.0.1", small.port, ssl=tls(small))
    slow.write(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n")  # and never the end of the headers
    body_reader, body = await asyncio.open_connection("127.0.0.1", small.port, ssl=tls(small))
    body.write(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
               b"\r\nContent-Length: 100\r\n\r\n{\"metadata\":")
    try:
        assert await _closed_within(silent_reader, 20) == b""
        assert await _closed_within(slow_reader, 20) == b""
        answer = await _closed_within(body_reader, 20)
        assert answer.startswith(b"HTTP/1.1 408 ")
    finally:
        for writer in (silent, slow, body):
            writer.close()
    async with aiohttp.ClientSession(base_url=small.url) as session:
        async with session.get("/readyz", ssl=tls(small)) as response:
            assert response.status == 200
