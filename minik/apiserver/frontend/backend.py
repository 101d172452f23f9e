"""The API server's end of a worker's channel: every forwarded request runs through ``ApiServer.handle``, exactly
as a request taken by the API server's own HTTP listener does, and its answer goes back as frames."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import structlog
from multidict import CIMultiDict, MultiDict

from minik.apiserver.frontend.wire import Frame, FrameChannel, pack_head, unpack_head
from minik.apiserver.request import ApiRequest, ApiResponse

if TYPE_CHECKING:
    from minik.apiserver.server import ApiServer

log = structlog.get_logger("minik.apiserver.frontend")

_NO_QUERY: Mapping[str, str] = {}


class WorkerLink:
    """Serves one worker's frames; ``on_ready`` is called when the worker accepts connections."""

    def __init__(self, api: "ApiServer", worker: str, on_ready: Callable[[], None]) -> None:
        self.api = api
        self.worker = worker
        self._on_ready = on_ready
        self._tasks: set[asyncio.Task[None]] = set()
        #: the streams being sent, by stream id: the only answers a worker may cancel (a write is never cut off
        #: half way because its client went away)
        self._streams: dict[int, asyncio.Task[None]] = {}
        self._channel: FrameChannel | None = None
        self._log = log.bind(worker=worker)

    async def open(self, sock: socket.socket) -> None:
        channel = FrameChannel(self._on_frame, self._lost)
        await asyncio.get_running_loop().connect_accepted_socket(lambda: channel, sock)
        self._channel = channel

    def stop(self) -> None:
        """Ask the worker to stop accepting, finish what it has in flight and exit."""
        if self._channel is not None:
            self._channel.send(0, Frame.STOP)

    async def close(self) -> None:
        """End the streams, let the requests in flight finish, and close the channel."""
        for task in self._streams.values():
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._channel is not None:
            self._channel.close()

    # -- frames --------------------------------------------------------------------------------------------
    def _on_frame(self, stream: int, kind: Frame, payload: bytes) -> None:
        if kind is Frame.REQUEST:
            task = asyncio.create_task(self._serve(stream, payload), name=f"minik-frontend-{self.worker}-{stream}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif kind is Frame.CANCEL:
            streaming = self._streams.get(stream)
            if streaming is not None:
                streaming.cancel()
        elif kind is Frame.READY:
            self._on_ready()
        elif kind is Frame.LOG:
            self._relay_log(payload)

    def _lost(self, _exc: Exception | None) -> None:
        for task in self._streams.values():  # nobody is left to send them to
            task.cancel()

    def _relay_log(self, payload: bytes) -> None:
        try:
            fields: dict[str, Any] = unpack_head(payload)[0][0]
            level, event = str(fields.pop("level", "info")), str(fields.pop("event", ""))
            getattr(self._log, level if level in ("debug", "info", "warning", "error") else "info")(event, **fields)
        except (ValueError, TypeError, IndexError, KeyError):
            self._log.warning("unreadable log event from a worker")

    # -- answers -------------------------------------------------------------------------------------------
    async def _serve(self, stream: int, payload: bytes) -> None:
        head, body = unpack_head(payload)
        method, path, query, headers, remote = head
        request = ApiRequest(method, path, MultiDict(query) if query else _NO_QUERY, CIMultiDict(headers), body,
                             remote)
        result = await self.api.handle(request)
        channel = self._channel
        assert channel is not None
        if result.stream is None:
            channel.send(stream, Frame.RESPONSE, *pack_head(_response_head(result), result.body))
            return
        await self._pump(channel, stream, result)

    async def _pump(self, channel: FrameChannel, stream: int, result: ApiResponse) -> None:
        """Send a streamed answer chunk by chunk. When the worker is not reading, wait (the watcher behind the
        stream buffers, and is closed if it falls too far behind, as for a slow client of the API server's own
        listener)."""
        chunks = result.stream
        assert chunks is not None
        task = asyncio.current_task()
        assert task is not None
        self._streams[stream] = task
        channel.send(stream, Frame.STREAM_START, *pack_head(_response_head(result)))
        try:
            async for chunk in chunks:
                channel.send(stream, Frame.STREAM_CHUNK, chunk)
                await channel.drain()
            channel.send(stream, Frame.STREAM_END)
        finally:
            del self._streams[stream]
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()


def _response_head(result: ApiResponse) -> list[Any]:
    return [result.status, result.content_type, result.headers]
