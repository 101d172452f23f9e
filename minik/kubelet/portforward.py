"""The kubelet's side of pods/portforward: one WebSocket (``minik.api.portforward``'s channel protocols), one TCP
connection to the pod's IP per port asked for, bytes relayed both ways until both sides are done."""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field

import structlog
from aiohttp import WSMsgType, web

from minik.aio import start_task, stop_task
from minik.api import portforward as pf

log = structlog.get_logger("minik.kubelet.portforward")

_CONNECT_SECONDS = 10.0
_READ_BYTES = 256 * 1024


@dataclass
class _Port:
    index: int
    port: int
    writer: asyncio.StreamWriter | None = None
    reader_task: asyncio.Task[None] | None = None
    pod_done: bool = False  # the pod's side ended (or never opened)
    client_done: bool = False  # the caller's side ended (half-close, or failure)
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def data(self) -> int:
        return 2 * self.index

    @property
    def error(self) -> int:
        return 2 * self.index + 1


class PortForwardSession:
    """Relays one WebSocket to the pod's ports."""

    def __init__(self, socket: web.WebSocketResponse, address: str, ports: list[int], where: str) -> None:
        self.socket = socket
        self.address = address
        self.ports = [_Port(i, p) for i, p in enumerate(ports)]
        self.where = where
        self.half_close = socket.ws_protocol == pf.MINIK
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
            why = os.strerror(exc.errno).lower() if isinstance(exc, OSError) and exc.errno else "i/o timeout"
            message = f"failed to connect to {self.address}:{port.port} in pod {self.where}: dial tcp " \
                      f"{self.address}:{port.port}: connect: {why}"
            log.info("port-forward connect failed", pod=self.where, port=port.port, error=message)
            if not self.socket.closed:
                await self.socket.send_bytes(bytes((port.error,)) + message.encode())
            port.pod_done = port.client_done = True
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
        port.pod_done = True
        if self.half_close and not self.socket.closed:
            with contextlib.suppress(ConnectionError):
                await self.socket.send_bytes(bytes((pf.CLOSE, port.data)))
        if not self.half_close:
            port.client_done = True  # no way to say the pod's side ended but closing the port
        self._check_done()

    async def _from_client(self) -> None:
        by_channel = {port.data: port for port in self.ports}
        async for message in self.socket:
            if message.type != WSMsgType.BINARY or not message.data:
                continue
            payload: bytes = message.data
            channel = payload[0]
            if channel == pf.CLOSE and self.half_close and len(payload) > 1:
                port = by_channel.get(payload[1])
                if port is not None:
                    await port.ready.wait()
                    port.client_done = True
                    if port.writer is not None and port.writer.can_write_eof():
                        with contextlib.suppress(OSError):
                            port.writer.write_eof()
                    self._check_done()
                continue
            port = by_channel.get(channel)
            if port is None or len(payload) == 1:
                continue
            await port.ready.wait()
            if port.writer is None or port.client_done:
                continue
            try:
                port.writer.write(payload[1:])
                await port.writer.drain()
            except (OSError, ConnectionError):
                port.client_done = True
                self._check_done()

    def _check_done(self) -> None:
        if all(port.pod_done and port.client_done for port in self.ports):
            self.finished.set()
