"""The worker's end of its channel: an aiohttp handler that forwards each request to the API server process and
answers with what comes back, whole or streamed."""

from __future__ import annotations

import asyncio
import itertools
import socket
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from minik.api.errors import StatusError
from minik.apiserver.frontend.wire import Frame, FrameChannel, pack_head, unpack_head, unpack_shared_chunk
from minik.apiserver.http import read_body, respond, stream, too_large
from minik.apiserver.request import ApiResponse

#: how much of a stream a worker holds for a client that reads slower than the API server sends; past it the
#: stream ends (a watch client then re-watches from its last resourceVersion, as after a server-side close)
STREAM_BUFFER_BYTES = 16 * 1024 * 1024

_UNAVAILABLE = StatusError(503, "ServiceUnavailable", "the API server is not available")


class _Stream:
    """The chunks of one streamed answer that the client has not taken yet."""

    def __init__(self) -> None:
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.ended = False
        self.arrived = asyncio.Event()

    def add(self, chunk: bytes) -> bool:
        """False when the client is too far behind (the stream must end)."""
        self.chunks.append(chunk)
        self.size += len(chunk)
        self.arrived.set()
        return self.size <= STREAM_BUFFER_BYTES

    def end(self) -> None:
        self.ended = True
        self.arrived.set()


class Upstream:
    """Forwards requests over the channel and hands answers back to the requests' handlers."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[tuple[Frame, list[Any], bytes]]] = {}
        self._streams: dict[int, _Stream] = {}
        self._channel: FrameChannel | None = None
        #: set to "stop" when the API server asks this worker to stop, or "lost" when the channel is gone
        self.done: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def open(self, sock: socket.socket) -> None:
        channel = FrameChannel(self._on_frame, self._lost)
        await asyncio.get_running_loop().connect_accepted_socket(lambda: channel, sock)
        self._channel = channel

    def send(self, stream: int, kind: Frame, *parts: bytes) -> None:
        if self._channel is not None:
            self._channel.send(stream, kind, *parts)

    def log(self, level: str, event: str, **fields: Any) -> None:
        """Record an event in the API server's log."""
        self.send(0, Frame.LOG, *pack_head([{"level": level, "event": event, **fields}]))

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()

    # -- frames --------------------------------------------------------------------------------------------
    def _on_frame(self, stream: int, kind: Frame, payload: bytes) -> None:
        if kind is Frame.STREAM_CHUNK:
            self._deliver(stream, payload)
        elif kind is Frame.SHARED_CHUNK:
            streams, chunk = unpack_shared_chunk(payload)
            for each in streams:
                self._deliver(each, chunk)
        elif kind is Frame.STREAM_END:
            buffered = self._streams.get(stream)
            if buffered is not None:
                buffered.end()
        elif kind in (Frame.RESPONSE, Frame.STREAM_START):
            waiting = self._waiting.pop(stream, None)
            if waiting is None or waiting.done():  # its client is gone
                if kind is Frame.STREAM_START:
                    self.send(stream, Frame.CANCEL)
                return
            if kind is Frame.STREAM_START:  # chunks may follow in this very read: their buffer must be there
                self._streams[stream] = _Stream()
            head, body = unpack_head(payload)
            waiting.set_result((kind, head, body))
        elif kind is Frame.STOP and not self.done.done():
            self.done.set_result("stop")

    def _deliver(self, stream: int, chunk: bytes) -> None:
        buffered = self._streams.get(stream)
        if buffered is not None and not buffered.add(chunk):
            self._cancel(stream)

    def _lost(self, _exc: Exception | None) -> None:
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(ConnectionError("the API server's channel closed"))
        self._waiting.clear()
        for buffered in self._streams.values():
            buffered.end()
        if not self.done.done():
            self.done.set_result("lost")

    def _cancel(self, stream: int) -> None:
        """Stop a stream here and at the API server."""
        buffered = self._streams.pop(stream, None)
        if buffered is not None:
            buffered.chunks.clear()
            buffered.end()
        self.send(stream, Frame.CANCEL)

    def end_streams(self) -> None:
        """End every open stream (shutdown): each client gets the end of its response."""
        for stream in list(self._streams):
            self._cancel(stream)

    # -- the handler ---------------------------------------------------------------------------------------
    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        body = await read_body(request)
        if body is None:
            return too_large()
        stream_id = next(self._ids)
        waiting: asyncio.Future[tuple[Frame, list[Any], bytes]] = asyncio.get_running_loop().create_future()
        self._waiting[stream_id] = waiting
        query = list(request.query.items()) if request.query_string else None
        self.send(stream_id, Frame.REQUEST, *pack_head(
            [request.method, request.path, query, list(request.headers.items()), request.remote], body))
        try:
            kind, head, content = await waiting
        except ConnectionError:
            return respond(ApiResponse.error(_UNAVAILABLE))
        except asyncio.CancelledError:  # the client went away: its answer, when it comes, is dropped; a write it
            self._waiting.pop(stream_id, None)  # asked for still completes, as it would on the API server's
            raise  # own listener
        status, content_type, headers = head
        if kind is Frame.RESPONSE:
            return respond(ApiResponse(status, content, content_type, headers))
        buffered = self._streams.get(stream_id)
        if buffered is None:  # already ended (shutdown) before this handler resumed
            buffered = _Stream()
            buffered.end()
        return await stream(request, status, content_type, self._chunks(stream_id, buffered))

    async def _chunks(self, stream_id: int, buffered: _Stream) -> AsyncIterator[bytes]:
        """What the API server sends for a stream, joined into one write per wake-up; closing it early (the
        client went away) cancels the stream at the API server."""
        try:
            while True:
                await buffered.arrived.wait()
                buffered.arrived.clear()
                if buffered.chunks:
                    data = b"".join(buffered.chunks)
                    buffered.chunks.clear()
                    buffered.size = 0
                    yield data
                if buffered.ended:
                    return
        finally:
            if not buffered.ended:
                self._cancel(stream_id)
            self._streams.pop(stream_id, None)
