"""The kubelet's side of pods/portforward: a WebSocket (``minik.api.portforward``'s protocols) whose connections
are TCP connections to the pod's IP, bytes relayed both ways until both sides are done.

``ChannelSession`` serves the channel protocol (v4.channel.k8s.io: one connection per port asked for, the socket
closes when they are done); ``MultiplexSession`` serves portforward.minik.io (connections opened and closed by
the API server, one per connection of a kubectl session, their records batched per turn of the event loop)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field

import structlog
from aiohttp import WSMsgType, web

from minik.aio import start_task, stop_task
from minik.aio.batch import Batcher
from minik.api import portforward as pf

log = structlog.get_logger("minik.kubelet.portforward")

_CONNECT_SECONDS = 10.0
_READ_BYTES = 256 * 1024
#: bytes waiting for a pod to read before the session waits for it
_PAUSE_BYTES = 1 << 20


@dataclass
class _Port:
    index: int
    port: int
    writer: asyncio.StreamWriter | None = None
    reader_task: asyncio.Task[None] | None = None
    done: bool = False  # either side ended (the channel protocol has no half-close), or the dial failed
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def data(self) -> int:
        return 2 * self.index

    @property
    def error(self) -> int:
        return 2 * self.index + 1


class ChannelSession:
    """Relays one WebSocket in the channel protocol to the pod's ports."""

    def __init__(self, socket: web.WebSocketResponse, address: str, ports: list[int], where: str) -> None:
        self.socket = socket
        self.address = address
        self.ports = [_Port(i, p) for i, p in enumerate(ports)]
        self.where = where
        self.finished = asyncio.Event()

    async def run(self) -> None:
        for port in self.ports:
            prefix = pf.port_prefix(port.port)
            await self.socket.send_bytes(bytes((port.data,)) + prefix)
            await self.socket.send_bytes(bytes((port.error,)) + prefix)
        connects = [start_task(self._connect(port), "port-forward connect") for port in self.ports]
        receiver = start_task(self._from_client(), "port-forward from client")
        done = start_task(self.finished.wait(), "port-forward done")
        try:
            await asyncio.wait([receiver, done], return_when=asyncio.FIRST_COMPLETED)
        finally:
            await stop_task(done)
            await stop_task(receiver)
            for task in connects:
                await stop_task(task)
            for port in self.ports:
                await stop_task(port.reader_task)
                if port.writer is not None:
                    port.writer.close()
            await self.socket.close()

    async def _connect(self, port: _Port) -> None:
        try:
            async with asyncio.timeout(_CONNECT_SECONDS):
                reader, writer = await asyncio.open_connection(self.address, port.port)
        except (OSError, TimeoutError) as exc:
            message = dial_error(self.address, port.port, self.where, exc)
            log.info("port-forward connect failed", pod=self.where, port=port.port, error=message)
            if not self.socket.closed:
                await self.socket.send_bytes(bytes((port.error,)) + message.encode())
            port.done = True
            port.ready.set()
            self._check_done()
            return
        port.writer = writer
        port.ready.set()
        port.reader_task = start_task(self._from_pod(port, reader), "port-forward from pod")

    async def _from_pod(self, port: _Port, reader: asyncio.StreamReader) -> None:
        head = bytes((port.data,))
        try:
            while chunk := await reader.read(_READ_BYTES):
                if self.socket.closed:
                    return
                await self.socket.send_bytes(head + chunk)
        except (OSError, ConnectionError):
            pass
        port.done = True
        self._check_done()

    async def _from_client(self) -> None:
        by_channel = {port.data: port for port in self.ports}
        async for message in self.socket:
            if message.type != WSMsgType.BINARY or not message.data:
                continue
            payload: bytes = message.data
            port = by_channel.get(payload[0])
            if port is None or len(payload) == 1:
                continue
            await port.ready.wait()
            if port.writer is None or port.done:
                continue
            try:
                port.writer.write(payload[1:])
                await port.writer.drain()
            except (OSError, ConnectionError):
                port.done = True
                self._check_done()

    def _check_done(self) -> None:
        if all(port.done for port in self.ports):
            self.finished.set()


