"""Frames between a front-end worker process and the API server process.

One stream socket pair per worker carries every request that worker forwards and every answer. A frame is a
9-byte header (the length of what follows the length field: u32; a stream id chosen by the worker: u32; the frame
type: u8) and a payload. Frames of different streams interleave; the frames of one stream keep their order.

Frames are cheap on purpose: a request is its head (method, path, query, headers, client address) as one JSON
array and the body as it came, so the API server does no HTTP parsing, and writes are gathered into one socket
write per turn of the event loop.
"""

from __future__ import annotations

import asyncio
import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import orjson

_HEADER = struct.Struct("!IIB")
_HEAD_LENGTH = struct.Struct("!I")
_U32 = struct.Struct("!I")


class Frame(enum.IntEnum):
    # worker -> API server
    REQUEST = 1
    """A request: its head ``[method, path, query pairs or null, header pairs, client address]``, then its body."""
    CANCEL = 2
    """The client of a stream went away (or the worker is stopping): stop producing it."""
    READY = 3
    """The worker accepts connections."""
    LOG = 4
    """A log event for the API server's log: ``{"level": ..., "event": ..., ...}``."""
    # API server -> worker
    RESPONSE = 10
    """A whole answer: its head ``[status, content type, headers]``, then its body."""
    STREAM_START = 11
    """The head of a streamed answer (a watch); chunks follow."""
    STREAM_CHUNK = 12
    STREAM_END = 13
    STOP = 14
    """Stop accepting connections, finish the requests in flight, end the streams and exit."""
    SHARED_CHUNK = 15
    """One chunk for several streams (every watcher of a resource gets the same event line): a count (u32), the
    stream ids (u32 each), then the chunk."""


def pack_head(head: list[Any], body: bytes = b"") -> list[bytes]:
    """A payload of a JSON head and a body, as parts (a large body is not copied into a new buffer)."""
    encoded = orjson.dumps(head)
    return [_HEAD_LENGTH.pack(len(encoded)) + encoded, body] if body else [_HEAD_LENGTH.pack(len(encoded)) + encoded]


def unpack_shared_chunk(payload: bytes) -> tuple[tuple[int, ...], bytes]:
    """The stream ids and the chunk of a SHARED_CHUNK payload."""
    (count,) = _U32.unpack_from(payload)
    end = 4 + 4 * count
    return struct.unpack_from(f"!{count}I", payload, 4), payload[end:]


def unpack_head(payload: bytes) -> tuple[list[Any], bytes]:
    (length,) = _HEAD_LENGTH.unpack_from(payload)
    head: list[Any] = orjson.loads(payload[4:4 + length])
    return head, payload[4 + length:]


OnFrame = Callable[[int, Frame, bytes], None]
OnLost = Callable[[Exception | None], None]


class FrameChannel(asyncio.Protocol):
    """One end of a worker's socket pair: parses incoming frames into ``on_frame(stream, kind, payload)`` and
    gathers outgoing frames into one write per loop turn. ``drain`` waits while the peer is not reading."""

    def __init__(self, on_frame: OnFrame, on_lost: OnLost) -> None:
        self._on_frame = on_frame
        self._on_lost = on_lost
        self._buffer = bytearray()
        self._out: list[bytes] = []
        #: a run of STREAM_CHUNK frames with one same chunk, not written out yet: (chunk, stream ids)
        self._run: tuple[bytes, list[int]] | None = None
        self._transport: asyncio.Transport | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._loop = asyncio.get_running_loop()
        self.closed = False

    # -- asyncio.Protocol ----------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        size = len(buffer)
        position = 0
        with memoryview(buffer) as view:  # released before the buffer is trimmed
            while size - position >= 4:
                (length,) = _HEAD_LENGTH.unpack_from(buffer, position)
                end = position + 4 + length
                if end > size:
                    break
                _, stream, kind = _HEADER.unpack_from(buffer, position)
                self._on_frame(stream, Frame(kind), view[position + 9:end].tobytes())
                position = end
        if position:
            del buffer[:position]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._out.clear()
        self._run = None
        self._writable.set()  # nobody waits for a channel that is gone
        self._on_lost(exc)

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # -- sending -------------------------------------------------------------------------------------------
    def send(self, stream: int, kind: Frame, *parts: bytes) -> None:
        if self.closed:
            return
        if not self._out and self._run is None:
            self._loop.call_soon(self._flush)
        if kind is Frame.STREAM_CHUNK:
            chunk = parts[0]
            run = self._run
            if run is not None and (run[0] is chunk or run[0] == chunk):
                run[1].append(stream)
                return
            self._end_run()
            self._run = (chunk, [stream])
            return
        self._end_run()
        self._out.append(_HEADER.pack(5 + sum(len(p) for p in parts), stream, kind))
        self._out.extend(parts)

    def _end_run(self) -> None:
        """Queue the pending run of one chunk: a STREAM_CHUNK frame, or a SHARED_CHUNK for several streams."""
        if self._run is None:
            return
        chunk, streams = self._run
        self._run = None
        if len(streams) == 1:
            self._out += (_HEADER.pack(5 + len(chunk), streams[0], Frame.STREAM_CHUNK), chunk)
            return
        ids = struct.pack(f"!{len(streams) + 1}I", len(streams), *streams)
        self._out += (_HEADER.pack(5 + len(ids) + len(chunk), 0, Frame.SHARED_CHUNK), ids, chunk)

    def _flush(self) -> None:
        self._end_run()
        if self._out and self._transport is not None and not self.closed:
            self._transport.writelines(self._out)
        self._out = []

    async def drain(self) -> None:
        """Return once the peer reads again (at once unless the socket's buffer is full)."""
        await self._writable.wait()

    def close(self) -> None:
        if self._transport is not None and not self.closed:
            self._flush()
            self._transport.close()


@dataclass(frozen=True)
class WorkerOptions:
    """What a worker process is told on its command line (one JSON argument)."""

    listen_fd: int
    """The API server's listening socket."""

    channel_fd: int
    """This worker's end of its socket pair."""

    parent: int
    """The API server's process id."""

    private_path: str
    """The API server's private listener (a Unix socket) for requests that change protocol."""

    shutdown_timeout_seconds: float = 10.0
    """How long requests in flight may take to finish when the worker stops."""

    def encode(self) -> str:
        return orjson.dumps(self.__dict__).decode()

    @classmethod
    def decode(cls, text: str) -> "WorkerOptions":
        fields: dict[str, Any] = orjson.loads(text)
        return cls(**fields)
