"""HTTP/1.1 for the API server: one asyncio ``Protocol`` per client connection, parsed by llhttp (httptools).

A request is read into an ``ApiRequest`` straight from the parser's callbacks, run through ``ApiServer.handle``,
and its ``ApiResponse`` goes out as one write of the head and body. aiohttp's server builds a request object, a
payload stream, a response object and its header maps for every request, and sends the head and body in separate
steps; for the API's small requests that was about a third of the event loop's time (py-spy, pod creates), where
this protocol takes a tenth.

aiohttp still serves what it does best: a request that upgrades its connection (the WebSockets of
``pods/exec``) is handed over, with its head rebuilt from the parsed fields, to an aiohttp handler on the same
connection.

Requests on a connection are answered in order (HTTP/1.1 pipelining). Connections are closed when they stay
idle or silent too long, when a body takes too long (408) or is too large (413, after lingering so the client
reads the answer), and on a request the parser refuses (400).
"""

from __future__ import annotations

import asyncio
import http
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote

import httptools
import structlog
from aiohttp import web
from multidict import CIMultiDict, MultiDict

from minik.aio import stop_task
from minik.api.errors import StatusError
from minik.api.timestamps import http_date
from minik.apiserver.codec import MAX_BODY_BYTES
from minik.apiserver.request import ApiRequest, ApiResponse
from minik.apiserver.x509 import user_from_peercert

if TYPE_CHECKING:
    from minik.apiserver.limits import Limits
    from minik.apiserver.server import ApiServer

log = structlog.get_logger("minik.apiserver.connection")

#: the longest request line (method, URL, version) and the most header bytes a request may send (Go's net/http
#: reads up to 1 MiB of them by default; kubectl's longest label selectors fit well within)
MAX_REQUEST_LINE_BYTES = 64 * 1024
MAX_HEADER_BYTES = 1024 * 1024
#: requests read ahead of the one being answered before the connection stops reading (pipelining clients)
MAX_QUEUED_REQUESTS = 16
#: a direct write (a watch event written in the commit's step) is refused while this much is unsent
DIRECT_WRITE_LIMIT = 64 * 1024
#: large bodies are written in slices of this size, each waiting for the connection to take the previous ones
SLICE_BYTES = 256 * 1024

_REASONS = {status.value: status.phrase.encode() for status in http.HTTPStatus}
_NO_QUERY: dict[str, str] = {}
_BODY_TIMEOUT = StatusError(408, "Timeout", "the request body was not received in time")
_TOO_LARGE = StatusError(413, "RequestEntityTooLarge", f"the request body is too large (limit {MAX_BODY_BYTES} bytes)")


def _head(status: int, content_type: str, headers: dict[str, str] | None, length: int | None,
          close: bool) -> bytes:
    lines = [b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nDate: %s\r\n" % (
        status, _REASONS.get(status, b"Unknown"), content_type.encode("latin-1"), http_date())]
    if length is None:
        lines.append(b"Transfer-Encoding: chunked\r\nCache-Control: no-cache, private\r\n")
    else:
        lines.append(b"Content-Length: %d\r\n" % length)
    if headers:
        for name, value in headers.items():
            lines.append(b"%s: %s\r\n" % (name.encode("latin-1"), value.encode("latin-1", "replace")))
    if close:
        lines.append(b"Connection: close\r\n")
    lines.append(b"\r\n")
    return b"".join(lines)


class _Request:
    """A request as the parser delivers it, until it is complete."""

    __slots__ = ("method", "url", "headers", "body", "size", "keep_alive", "upgrade")

    def __init__(self) -> None:
        self.method = ""
        self.url = b""
        self.headers: list[tuple[str, str]] = []
        self.body: list[bytes] = []
        self.size = 0
        self.keep_alive = True
        self.upgrade = False