def dial_error(address: str, port: int, where: str, exc: BaseException) -> str:
    """Why the pod could not be reached, worded as Go's dialer words it."""
    why = os.strerror(exc.errno).lower() if isinstance(exc, OSError) and exc.errno else "i/o timeout"
    return f"failed to connect to {address}:{port} in pod {where}: dial tcp {address}:{port}: connect: {why}"


@dataclass
class _Connection:
    id: int
    port: int
    writer: asyncio.StreamWriter | None = None
    #: what the client sent before the pod answered (None: the client's EOF)
    pending: list[bytes | None] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    client_done: asyncio.Event = field(default_factory=asyncio.Event)


class MultiplexSession:
    """Relays one portforward.minik.io WebSocket: the API server's connections to the pod's ports."""

    def __init__(self, socket: web.WebSocketResponse, address: str, where: str) -> None:
        self.socket = socket
        self.address = address
        self.where = where
        self.connections: dict[int, _Connection] = {}
        self.out = Batcher(socket.send_bytes, "port-forward to the API server")

    async def run(self) -> None:
        try:
            async for message in self.socket:
                if message.type != WSMsgType.BINARY:
                    continue
                for kind, id_, payload in pf.records(message.data):
                    await self._record(kind, id_, payload)
        finally:
            for connection in list(self.connections.values()):
                await self._drop(connection)
            await self.out.close()
            await self.socket.close()

    async def _record(self, kind: int, id_: int, payload: bytes) -> None:
        if kind == pf.OPEN:
            if id_ in self.connections or len(payload) < 2:
                return
            opened = self.connections[id_] = _Connection(id_, int.from_bytes(payload[:2], "big"))
            opened.task = start_task(self._serve(opened), "port-forward connection")
            return
        connection = self.connections.get(id_)
        if connection is None:
            return
        if kind == pf.DATA and payload:
            writer = connection.writer
            if writer is None:
                connection.pending.append(payload)
                return
            try:
                writer.write(payload)
                if writer.transport.get_write_buffer_size() > _PAUSE_BYTES:
                    await writer.drain()  # a pod that does not read holds up the session's other connections
            except (OSError, ConnectionError):
                pass  # the pod went away: its reader ends the connection
        elif kind == pf.EOF:
            if connection.writer is None:
                connection.pending.append(None)
            else:
                self._client_eof(connection)
        elif kind == pf.CLOSE:
            await self._drop(connection)

    def _client_eof(self, connection: _Connection) -> None:
        connection.client_done.set()
        writer = connection.writer
        if writer is not None and writer.can_write_eof():
            with contextlib.suppress(OSError):
                writer.write_eof()

    async def _serve(self, connection: _Connection) -> None:
        id_ = connection.id
        try:
            async with asyncio.timeout(_CONNECT_SECONDS):
                reader, writer = await asyncio.open_connection(self.address, connection.port)
        except (OSError, TimeoutError) as exc:
            message = dial_error(self.address, connection.port, self.where, exc)
            log.info("port-forward connect failed", pod=self.where, port=connection.port, error=message)
            self.out.add(pf.record(pf.ERROR, id_, message.encode()) + pf.record(pf.CLOSE, id_))
            self.connections.pop(id_, None)
            return
        connection.writer = writer
        try:
            for piece in connection.pending:
                if piece is None:
                    self._client_eof(connection)
                else:
                    writer.write(piece)
            connection.pending.clear()
            try:
                while chunk := await reader.read(_READ_BYTES):
                    self.out.add(pf.record(pf.DATA, id_, chunk))
                    await self.out.room()
            except (OSError, ConnectionError):
                pass
            self.out.add(pf.record(pf.EOF, id_))
            await connection.client_done.wait()  # the client may still be sending
            self.out.add(pf.record(pf.CLOSE, id_))
        finally:
            writer.close()
            self.connections.pop(id_, None)

    async def _drop(self, connection: _Connection) -> None:
        self.connections.pop(connection.id, None)
        if connection.task is not None and connection.task is not asyncio.current_task():
            await stop_task(connection.task)
