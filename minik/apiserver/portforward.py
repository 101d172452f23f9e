"""pods/portforward in the API server: kubectl's SPDY/3.1 session, tunneled in a WebSocket (kubectl 1.31 and
later) or on the upgraded connection itself (older clients, or ``KUBECTL_PORT_FORWARD_WEBSOCKETS=false``), ended
here and carried to the pod's kubelet over one WebSocket (``portforward.minik.io``).

kubectl opens two SPDY streams per connection it accepts locally, both with headers ``port`` and ``requestID``:
``streamType: error``, which it half-closes at once and reads to its end (anything read is an error it prints),
and ``streamType: data``, the connection's bytes, half-closed when the local side ends. Each pair is one
connection of the kubelet's session, opened when both streams are there, so connections stay independent: one
that fails or ends leaves the others running. The server answers every SYN_STREAM with a SYN_REPLY and every PING
with the same PING, and sends FIN on both streams of a pair once the pod's side has ended. What is ready for the
client, or for the kubelet, in one turn of the event loop goes in one message (``minik.aio.batch``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import aiohttp
import structlog
from aiohttp import web

from minik.aio import start_task, stop_task
from minik.aio.batch import Batcher
from minik.api import portforward as pf
from minik.api import spdy
from minik.api.errors import StatusError, bad_request
from minik.apiserver.httpproxy import refuse_simulated
from minik.apiserver.podproxy import ExecRelay, KubeletTarget, PodProxy, kubelet_error
from minik.apiserver.request import ApiRequest, ApiResponse

log = structlog.get_logger("minik.apiserver.portforward")

Obj = dict[str, Any]

#: opens the session's WebSocket to the kubelet (raises StatusError when the kubelet refuses)
OpenKubelet = Callable[[], Coroutine[Any, Any, aiohttp.ClientWebSocketResponse]]
#: sends one message to the client
Send = Callable[[bytes], Awaitable[object]]

_CONNECT_SECONDS = 5.0
#: DATA frames carry at most this much (Go's SPDY reader takes up to 16 MiB; smaller frames interleave better)
_FRAME_BYTES = 256 * 1024


@dataclass
class _Pair:
    """The two streams of one forwarded connection, and its connection in the kubelet's session."""

    request_id: str
    port: int
    connection: int
    data_id: int = 0
    error_id: int = 0
    #: the OPEN record went to the kubelet; until then, what the client sends waits here (None: its FIN)
    opened: bool = False
    pending: list[bytes | None] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    data_closed: bool = False  # FIN sent on the data stream
    error_closed: bool = False  # FIN sent on the error stream
    reset: bool = False