class HttpListener:
    """The protocol factory of the API server's listening socket, and the registry of its open connections for
    the idle sweep and an ordered shutdown."""

    def __init__(self, api: ApiServer, *, fallback: web.Server) -> None:
        self.api = api
        self.limits: Limits = api.settings.limits
        #: aiohttp's server, for the connections that upgrade (exec's WebSocket)
        self.fallback = fallback
        self.connections: set[HttpConnection] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._closing = False

    def __call__(self) -> HttpConnection:
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep(), name="minik-http-sweeper")
        return HttpConnection(self)

    async def _sweep(self) -> None:
        """Close connections that have not sent a whole request in time (idle keep-alive connections, silent or
        slow headers) and answer 408 to bodies that take too long."""
        limits = self.limits
        interval = max(0.05, min(1.0, limits.idle_timeout_seconds / 4, limits.body_timeout_seconds / 4))
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            now = loop.time()
            for connection in list(self.connections):
                connection.check_timeouts(now, limits.idle_timeout_seconds, limits.body_timeout_seconds)

    async def shutdown(self, timeout: float) -> None:
        """Close idle connections at once, let requests in flight finish (at most ``timeout``), then close the
        rest. The caller stops accepting first and ends the watches."""
        self._closing = True
        await stop_task(self._sweeper)
        self._sweeper = None
        for connection in list(self.connections):
            connection.close_when_idle()
        workers = [c.worker for c in self.connections if c.worker is not None and not c.worker.done()]
        if workers:
            _, pending = await asyncio.wait(workers, timeout=timeout)
            for worker in pending:
                worker.cancel()
            if pending:
                await asyncio.wait(pending)
        for connection in list(self.connections):
            connection.abort()
        await self.fallback.shutdown(timeout)


