"""The HTTP transport: aiohttp in front of ``ApiServer.handle``.

Bodies over the limit are refused with 413 before they are read into memory; watches are streamed with chunked
encoding and end when the client goes away or the server shuts down.
"""

from __future__ import annotations

import structlog
from aiohttp import web

from minik.api.errors import StatusError
from minik.apiserver.codec import MAX_BODY_BYTES
from minik.apiserver.request import ApiRequest, ApiResponse
from minik.apiserver.server import ApiServer

log = structlog.get_logger("minik.apiserver.http")

API_SERVER: web.AppKey[ApiServer] = web.AppKey("api_server", ApiServer)

_TOO_LARGE = StatusError(413, "RequestEntityTooLarge", f"the request body is too large (limit {MAX_BODY_BYTES} bytes)")


async def _read_body(request: web.Request) -> bytes | None:
    """The body, or None when it is over the limit (checked on Content-Length before reading, and by aiohttp's
    client_max_size while reading a chunked body)."""
    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        return None
    if not request.body_exists:
        return b""
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        return None


def _respond(response: ApiResponse) -> web.Response:
    headers = {"Content-Type": response.content_type}
    if response.headers:
        headers.update(response.headers)
    return web.Response(status=response.status, body=response.body, headers=headers)


_NO_QUERY: dict[str, str] = {}


async def handle(request: web.Request) -> web.StreamResponse:
    api = request.app[API_SERVER]
    body = await _read_body(request)
    if body is None:
        response = _respond(ApiResponse.error(_TOO_LARGE))
        response.force_close()
        return response
    query = request.query if request.query_string else _NO_QUERY
    result = await api.handle(ApiRequest(request.method, request.path, query, request.headers, body,
                                         request.remote))
    if result.upgrade is not None:
        return await result.upgrade(request)  # type: ignore[no-any-return]
    if result.stream is None:
        return _respond(result)
    stream = web.StreamResponse(status=result.status, headers={"Content-Type": result.content_type,
                                                              "Cache-Control": "no-cache, private"})
    stream.enable_chunked_encoding()
    lines = result.stream
    try:
        await stream.prepare(request)
        async for chunk in lines:
            await stream.write(chunk)
        await stream.write_eof()
    except ConnectionResetError:
        pass  # the client went away; its watcher is closed below
    finally:
        aclose = getattr(lines, "aclose", None)
        if aclose is not None:
            await aclose()
    return stream


def build_app(api: ApiServer) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY_BYTES, handler_args={"max_field_size": 16 * 1024})
    app[API_SERVER] = api
    app.router.add_route("*", "/{tail:.*}", handle)
    return app
