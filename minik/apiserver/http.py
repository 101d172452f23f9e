"""aiohttp in front of ``ApiServer.handle``, for the connections that ``minik.apiserver.connection`` hands over:
those whose request upgrades them (exec's WebSocket, or a plain-HTTP client offering h2c, answered in HTTP/1.1).

Bodies over the limit are refused with 413 before they are read into memory; watches are streamed with chunked
encoding and end when the client goes away or the server shuts down.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import structlog
from aiohttp import web

from minik.api.errors import StatusError
from minik.apiserver.codec import MAX_BODY_BYTES
from minik.apiserver.connection import chunk_writer
from minik.apiserver.request import ApiRequest, ApiResponse
from minik.apiserver.x509 import user_from_peercert

if TYPE_CHECKING:
    from minik.apiserver.server import ApiServer

log = structlog.get_logger("minik.apiserver.http")

#: aiohttp's handler arguments for every API listener: kubectl's headers can be long
HANDLER_ARGS: dict[str, Any] = {"max_field_size": 16 * 1024}

_BODY_TIMEOUT = StatusError(408, "Timeout", "the request body was not received in time")
_TOO_LARGE = StatusError(413, "RequestEntityTooLarge", f"the request body is too large (limit {MAX_BODY_BYTES} bytes)")


def limited_request(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
    """aiohttp's request with the API's body limit (the low-level server's default is 1 MiB)."""
    return web.BaseRequest(message, payload, protocol, writer, task, asyncio.get_running_loop(),
                           client_max_size=MAX_BODY_BYTES)


async def read_body(request: web.BaseRequest, timeout_seconds: float | None = None) -> bytes | None:
    """The body, or None when it is over the limit (checked on Content-Length before reading, and by aiohttp's
    client_max_size while reading a chunked body). TimeoutError when it takes over ``timeout_seconds``."""
    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        return None
    if not request.body_exists:
        return b""
    try:
        if request.content.is_eof():  # all of it came with the headers (most requests): no timer to arm
            return await request.read()
        async with asyncio.timeout(timeout_seconds):
            return await request.read()
    except web.HTTPRequestEntityTooLarge:
        return None


def respond(response: ApiResponse) -> web.Response:
    headers = {"Content-Type": response.content_type}
    if response.headers:
        headers.update(response.headers)
    return web.Response(status=response.status, body=response.body, headers=headers)


#: bodies larger than this are written in slices of this size by a response that keeps no reference to them
LARGE_BODY_BYTES = 256 * 1024


async def send_large(request: web.BaseRequest, response: ApiResponse) -> web.StreamResponse:
    """Send a large body (a full list) in slices, waiting for the connection to take each.

    aiohttp keeps the last response of a keep-alive connection until its next request; a ``web.Response`` would
    keep its body with it, so a connection that listed every pod once and then went idle would hold hundreds of
    megabytes. This response never holds the body, and the slices keep the transport from copying it whole."""
    headers = {"Content-Type": response.content_type}
    if response.headers:
        headers.update(response.headers)
    out = web.StreamResponse(status=response.status, headers=headers)
    body = response.body
    out.content_length = len(body)
    await out.prepare(request)
    view = memoryview(body)
    for start in range(0, len(body), LARGE_BODY_BYTES):
        await out.write(view[start:start + LARGE_BODY_BYTES])
    await out.write_eof()
    return out


def refused_body(error: StatusError = _TOO_LARGE) -> web.Response:
    """413 for a body over the limit (408 for one too slow to arrive); the connection is closed, as the rest of
    the body is not read."""
    response = respond(ApiResponse.error(error))
    response.force_close()
    return response


#: how often a streamed response (a watch) checks that its client is still connected: aiohttp does not cancel a
#: handler whose client went away, and a watch with no events and no bookmarks would otherwise hold its watcher
#: until its timeout
LIVENESS_SECONDS = 5.0


async def stream(request: web.BaseRequest, status: int, content_type: str,
                 chunks: AsyncIterator[bytes],
                 direct: Callable[[Callable[[bytes], bool]], None] | None = None) -> web.StreamResponse:
    """Send ``chunks`` as a chunked response until they end or the client goes away; ``chunks`` is closed (its
    ``aclose``) either way, so whatever feeds it (a watcher) is released. With ``direct``, the producer also gets
    a synchronous chunk writer once the headers are out."""
    response = web.StreamResponse(status=status, headers={"Content-Type": content_type,
                                                          "Cache-Control": "no-cache, private"})
    response.enable_chunked_encoding()
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    gone = False
    liveness: asyncio.TimerHandle | None = None

    def check() -> None:
        nonlocal gone, liveness
        transport = request.transport
        if transport is None or transport.is_closing():
            gone = True
            if task is not None:
                task.cancel()
            return
        liveness = loop.call_later(LIVENESS_SECONDS, check)

    liveness = loop.call_later(LIVENESS_SECONDS, check)
    try:
        writer = await response.prepare(request)
        if direct is not None:
            direct(chunk_writer(request.transport))
        async for chunk in chunks:
            await response.write(chunk)
            if direct is not None and writer is not None:
                await writer.drain()  # aiohttp counts only its own writes: wait while the connection is paused
        await response.write_eof()
    except ConnectionResetError:
        pass  # the client went away; its watcher is closed below
    except asyncio.CancelledError:
        if not gone or task is None:
            raise
        task.uncancel()  # our own cancellation, because the client went away: nothing more to send
    finally:
        liveness.cancel()
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
    return response


_NO_QUERY: dict[str, str] = {}


def build_server(api: ApiServer) -> web.Server:
    """aiohttp's low-level server with one handler for every path: the API server routes requests itself, so
    aiohttp's application, router and middleware would be work for nothing."""
    limits = api.settings.limits

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        try:
            body = await read_body(request, limits.body_timeout_seconds)
        except TimeoutError:  # a body that trickles in too slowly: answer, and drop the connection
            return refused_body(_BODY_TIMEOUT)
        if body is None:
            return refused_body()
        query = request.query if request.query_string else _NO_QUERY
        peercert = request.transport.get_extra_info("peercert") if request.transport is not None else None
        result = await api.handle(ApiRequest(request.method, request.path, query, request.headers, body,
                                             request.remote, user_from_peercert(peercert)))
        if result.upgrade is not None:  # exec: the WebSocket relayed to the node's kubelet
            return await result.upgrade(request)
        if result.stream is None:
            if len(result.body) > LARGE_BODY_BYTES and request.method != "HEAD":
                return await send_large(request, result)
            return respond(result)
        return await stream(request, result.status, result.content_type, result.stream, result.direct)

    return web.Server(handle, request_factory=limited_request, access_log=None, **HANDLER_ARGS,
                      **limits.server_args())
