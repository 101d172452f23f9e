"""The front end: HTTP worker processes in front of the API server answer exactly as the API server does, hand
back connections when they die, stop in order, and die with the API server."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import orjson
import pytest
from aiohttp import web

from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.apiserver.frontend.relay import WebSocketRelay, wants_websocket
from minik.apiserver.frontend.wire import Frame, FrameChannel, pack_head, unpack_head, unpack_shared_chunk
from minik.store import Store, StoreSettings

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
async def fronted(tmp_path: Path) -> AsyncIterator[Cluster]:
    """A cluster whose HTTP is served by one worker process."""
    cluster = Cluster(ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL", api_workers=1,
                                      disabled=frozenset(COMPONENTS)))
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


async def until(condition: object, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():  # type: ignore[operator]
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


def process_gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def test_a_worker_takes_the_connections_and_answers_as_the_api_server_does(fronted: Cluster) -> None:
    assert fronted.frontend is not None
    assert not fronted.frontend.accepting_itself
    assert len(fronted.frontend.worker_pids) == 1
    async with aiohttp.ClientSession(base_url=fronted.url) as session:
        async with session.post(CONFIGMAPS, json={"metadata": {"name": "a", "labels": {"app": "x"}},
                                                  "data": {"k": "v"}}) as response:
            assert response.status == 201
            created = await response.json()
        async with session.get(CONFIGMAPS + "/a") as response:
            assert response.status == 200
            assert (await response.json())["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        async with session.get(CONFIGMAPS, params={"labelSelector": "app=x"}) as response:
            assert [i["metadata"]["name"] for i in (await response.json())["items"]] == ["a"]
        async with session.post(CONFIGMAPS, json={"metadata": {"name": "a"}}) as response:
            assert response.status == 409
            assert (await response.json())["reason"] == "AlreadyExists"
        async with session.post(CONFIGMAPS, data=b"{not json", headers={"Content-Type": "application/json"}
                                ) as response:
            assert response.status == 400
        async with session.post(CONFIGMAPS, json={"metadata": {"name": "b"}, "bogus": 1}) as response:
            assert response.status == 201
            assert response.headers["Warning"] == '299 - "unknown field \\"bogus\\""'
        async with session.post(CONFIGMAPS, data=b"x" * (3 * 1024 * 1024 + 1),
                                headers={"Content-Type": "application/json"}) as response:
            assert response.status == 413
        async with session.get("/readyz") as response:
            assert await response.text() == "ok"


async def test_a_watch_through_a_worker_streams_events_and_ends_when_its_client_leaves(fronted: Cluster) -> None:
    assert fronted.store is not None
    async with aiohttp.ClientSession(base_url=fronted.url) as session:
        async with session.get(CONFIGMAPS, params={"watch": "true"}) as watch:
            assert watch.headers["Content-Type"] == "application/json"
            for i in range(3):
                async with session.post(CONFIGMAPS, json={"metadata": {"name": f"w{i}"}}) as response:
                    assert response.status == 201
            events = [orjson.loads(await watch.content.readline()) for _ in range(3)]
            assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
                ("ADDED", "w0"), ("ADDED", "w1"), ("ADDED", "w2")]
            assert fronted.store.watcher_count == 1
    await until(lambda: fronted.store.watcher_count == 0)  # type: ignore[union-attr]


async def test_the_api_server_takes_connections_back_while_a_dead_worker_is_restarted(fronted: Cluster) -> None:
    assert fronted.frontend is not None
    (pid,) = fronted.frontend.worker_pids
    os.kill(pid, signal.SIGKILL)
    await until(lambda: fronted.frontend.accepting_itself)  # type: ignore[union-attr]
    async with aiohttp.ClientSession(base_url=fronted.url) as session:
        async with session.post(CONFIGMAPS, json={"metadata": {"name": "meanwhile"}}) as response:
            assert response.status == 201
    await until(lambda: fronted.frontend.worker_pids and fronted.frontend.worker_pids != [pid])  # type: ignore
    assert not fronted.frontend.accepting_itself
    async with aiohttp.ClientSession(base_url=fronted.url) as session:
        async with session.get(CONFIGMAPS + "/meanwhile") as response:
            assert response.status == 200


async def test_stopping_ends_watches_finishes_requests_keeps_writes_and_stops_the_worker(tmp_path: Path) -> None:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="FULL", api_workers=1,
                               disabled=frozenset(COMPONENTS))
    cluster = Cluster(settings)
    await cluster.start()
    assert cluster.frontend is not None
    (pid,) = cluster.frontend.worker_pids
    url, created = cluster.url, []
    async with aiohttp.ClientSession(base_url=url) as session:
        async def watch() -> list[bytes]:
            async with session.get(CONFIGMAPS, params={"watch": "true"}) as response:
                return [line async for line in response.content]

        watching = asyncio.create_task(watch())
        for i in range(10):
            async with session.post(CONFIGMAPS, json={"metadata": {"name": f"cm{i}"}}) as response:
                assert response.status == 201
                created.append(f"cm{i}")
        await cluster.stop()
        assert len(await asyncio.wait_for(watching, 10)) == 10  # the watch ended cleanly
        with pytest.raises(aiohttp.ClientConnectionError):
            async with session.get("/healthz"):
                pass
    assert process_gone(pid)
    store = await Store.open(StoreSettings(path=settings.db_path))
    try:
        listed = await store.list("/core/configmaps/")
        assert sorted(r.key.rsplit("/", 1)[1] for r in listed.items) == sorted(created)
    finally:
        await store.close()


async def test_a_worker_dies_with_its_api_server_on_kill_9(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "minik", "up", "--data-dir", str(tmp_path / "d"), "--port", "0", "--sync", "NORMAL",
        "--api-workers", "1", "--disable", ",".join(COMPONENTS), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    assert process.stdout is not None
    try:
        while not re.search(r"API at http://", (await asyncio.wait_for(process.stdout.readline(), 30)).decode()):
            pass
        with open(f"/proc/{process.pid}/task/{process.pid}/children") as children:
            (worker,) = [int(pid) for pid in children.read().split()]
        os.kill(process.pid, signal.SIGKILL)
        await process.wait()
        await until(lambda: process_gone(worker), timeout=5)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


# -- the pieces ----------------------------------------------------------------------------------------------
async def test_frames_survive_any_split_of_the_byte_stream() -> None:
    received: list[tuple[int, Frame, bytes]] = []
    channel = FrameChannel(lambda s, k, p: received.append((s, k, p)), lambda _exc: None)
    sent = [(1, Frame.REQUEST, b"".join(pack_head(["GET", "/api", None, [], None], b"body"))),
            (2, Frame.STREAM_CHUNK, b"x" * 100_000), (3, Frame.STREAM_END, b"")]
    wire = b"".join((len(p) + 5).to_bytes(4, "big") + s.to_bytes(4, "big") + bytes([k]) + p for s, k, p in sent)
    for size in (1, 7, 4096):
        received.clear()
        for start in range(0, len(wire), size):
            channel.data_received(wire[start:start + size])
        assert received == sent
    assert unpack_head(received[0][2]) == (["GET", "/api", None, [], None], b"body")


async def test_the_websocket_relay_joins_a_client_to_the_api_servers_private_listener(tmp_path: Path) -> None:
    async def echo(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(protocols=("v5.channel.k8s.io",))
        await ws.prepare(request)
        await ws.send_bytes(b"\x01" + request.path_qs.encode())
        async for message in ws:
            await ws.send_bytes(b"\x01" + message.data)
        return ws

    private = web.Application()
    private.router.add_get("/{tail:.*}", echo)
    private_runner = web.AppRunner(private)
    await private_runner.setup()
    path = str(tmp_path / "api.sock")
    await web.UnixSite(private_runner, path).start()
    relay = WebSocketRelay(path)

    async def front(request: web.Request) -> web.StreamResponse:
        assert wants_websocket(request)
        return await relay.handle(request)

    public = web.Application()
    public.router.add_get("/{tail:.*}", front)
    public_runner = web.AppRunner(public)
    await public_runner.setup()
    site = web.TCPSite(public_runner, "127.0.0.1", 0)
    await site.start()
    port = public_runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"http://127.0.0.1:{port}/api/v1/namespaces/default/pods/p/exec?command=ls",
                                          protocols=("v5.channel.k8s.io", "v4.channel.k8s.io")) as ws:
                assert ws.protocol == "v5.channel.k8s.io"
                assert (await ws.receive_bytes()) == b"\x01/api/v1/namespaces/default/pods/p/exec?command=ls"
                await ws.send_bytes(b"\x00hello")
                assert (await ws.receive_bytes()) == b"\x01\x00hello"
    finally:
        await relay.close()
        await public_runner.cleanup()
        await private_runner.cleanup()


async def test_one_chunk_for_many_streams_travels_once_and_reaches_each_in_order() -> None:
    received: list[tuple[int, Frame, bytes]] = []
    sink = FrameChannel(lambda s, k, p: received.append((s, k, p)), lambda _exc: None)

    class Pipe:
        def writelines(self, parts: list[bytes]) -> None:
            sink.data_received(b"".join(parts))

        def close(self) -> None:
            pass

    source = FrameChannel(lambda *_: None, lambda _exc: None)
    source.connection_made(Pipe())  # type: ignore[arg-type]
    line = b'{"type":"ADDED"}\n'
    for stream in (1, 2, 3):
        source.send(stream, Frame.STREAM_CHUNK, line)
    source.send(2, Frame.STREAM_END)
    source.send(1, Frame.STREAM_CHUNK, b"other\n")
    await asyncio.sleep(0)  # the frames of one loop turn go out together
    assert [(s, k) for s, k, _p in received] == [(0, Frame.SHARED_CHUNK), (2, Frame.STREAM_END),
                                                 (1, Frame.STREAM_CHUNK)]
    assert unpack_shared_chunk(received[0][2]) == ((1, 2, 3), line)
