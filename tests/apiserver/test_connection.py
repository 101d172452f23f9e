"""The API server's HTTP/1.1 connections, spoken to byte for byte: pipelining, Expect: 100-continue, HEAD,
keep-alive and close, the refusals that end a connection, and the hand-over of upgrades to aiohttp."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
import pytest

from minik.apiserver.codec import MAX_BODY_BYTES
from minik.apiserver.connection import HttpConnection
from minik.apiserver.limits import Limits
from minik.cluster import COMPONENTS, Cluster, ClusterSettings

CMS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """A cluster serving plain HTTP: these tests speak HTTP/1.1 byte for byte, and TLS would only stand between
    them and the bytes. Its requests are authenticated as over HTTPS (see ``head``)."""
    async with Cluster(ClusterSettings(data_dir=tmp_path / "c", port=0, plain_http=True, synchronous="NORMAL",
                                       disabled=frozenset(COMPONENTS))) as c:
        yield c


async def connect(cluster: Cluster) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", cluster.port)


def head(cluster: Cluster) -> str:
    """The header lines of a request to the API: a Host and the admin's token."""
    return f"Host: x\r\nAuthorization: Bearer {cluster.admin_token}\r\n"


async def read_answer(reader: asyncio.StreamReader, head_only: bool = False) -> tuple[int, dict[str, str], bytes]:
    """One answer with a Content-Length body: status, headers (lower-cased names), body."""
    status_line = await asyncio.wait_for(reader.readline(), 10)
    assert status_line.startswith(b"HTTP/1.1 "), status_line
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    body = b"" if head_only else await reader.readexactly(int(headers.get("content-length", "0")))
    return int(status_line.split()[1]), headers, body