class SpdySession:
    """The server's side of one SPDY connection carrying port-forward streams."""

    def __init__(self, send: Send, open_kubelet: OpenKubelet, where: str) -> None:
        self._open_kubelet = open_kubelet
        self.where = where
        self._decoder = spdy.Decoder()
        self._encoder = spdy.Encoder()
        self._pairs: dict[str, _Pair] = {}
        self._streams: dict[int, _Pair] = {}
        self._connections: dict[int, _Pair] = {}
        self._next_connection = 1
        self.closed = False
        self._to_client = Batcher(send, "port-forward to the client")
        self._kubelet: asyncio.Task[aiohttp.ClientWebSocketResponse] | None = None
        self._to_kubelet: Batcher | None = None
        self._from_kubelet: asyncio.Task[None] | None = None

    async def send(self, frame: bytes) -> None:
        """Queue a frame for the client (in order); waits while too much is queued already."""
        self._to_client.add(frame)
        await self._to_client.room()

    async def feed(self, data: bytes) -> None:
        """Take bytes from the client; frames that change the session are acted on before this returns."""
        for frame in self._decoder.feed(data):
            if frame.kind == 0:
                await self._data(frame)
            elif frame.kind == spdy.SYN_STREAM:
                await self._syn_stream(frame)
            elif frame.kind == spdy.RST_STREAM:
                pair = self._streams.get(frame.stream_id)
                if pair is not None:
                    pair.reset = True
                    self._to_pod(pair, pf.CLOSE)
                    await self._forget(pair)
            elif frame.kind == spdy.PING:
                await self.send(spdy.ping(frame.value))
            elif frame.kind == spdy.GOAWAY:
                self.closed = True
            # SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do (no flow control is enforced either way)

    async def close(self) -> None:
        self.closed = True
        for pair in list(self._pairs.values()):
            await self._forget(pair)
        await stop_task(self._from_kubelet)
        if self._to_kubelet is not None:
            await self._to_kubelet.close()
        if self._kubelet is not None:
            if self._kubelet.done() and not self._kubelet.cancelled() and self._kubelet.exception() is None:
                await self._kubelet.result().close()
            else:
                await stop_task(self._kubelet)
        await self._to_client.close()

    # -- from the client ----------------------------------------------------------------------------------------
    async def _syn_stream(self, frame: spdy.Frame) -> None:
        headers = frame.headers or {}
        stream_id = frame.stream_id
        kind = (headers.get(pf.STREAM_TYPE) or [""])[0]
        try:
            port = int((headers.get(pf.PORT) or [""])[0])
        except ValueError:
            port = 0
        if kind not in ("data", "error") or not 0 < port < 65536 or stream_id in self._streams:
            await self.send(spdy.rst_stream(stream_id, spdy.PROTOCOL_ERROR))
            return
        # clients before requestID paired the streams by port, one connection at a time
        request_id = (headers.get(pf.REQUEST_ID) or [f"port-{port}"])[0]
        await self.send(self._encoder.syn_reply(stream_id))
        pair = self._pairs.get(request_id)
        if pair is None:
            pair = self._pairs[request_id] = _Pair(request_id, port, self._next_connection)
            self._connections[pair.connection] = pair
            self._next_connection += 1
        if kind == "data":
            pair.data_id = stream_id
        else:
            pair.error_id = stream_id
        self._streams[stream_id] = pair
        if pair.data_id and pair.error_id and pair.task is None:
            pair.task = start_task(self._open(pair), "port-forward open")

    async def _data(self, frame: spdy.Frame) -> None:
        pair = self._streams.get(frame.stream_id)
        if pair is None or frame.stream_id != pair.data_id:
            return  # the error stream carries nothing from the client but its FIN
        if frame.data:
            self._to_pod(pair, pf.DATA, frame.data)
        if frame.fin:
            self._to_pod(pair, pf.EOF)
        if self._to_kubelet is not None:
            await self._to_kubelet.room()

    def _to_pod(self, pair: _Pair, kind: int, payload: bytes = b"") -> None:
        if not pair.opened:
            if kind != pf.CLOSE:
                pair.pending.append(payload if kind == pf.DATA else None)
            return
        if self._to_kubelet is not None:
            self._to_kubelet.add(pf.record(kind, pair.connection, payload))

    async def _open(self, pair: _Pair) -> None:
        """The pair's connection in the kubelet's session (the session is opened by the first pair)."""
        if self._kubelet is None or (self._kubelet.done() and (self._kubelet.cancelled()
                                                               or self._kubelet.exception() is not None)):
            self._kubelet = start_task(self._open_kubelet(), "port-forward kubelet")
        try:
            socket = await asyncio.shield(self._kubelet)
        except StatusError as exc:
            await self._fail(pair, exc.message)
            return
        except Exception as exc:  # noqa: BLE001 - whatever it was, kubectl must hear of it, not wait forever
            await self._fail(pair, f"error dialing the pod's kubelet: {exc or type(exc).__name__}")
            return
        if self._to_kubelet is None:
            self._to_kubelet = Batcher(socket.send_bytes, "port-forward to the kubelet")
            self._from_kubelet = start_task(self._read_kubelet(socket), "port-forward from the kubelet")
        if pair.reset or self.closed:
            return
        pair.opened = True
        out = [pf.record(pf.OPEN, pair.connection, pair.port.to_bytes(2, "big"))]
        out += [pf.record(pf.DATA, pair.connection, piece) if piece is not None else
                pf.record(pf.EOF, pair.connection) for piece in pair.pending]
        pair.pending.clear()
        self._to_kubelet.add(b"".join(out))

    # -- from the kubelet ---------------------------------------------------------------------------------------
    async def _read_kubelet(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        try:
            async for message in socket:
                if message.type != aiohttp.WSMsgType.BINARY:
                    continue
                for kind, connection, payload in pf.records(message.data):
                    pair = self._connections.get(connection)
                    if pair is None or pair.reset:
                        continue
                    if kind == pf.DATA:
                        if len(payload) <= _FRAME_BYTES:
                            await self.send(spdy.data(pair.data_id, payload))
                            continue
                        view = memoryview(payload)
                        for start in range(0, len(view), _FRAME_BYTES):
                            await self.send(spdy.data(pair.data_id, view[start:start + _FRAME_BYTES]))
                    elif kind == pf.EOF:
                        await self._finish(pair)  # the pod's side ended; the client's may still send
                    elif kind == pf.ERROR:
                        log.info("port-forward failed", pod=self.where, port=pair.port,
                                 error=payload.decode("utf-8", "replace"))
                        await self.send(spdy.data(pair.error_id, payload))
                    elif kind == pf.CLOSE:
                        await self._finish(pair)
                        await self._forget(pair)
        except (ConnectionError, aiohttp.ClientError) as exc:
            log.info("port-forward: the kubelet went away", pod=self.where, error=str(exc))
        # the kubelet's session ended under its connections: they fail, and the next one opens a new session
        batcher, self._to_kubelet, self._kubelet = self._to_kubelet, None, None
        if batcher is not None:
            await batcher.close(0)
        for pair in list(self._pairs.values()):
            if pair.opened:
                await self._fail(pair, f"lost the connection to the kubelet of pod {self.where}")

    # -- endings ------------------------------------------------------------------------------------------------
    async def _forget(self, pair: _Pair) -> None:
        self._pairs.pop(pair.request_id, None)
        self._streams.pop(pair.data_id, None)
        self._streams.pop(pair.error_id, None)
        self._connections.pop(pair.connection, None)
        if pair.task is not None and pair.task is not asyncio.current_task():
            await stop_task(pair.task)

    async def _finish(self, pair: _Pair) -> None:
        """The pod's side is over: both streams end (kubectl closes its local connection once it has read to the
        end of both)."""
        if pair.reset:
            return
        if not pair.data_closed:
            pair.data_closed = True
            await self.send(spdy.data(pair.data_id, b"", spdy.FLAG_FIN))
        if not pair.error_closed:
            pair.error_closed = True
            await self.send(spdy.data(pair.error_id, b"", spdy.FLAG_FIN))

    async def _fail(self, pair: _Pair, message: str) -> None:
        log.info("port-forward refused", pod=self.where, port=pair.port, error=message)
        if not pair.reset and not pair.error_closed:
            await self.send(spdy.data(pair.error_id, message.encode()))
        await self._finish(pair)
        await self._forget(pair)


# -- the request ------------------------------------------------------------------------------------------------
def port_forward(proxy: PodProxy, pod: Obj, request: ApiRequest) -> ApiResponse:
    """The answer to pods/portforward: an upgrade, to kubectl's SPDY session (in a WebSocket or not) ended here,
    or to the channel protocol (the Python client's) relayed to the kubelet as it is."""
    target = proxy.kubelet(pod)
    refuse_simulated(proxy.reader, pod, "forward ports of")
    meta = pod["metadata"]
    where = f"{meta['namespace']}/{meta['name']}"
    url = f"{target.base_url}/portForward/{quote(meta['namespace'])}/{quote(meta['name'])}"
    upgrade = request.headers.get("Upgrade", "").lower()
    offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    if "websocket" in upgrade:
        if pf.SPDY_TUNNEL in offered:
            return ApiResponse(101, upgrade=SpdyTunnel(url, target, where).serve_websocket)
        ports = pf.parse_ports(pf.query_values(request.query, "ports"))
        return ApiResponse(101, upgrade=ExecRelay(url, [("port", str(p)) for p in ports], target).serve)
    if upgrade.startswith("spdy/3.1"):
        return ApiResponse(101, upgrade=SpdyTunnel(url, target, where).serve_spdy)
    raise bad_request("Upgrade request required")


class SpdyTunnel:
    """One client's SPDY session, and the kubelet session it opens."""

    def __init__(self, url: str, target: KubeletTarget, where: str) -> None:
        self.url = url
        self.target = target
        self.where = where

    @contextlib.asynccontextmanager
    async def _session(self, send: Send) -> AsyncIterator[SpdySession]:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_SECONDS)
        async with aiohttp.ClientSession(timeout=timeout) as http:
            async def open_kubelet() -> aiohttp.ClientWebSocketResponse:
                try:
                    return await http.ws_connect(self.url, protocols=(pf.MINIK,), ssl=self.target.ssl,
                                                 server_hostname=self.target.server_hostname, autoping=True,
                                                 max_msg_size=0)
                except aiohttp.WSServerHandshakeError as exc:
                    raise await _refusal(http, self.url, self.target, exc) from None
                except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                    raise StatusError(503, "ServiceUnavailable",
                                      f"error dialing the pod's kubelet: {exc or type(exc).__name__}") from None

            session = SpdySession(send, open_kubelet, self.where)
            try:
                yield session
            finally:
                await session.close()

    async def serve_websocket(self, request: web.Request) -> web.StreamResponse:
        socket = web.WebSocketResponse(protocols=(pf.SPDY_TUNNEL,), autoping=True, max_msg_size=0)
        await socket.prepare(request)
        log.info("port-forward", pod=self.where, transport="websocket")
        async with self._session(socket.send_bytes) as session:
            try:
                async for message in socket:
                    if message.type == aiohttp.WSMsgType.BINARY:
                        await session.feed(message.data)
                    if session.closed:
                        break
            except spdy.ProtocolError as exc:
                await self._protocol_error(session, exc)
        await socket.close()
        return socket

    async def serve_spdy(self, request: web.Request) -> web.StreamResponse:
        """The SPDY/3.1 upgrade itself (kubectl's fallback): the connection's bytes are the session's."""
        offered = [v.strip() for value in request.headers.getall("X-Stream-Protocol-Version", [])
                   for v in value.split(",")]
        if offered and pf.SPDY_PROTOCOL not in offered:
            return web.Response(status=403, text=f"unable to upgrade: unable to negotiate protocol: client "
                                                 f"supports {offered}, server supports [{pf.SPDY_PROTOCOL}]")
        response = web.StreamResponse(status=101, headers={"Connection": "Upgrade", "Upgrade": "SPDY/3.1",
                                                           "X-Stream-Protocol-Version": pf.SPDY_PROTOCOL})
        await response.prepare(request)
        protocol = request.protocol
        reader = _RawReader()
        protocol.set_parser(reader)  # type: ignore[arg-type]  # the connection's bytes from here on, as a WebSocket would take them
        log.info("port-forward", pod=self.where, transport="spdy")
        async with self._session(response.write) as session:
            try:
                while (chunk := await reader.read()) and not session.closed:
                    await session.feed(chunk)
            except spdy.ProtocolError as exc:
                await self._protocol_error(session, exc)
        if request.transport is not None:
            request.transport.close()
        return response


    async def _protocol_error(self, session: SpdySession, exc: spdy.ProtocolError) -> None:
        log.info("port-forward: the client broke SPDY", pod=self.where, error=str(exc))
        await session.send(spdy.goaway(0, spdy.PROTOCOL_ERROR))


class _RawReader:
    """What aiohttp feeds an upgraded connection's bytes to (its payload parser's interface)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self._queue.put_nowait(bytes(data))
        return False, b""

    def feed_eof(self) -> None:
        self._queue.put_nowait(b"")

    async def read(self) -> bytes:
        return await self._queue.get()


async def _refusal(http: aiohttp.ClientSession, url: str, target: KubeletTarget,
                   exc: aiohttp.WSServerHandshakeError) -> StatusError:
    """Why the kubelet refused: its checks come before the upgrade, so a plain request gets the same Status."""
    try:
        async with http.get(url, ssl=target.ssl, server_hostname=target.server_hostname) as answer:
            return kubelet_error(answer.status, await answer.read())
    except (aiohttp.ClientError, OSError, TimeoutError):
        return StatusError(exc.status if exc.status >= 400 else 502, "BadRequest",
                           f"unable to upgrade connection: {exc.message}")
