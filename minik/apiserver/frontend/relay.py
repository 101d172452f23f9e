"""WebSocket requests (``kubectl exec``) in a worker: they change protocol, so they cannot travel as frames. The
worker opens the same WebSocket to the API server's private listener (a Unix socket only this user can reach)
and relays messages both ways; the API server runs its whole pipeline on it as on any connection."""

from __future__ import annotations

import asyncio
from http import HTTPStatus

import aiohttp
from aiohttp import web

from minik.api.errors import StatusError
from minik.apiserver.http import respond
from minik.apiserver.request import ApiResponse

#: headers that belong to one connection, not to the request: the relay's own WebSocket sets its own
_HOP_BY_HOP = frozenset({"connection", "upgrade", "host", "content-length", "transfer-encoding", "keep-alive",
                         "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
                         "sec-websocket-protocol"})


def wants_websocket(request: web.BaseRequest) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


class WebSocketRelay:
    """Relays WebSocket requests to the API server's private listener at ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=self.path))
        offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        try:
            upstream = await self._session.ws_connect("http://minik" + request.path_qs, headers=headers,
                                                      protocols=offered)
        except aiohttp.WSServerHandshakeError as exc:  # the API server answered without upgrading
            reason = HTTPStatus(exc.status).phrase if exc.status in HTTPStatus._value2member_map_ else "Error"
            return respond(ApiResponse.error(StatusError(exc.status, reason.replace(" ", ""), exc.message)))
        except aiohttp.ClientError as exc:
            return respond(ApiResponse.error(StatusError(503, "ServiceUnavailable", f"the API server is not "
                                                                                     f"available: {exc}")))
        downstream = web.WebSocketResponse(protocols=(upstream.protocol,) if upstream.protocol else ())
        try:
            await downstream.prepare(request)
            await _join(downstream, upstream)
        finally:
            await upstream.close()
            await downstream.close()
        return downstream


async def _join(downstream: web.WebSocketResponse, upstream: aiohttp.ClientWebSocketResponse) -> None:
    """Copy messages both ways until one side closes; the other is then closed with the same code."""
    pumps = [asyncio.create_task(_pump(downstream, upstream)), asyncio.create_task(_pump(upstream, downstream))]
    try:
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pump in pumps:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)


async def _pump(source: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
                sink: web.WebSocketResponse | aiohttp.ClientWebSocketResponse) -> None:
    async for message in source:
        if message.type is aiohttp.WSMsgType.BINARY:
            await sink.send_bytes(message.data)
        elif message.type is aiohttp.WSMsgType.TEXT:
            await sink.send_str(message.data)
        else:
            break
    await sink.close(code=source.close_code or aiohttp.WSCloseCode.OK)