def post(cluster: Cluster, name: str, labels: dict[str, str] | None = None) -> bytes:
    body = orjson.dumps({"metadata": {"name": name, "labels": labels or {}}, "data": {"k": name}})
    return (f"POST {CMS} HTTP/1.1\r\n{head(cluster)}Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"\r\n").encode() + body


async def closed(reader: asyncio.StreamReader) -> bool:
    return await asyncio.wait_for(reader.read(), 10) == b""


@contextmanager
def without_cyclic_collector() -> Iterator[None]:
    """Only reference counting frees objects meanwhile, as it nearly alone does in `minik up` (minik.collector)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


async def the_connection(cluster: Cluster) -> weakref.ref[HttpConnection]:
    """The server's protocol object of the one connection open to ``cluster``, once it has been made."""
    listener = cluster._listener
    assert listener is not None
    for _ in range(500):
        if listener.connections:
            (connection,) = listener.connections
            return weakref.ref(connection)
        await asyncio.sleep(0.01)
    raise AssertionError("the connection was not made")


async def freed(ref: weakref.ref[HttpConnection], seconds: float = 3.0) -> bool:
    for _ in range(int(seconds / 0.01)):
        if ref() is None:
            return True
        await asyncio.sleep(0.01)
    return False


async def test_pipelined_requests_are_answered_in_order_on_one_connection(cluster: Cluster) -> None:
    reader, writer = await connect(cluster)
    writer.write(post(cluster, "a") + f"GET {CMS}/a HTTP/1.1\r\n{head(cluster)}\r\n".encode() + post(cluster, "b")
                 + f"GET {CMS}/missing HTTP/1.1\r\n{head(cluster)}\r\n".encode())
    answers = [await read_answer(reader) for _ in range(4)]
    writer.close()
    assert [status for status, _, _ in answers] == [201, 200, 201, 404]
    assert [orjson.loads(body).get("data") for _, _, body in answers[:3]] == [{"k": "a"}, {"k": "a"}, {"k": "b"}]
    assert orjson.loads(answers[3][2])["reason"] == "NotFound"
    assert answers[0][1]["content-type"] == "application/json" and "date" in answers[0][1]


async def test_a_client_that_expects_100_continue_gets_it_before_sending_the_body(cluster: Cluster) -> None:
    reader, writer = await connect(cluster)
    body = orjson.dumps({"metadata": {"name": "continued"}})
    writer.write(f"POST {CMS} HTTP/1.1\r\n{head(cluster)}Content-Type: application/json\r\nExpect: 100-continue\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n".encode())
    assert await asyncio.wait_for(reader.readline(), 10) == b"HTTP/1.1 100 Continue\r\n"
    assert await reader.readline() == b"\r\n"
    writer.write(body)
    status, _, answer = await read_answer(reader)
    writer.close()
    assert status == 201 and orjson.loads(answer)["metadata"]["name"] == "continued"


async def test_head_gets_the_length_of_the_body_without_the_body(cluster: Cluster) -> None:
    reader, writer = await connect(cluster)
    writer.write(b"HEAD /version HTTP/1.1\r\nHost: x\r\n\r\nGET /version HTTP/1.1\r\nHost: x\r\n\r\n")
    status, headers, _ = await read_answer(reader, head_only=True)
    status2, headers2, body = await read_answer(reader)  # the next answer starts right after the head
    writer.close()
    assert (status, status2) == (200, 200)
    assert int(headers["content-length"]) == len(body) and orjson.loads(body)["minor"] == "32"


async def test_connection_close_and_http_1_0_end_the_connection_after_the_answer(cluster: Cluster) -> None:
    for request in (b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    b"GET /version HTTP/1.0\r\n\r\n"):
        reader, writer = await connect(cluster)
        writer.write(request)
        status, headers, _ = await read_answer(reader)
        assert status == 200 and headers["connection"] == "close"
        assert await closed(reader)
        writer.close()


async def test_a_body_declared_over_the_limit_gets_413_before_it_is_sent(cluster: Cluster) -> None:
    reader, writer = await connect(cluster)
    writer.write(f"POST {CMS} HTTP/1.1\r\n{head(cluster)}Content-Type: application/json\r\n"
                 f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode())
    status, headers, body = await read_answer(reader)
    writer.close()
    assert status == 413 and headers["connection"] == "close"
    assert orjson.loads(body)["reason"] == "RequestEntityTooLarge"


async def test_a_chunked_body_that_grows_over_the_limit_gets_413_and_nothing_is_stored(cluster: Cluster) -> None:
    reader, writer = await connect(cluster)
    writer.write(f"POST {CMS} HTTP/1.1\r\n{head(cluster)}Content-Type: application/json\r\n"
                 f"Transfer-Encoding: chunked\r\n\r\n".encode())
    piece = b"x" * (1024 * 1024)
    for _ in range(4):
        writer.write(b"%x\r\n%b\r\n" % (len(piece), piece))
    writer.write(b"0\r\n\r\n")
    status, _, body = await read_answer(reader)
    writer.close()
    assert status == 413 and orjson.loads(body)["reason"] == "RequestEntityTooLarge"
    reader, writer = await connect(cluster)
    writer.write(f"GET {CMS} HTTP/1.1\r\n{head(cluster)}\r\n".encode())
    status, _, body = await read_answer(reader)
    writer.close()
    assert status == 200 and orjson.loads(body)["items"] == []


@pytest.mark.parametrize("request_bytes", [
    b"NOT A REQUEST\r\n\r\n",
    b"GET /version HTTP/1.1\r\nHost: x\r\nContent-Length: twelve\r\n\r\n",
    b"GET /version HTTP/1.1\r\nBad Header Line\r\n\r\n",
], ids=["request line", "content length", "header line"])
async def test_a_request_the_parser_refuses_gets_400_and_the_connection_closes(cluster: Cluster,
                                                                              request_bytes: bytes) -> None:
    reader, writer = await connect(cluster)
    writer.write(request_bytes)
    status, headers, body = await read_answer(reader)
    assert status == 400 and headers["connection"] == "close" and orjson.loads(body)["reason"] == "BadRequest"
    assert await closed(reader)
    writer.close()


async def test_a_url_or_headers_over_their_limits_get_414_and_431(cluster: Cluster) -> None:
    reader, writer = await connect(cluster)
    writer.write(b"GET /version?" + b"a" * (65 * 1024) + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (await read_answer(reader))[0] == 414
    writer.close()
    reader, writer = await connect(cluster)
    writer.write(b"GET /version HTTP/1.1\r\n" + b"X-Filler: " + b"y" * (1024 * 1024 + 1) + b"\r\n\r\n")
    assert (await read_answer(reader))[0] == 431
    writer.close()


async def test_percent_encoded_paths_and_queries_are_decoded(cluster: Cluster) -> None:
    reader, writer = await connect(cluster)
    writer.write(post(cluster, "labelled", {"app": "web"}) + post(cluster, "other", {"app": "db"}))
    assert (await read_answer(reader))[0] == 201
    assert (await read_answer(reader))[0] == 201
    writer.write(f"GET /api/v1/namespaces/%64efault/configmaps?labelSelector=app%3Dweb%2Capp+in+%28web%29"
                 f" HTTP/1.1\r\n{head(cluster)}\r\n".encode())
    status, _, body = await read_answer(reader)
    writer.close()
    assert status == 200 and [i["metadata"]["name"] for i in orjson.loads(body)["items"]] == ["labelled"]


async def test_an_upgrade_is_handed_to_aiohttp_on_the_same_connection(cluster: Cluster) -> None:
    reader, writer = await connect(cluster)
    writer.write(f"GET /api/v1/namespaces/default/pods/nowhere/exec?command=ls&stdout=1 HTTP/1.1\r\n{head(cluster)}"
                 "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n"
                 .encode())
    status, headers, body = await read_answer(reader)
    writer.close()
    assert status == 404 and orjson.loads(body)["reason"] == "NotFound"
    assert "aiohttp" in headers.get("server", "")  # answered by the handler it was handed to


async def test_a_closed_connection_is_freed_by_reference_counting_alone(cluster: Cluster) -> None:
    """A closed connection that only the cyclic collector could free stays (with its TLS state, some 40 KB) until
    a collection that `minik up` makes rare, or for good once frozen: 12,000 bare handshakes took 650 MB."""
    with without_cyclic_collector():
        reader, writer = await connect(cluster)
        connection = await the_connection(cluster)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, _ = await read_answer(reader)
        writer.close()
        assert status == 200
        assert await freed(connection), "the closed connection is still alive"


async def test_a_connection_handed_to_aiohttp_leaves_no_protocol_of_ours_behind(cluster: Cluster) -> None:
    with without_cyclic_collector():
        reader, writer = await connect(cluster)
        connection = await the_connection(cluster)
        writer.write(f"GET /api/v1/namespaces/default/pods/nowhere/exec?command=ls&stdout=1 HTTP/1.1\r\n"
                     f"{head(cluster)}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode())
        status, _, _ = await read_answer(reader)
        assert status == 404
        assert await freed(connection), "the handed-over connection's first protocol is still alive"
        writer.close()


async def test_a_watch_is_streamed_in_chunks_and_ends_with_its_timeout(cluster: Cluster) -> None:
    reader, writer = await connect(cluster)
    writer.write(post(cluster, "before"))
    _, _, body = await read_answer(reader)
    version = orjson.loads(body)["metadata"]["resourceVersion"]
    writer.write(f"GET {CMS}?watch=1&resourceVersion=1&timeoutSeconds=1 HTTP/1.1\r\n{head(cluster)}\r\n".encode())
    assert (await asyncio.wait_for(reader.readline(), 10)).startswith(b"HTTP/1.1 200 ")
    headers = {}
    while (line := await reader.readline()) != b"\r\n":
        name, _, value = line.decode().partition(":")
        headers[name.lower()] = value.strip()
    assert headers["transfer-encoding"] == "chunked"
    events = []
    while (size := int((await asyncio.wait_for(reader.readline(), 10)).strip(), 16)) != 0:
        chunk = await reader.readexactly(size + 2)
        events += [orjson.loads(line) for line in chunk[:-2].splitlines()]
    assert await reader.readline() == b"\r\n"  # the end of the chunked body, after the timeout
    assert [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in events] == [("ADDED", version)]
    writer.write(f"GET {CMS}/before HTTP/1.1\r\n{head(cluster)}\r\n".encode())  # and the connection is reused
    assert (await read_answer(reader))[0] == 200
    writer.close()


async def test_a_refused_request_behind_a_pipelined_one_is_answered_after_it(cluster: Cluster) -> None:
    reader, writer = await connect(cluster)
    writer.write(post(cluster, "first") + b"NOT A REQUEST\r\n\r\n")
    first = await read_answer(reader)
    second = await read_answer(reader)
    assert (first[0], second[0]) == (201, 400)
    assert await closed(reader)
    writer.close()


async def test_a_write_whose_client_hangs_up_still_completes(cluster: Cluster) -> None:
    reader, writer = await connect(cluster)
    writer.write(post(cluster, "orphan"))
    writer.close()
    reader, writer = await connect(cluster)
    async with asyncio.timeout(10):
        while True:
            writer.write(f"GET {CMS}/orphan HTTP/1.1\r\n{head(cluster)}\r\n".encode())
            status, _, body = await read_answer(reader)
            if status == 200:
                break
            await asyncio.sleep(0.05)
    writer.close()
    assert orjson.loads(body)["data"] == {"k": "orphan"}


async def test_a_hundred_pipelined_requests_are_all_answered_in_order(cluster: Cluster) -> None:
    reader, writer = await connect(cluster)  # more than the connection reads ahead: it pauses and resumes reading
    writer.write(b"".join(f"GET {CMS}/n{i} HTTP/1.1\r\n{head(cluster)}\r\n".encode() for i in range(100)))
    answers = [await read_answer(reader) for _ in range(100)]
    writer.close()
    assert [orjson.loads(body)["details"]["name"] for _, _, body in answers] == [f"n{i}" for i in range(100)]


async def test_a_body_arriving_slowly_is_held_to_the_body_limit_not_the_idle_one(tmp_path: Path) -> None:
    c = Cluster(ClusterSettings(data_dir=tmp_path / "c", port=0, plain_http=True, synchronous="NORMAL",
                                disabled=frozenset(COMPONENTS),
                                limits=Limits(idle_timeout_seconds=0.3, body_timeout_seconds=5)))
    await c.start()
    try:
        reader, writer = await connect(c)
        body = orjson.dumps({"metadata": {"name": "slow"}})
        writer.write(f"POST {CMS} HTTP/1.1\r\n{head(c)}Content-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:5])
        await asyncio.sleep(1.0)  # past the idle limit, within the body's
        writer.write(body[5:])
        status, _, _ = await read_answer(reader)
        writer.close()
        assert status == 201
    finally:
        await c.stop()