class HttpConnection(asyncio.Protocol):
    """One client connection: requests parsed as they arrive, answered in order by one worker task."""

    def __init__(self, listener: HttpListener) -> None:
        self.listener = listener
        self.api = listener.api
        self.transport: asyncio.Transport | None = None
        #: made when the connection is, dropped when it is lost or handed over (see ``connection_lost``)
        self.parser: httptools.HttpRequestParser | None = None
        self.remote: str | None = None
        self.queue: deque[_Request] = deque()
        self.current: _Request | None = None
        #: the task answering the queued requests, while there are any
        self.worker: asyncio.Task[None] | None = None
        self.loop = asyncio.get_running_loop()
        #: since when the connection has waited for a complete request (None while one is being answered)
        self.idle_since: float | None = self.loop.time()
        #: when the head of a request whose body is still arriving was complete
        self.body_since: float | None = None
        self.header_bytes = 0
        self.closing = False  # answer what is queued, then close
        self.discarding = False  # an answer that ends the connection is due: read and drop the rest
        #: that answer, while a request before it is still being answered
        self.refusal: ApiResponse | None = None
        self.streaming = False  # the worker is sending a streamed answer (a watch)
        self.reading_paused = False
        self.writable: asyncio.Future[None] | None = None  # set while the transport's buffer is full

    # -- asyncio.Protocol ----------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.remote = peer[0] if isinstance(peer, tuple) and peer else None
        self.certificate_user = user_from_peercert(transport.get_extra_info("peercert"))  # once per connection
        if self.listener._closing:
            transport.close()
            return
        self.parser = httptools.HttpRequestParser(self)
        self.listener.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        # the parser holds this protocol's callbacks, so the two make a reference cycle that would keep the
        # connection and its transport (for TLS: the SSL object, its buffers, some 40 KB) alive until a cyclic
        # collection; minik's collector settings make those rare and freeze what survives them
        # (minik.collector), so a closed connection must be freed by reference counting alone
        self.parser = None
        self.listener.connections.discard(self)
        self.closing = True
        self.queue.clear()
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)
        worker = self.worker
        if self.streaming and worker is not None and not worker.done():
            # a watch ends with its client. Other requests run to their end, as aiohttp and Kubernetes let a
            # write whose client went away finish: cutting one short between its steps is how state goes wrong
            worker.cancel()

    def pause_writing(self) -> None:
        if self.writable is None or self.writable.done():
            self.writable = self.loop.create_future()

    def resume_writing(self) -> None:
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)

    def data_received(self, data: bytes) -> None:
        parser = self.parser
        if self.discarding or parser is None:
            return
        try:
            parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            self._hand_over(data[upgrade.args[0]:] if upgrade.args else b"")
            return
        except httptools.HttpParserCallbackError as exc:  # raised by a callback of ours: a limit was exceeded
            refused = exc.__context__
            if isinstance(refused, _Refused):
                self._refuse(refused.status, refused.reason, refused.message)
            else:  # a bug in a callback: the client still gets a Status, and the server goes on
                log.error("request parsing failed", error=repr(refused), remote=self.remote)
                self._refuse(500, "InternalError", "an internal error occurred")
            return
        except httptools.HttpParserError as exc:
            self._refuse(400, "BadRequest", f"malformed HTTP request: {exc}")
            return
        if self.current is not None and self.body_since is None and self.current.method:
            self.body_since = self.loop.time()  # the head is in, the body is not: its timer starts
        if self.queue and self.worker is None:
            self.worker = self.loop.create_task(self._answer())
        if len(self.queue) >= MAX_QUEUED_REQUESTS and not self.reading_paused and self.transport is not None:
            self.reading_paused = True
            self.transport.pause_reading()

    # -- parser callbacks ----------------------------------------------------------------------------------
    def on_message_begin(self) -> None:
        self.current = _Request()
        self.header_bytes = 0

    def on_url(self, url: bytes) -> None:
        current = self.current
        assert current is not None
        current.url += url
        if len(current.url) > MAX_REQUEST_LINE_BYTES:
            raise _Refused(414, "RequestURITooLong", "the request URL is too long")

    def on_header(self, name: bytes, value: bytes) -> None:
        current = self.current
        assert current is not None
        self.header_bytes += len(name) + len(value) + 4
        if self.header_bytes > MAX_HEADER_BYTES:
            raise _Refused(431, "RequestHeaderFieldsTooLarge", "the request headers are too large")
        current.headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        current = self.current
        assert current is not None
        parser = self.parser
        assert parser is not None  # called by it
        current.method = parser.get_method().decode("ascii", "replace")
        current.keep_alive = parser.should_keep_alive()
        current.upgrade = parser.should_upgrade()
        for name, value in current.headers:
            lowered = name.lower()
            if lowered == "content-length":
                try:
                    too_large = int(value) > MAX_BODY_BYTES
                except ValueError:
                    raise _Refused(400, "BadRequest", "malformed Content-Length") from None
                if too_large:
                    raise _Refused(413, _TOO_LARGE.reason, _TOO_LARGE.message)
            elif lowered == "expect" and value.lower() == "100-continue" and self.transport is not None:
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        current = self.current
        assert current is not None
        current.size += len(body)
        if current.size > MAX_BODY_BYTES:
            raise _Refused(413, _TOO_LARGE.reason, _TOO_LARGE.message)
        current.body.append(body)

    def on_message_complete(self) -> None:
        current = self.current
        assert current is not None
        self.current = None
        self.body_since = None
        self.queue.append(current)

    # -- answering -----------------------------------------------------------------------------------------
    async def _answer(self) -> None:
        try:
            while self.queue and self.transport is not None:
                request = self.queue.popleft()
                if self.reading_paused and len(self.queue) < MAX_QUEUED_REQUESTS // 2:
                    self.reading_paused = False
                    self.transport.resume_reading()
                if request.upgrade:
                    return  # handed over in data_received once the requests before it were answered
                self.idle_since = None
                close = not request.keep_alive or (self.closing and not self.queue)
                await self._serve(request, close)
                if close:
                    self.transport.close()
                    return
                self.idle_since = self.loop.time()
        except asyncio.CancelledError:
            if self.transport is None or not self.transport.is_closing():
                raise  # not ours (the connection is gone), the server's: pass it on
        finally:
            self.worker = None
        if self.refusal is not None:
            self._send_refusal(self.refusal)
        elif self.closing and self.transport is not None:
            self.transport.close()

    async def _serve(self, request: _Request, close: bool) -> None:
        path, _, query_string = request.url.partition(b"?")
        text = path.decode("utf-8", "replace")
        if "%" in text:
            text = unquote(text)
        query: Any = _NO_QUERY
        if query_string:
            query = MultiDict(parse_qsl(query_string.decode("utf-8", "replace"), keep_blank_values=True))
        body = request.body[0] if len(request.body) == 1 else b"".join(request.body)
        api_request = ApiRequest(request.method, text, query, CIMultiDict(request.headers), body, self.remote,
                                 self.certificate_user)
        try:
            response = await self.api.handle(api_request)
        except Exception:  # handle answers every error with a Status; this is only a last guard
            log.exception("request failed", method=request.method, path=text)
            response = ApiResponse.error(StatusError(500, "InternalError", "an internal error occurred"))
        if response.stream is not None:
            await self._stream(response, close)
        elif response.upgrade is not None:  # an upgrade asked for without the Upgrade header
            self._write(ApiResponse.error(StatusError(400, "BadRequest", "Upgrade request required")),
                        request.method, close)
        else:
            await self._write_and_drain(response, request.method, close)

    def _write(self, response: ApiResponse, method: str, close: bool) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        body = response.body
        head = _head(response.status, response.content_type, response.headers, len(body), close)
        transport.write(head if method == "HEAD" else head + body)  # bodies over SLICE_BYTES go in slices

    async def _write_and_drain(self, response: ApiResponse, method: str, close: bool) -> None:
        body = response.body
        if len(body) <= SLICE_BYTES or method == "HEAD":
            self._write(response, method, close)
            if self.writable is not None and not self.writable.done():
                await self.writable
            return
        # a large body (a full list) in slices, each after the connection took the previous: the transport never
        # holds a copy of the whole body
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        transport.write(_head(response.status, response.content_type, response.headers, len(body), close))
        view = memoryview(body)
        for start in range(0, len(body), SLICE_BYTES):
            if transport.is_closing():
                return
            transport.write(view[start:start + SLICE_BYTES])
            if self.writable is not None and not self.writable.done():
                await self.writable

    async def _stream(self, response: ApiResponse, close: bool) -> None:
        """A chunked answer (a watch) until its chunks end or the client goes away; the chunks are closed (their
        ``aclose``) either way, so the watcher behind them is released."""
        chunks = response.stream
        assert chunks is not None
        transport = self.transport
        self.streaming = True
        try:
            if transport is None or transport.is_closing():
                return
            transport.write(_head(response.status, response.content_type, response.headers, None, close))
            if response.direct is not None:
                response.direct(chunk_writer(transport))
            async for chunk in chunks:
                if transport.is_closing():
                    return
                transport.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                if self.writable is not None and not self.writable.done():
                    await self.writable
            if not transport.is_closing():
                transport.write(b"0\r\n\r\n")
        finally:
            self.streaming = False
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()

    # -- connection management -----------------------------------------------------------------------------
    def _hand_over(self, rest: bytes) -> None:
        """Give the connection to aiohttp for a request that upgrades it, with the request's head rebuilt from
        what the parser read (and whatever the client sent after it)."""
        request = self.queue.pop() if self.queue and self.queue[-1].upgrade else None
        transport = self.transport
        if request is None or transport is None:
            self._refuse(400, "BadRequest", "malformed upgrade request")
            return
        if self.queue or self.worker is not None:  # requests before it are still being answered
            self._refuse(400, "BadRequest", "an upgrade must not follow pipelined requests")
            return
        head = [b"%s %s HTTP/1.1\r\n" % (request.method.encode(), request.url)]
        head += [b"%s: %s\r\n" % (name.encode("latin-1"), value.encode("latin-1")) for name, value in request.headers]
        head.append(b"\r\n")
        self.listener.connections.discard(self)
        self.parser = None  # the connection is aiohttp's from here: nothing of this protocol may keep it
        handler = self.listener.fallback()
        transport.set_protocol(handler)
        handler.connection_made(transport)
        handler.data_received(b"".join(head) + rest)

    def _refuse(self, status: int, reason: str, message: str) -> None:
        """Answer an error that ends the connection, then read and drop what the client still sends for a while
        (so it reads the answer rather than a reset), and close."""
        self.discarding = True
        refusal = ApiResponse.error(StatusError(status, reason, message))
        if self.queue and self.worker is None:  # requests read before this one are answered first, in order
            self.worker = self.loop.create_task(self._answer())
        if self.worker is not None:
            self.refusal = refusal
        else:
            self._send_refusal(refusal)

    def _send_refusal(self, refusal: ApiResponse) -> None:
        self.refusal = None
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        self._write(refusal, "GET", True)
        self.loop.call_later(self.listener.limits.lingering_seconds, transport.close)

    def check_timeouts(self, now: float, idle_seconds: float, body_seconds: float) -> None:
        if self.discarding or self.transport is None:
            return
        if self.body_since is not None and now - self.body_since > body_seconds:
            self._refuse(_BODY_TIMEOUT.code, _BODY_TIMEOUT.reason, _BODY_TIMEOUT.message)
        elif self.body_since is None and self.idle_since is not None and self.worker is None and \
                now - self.idle_since > idle_seconds:  # a body under way has its own limit, above
            self.transport.close()

    def close_when_idle(self) -> None:
        """Shutdown: close now if nothing is being answered, else after the answer in progress."""
        self.closing = True
        if self.worker is None and self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


class _Refused(Exception):
    """Raised from a parser callback: the request is answered with this error and the connection closed."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


#: the last chunk written directly and its frame: every watcher of a prefix gets the same bytes object, so one
#: frame serves them all
_last_frame: list[bytes] = [b"", b""]


def chunk_writer(transport: asyncio.Transport | None) -> Callable[[bytes], bool]:
    """Writes one chunk of a started chunked answer straight to the connection, in the caller's step; False
    (nothing written) when the connection is gone or closing, or its send buffer is over the limit."""
    last = _last_frame

    def write(data: bytes) -> bool:
        if transport is None or transport.is_closing() or transport.get_write_buffer_size() > DIRECT_WRITE_LIMIT:
            return False
        if data is not last[0]:
            last[0], last[1] = data, b"%x\r\n%b\r\n" % (len(data), data)
        transport.write(last[1])
        return True

    return write
