"""The TCP forwarder of one service port: its listeners (the portal the cluster IP is redirected to, and the node
port) and its connections, each a client transport piped to an endpoint's transport with asyncio protocols (no
task per direction, back-pressure through pause/resume reading, half-close passed on).

A listener is open only while the service port has ready endpoints: without any, a connection is refused by the
kernel at once (a reset), not accepted and then dropped.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import struct
from typing import cast

import structlog

from minik.aio import start_task, stop_task
from minik.proxy.balancer import RoundRobin
from minik.proxy.servicemap import ServicePort

log = structlog.get_logger("minik.proxy")

#: how many connections a listener keeps waiting for accept
BACKLOG = 1024


def reset(transport: asyncio.Transport) -> None:
    """Close a TCP connection with a reset (SO_LINGER 0), as a refused connection would end."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()


class _Connection:
    """One proxied connection: the accepted client transport and, once connected, the endpoint's transport."""

    def __init__(self, forwarder: TcpForwarder) -> None:
        self.forwarder = forwarder
        self.client: asyncio.Transport | None = None
        self.upstream: asyncio.Transport | None = None
        self.connecting: asyncio.Task[None] | None = None
        self.early: list[bytes] = []
        """What the client sent before the endpoint's connection was made."""
        self.client_eof = False
        self.upstream_eof = False
        self.closed = False

    def accepted(self, transport: asyncio.Transport) -> None:
        self.client = transport
        transport.pause_reading()  # nothing is read until the endpoint is connected
        peer = transport.get_extra_info("peername")
        self.forwarder.connections.add(self)
        self.connecting = start_task(self._connect(str(peer[0]) if peer else ""), "proxy connect")

    async def _connect(self, client_ip: str) -> None:
        forwarder = self.forwarder
        loop = asyncio.get_running_loop()
        for i, endpoint in enumerate(forwarder.balancer.candidates(client_ip)):
            try:
                async with asyncio.timeout(forwarder.connect_timeout_seconds):
                    await loop.create_connection(lambda: _UpstreamSide(self), endpoint.ip, endpoint.port)
            except (OSError, TimeoutError) as exc:
                forwarder.balancer.failed(client_ip, endpoint)
                forwarder.log.debug("endpoint did not answer; trying the next", endpoint=str(endpoint),
                                    error=str(exc) or type(exc).__name__)
                if self.closed:
                    return
                continue
            if i:
                forwarder.balancer.chosen(client_ip, endpoint)
            if self.closed:  # the client went away while we connected
                if self.upstream is not None:
                    self.upstream.close()
                return
            if self.upstream is not None and self.early:
                self.upstream.write(b"".join(self.early))
                self.early.clear()
            if self.client_eof and self.upstream is not None and self.upstream.can_write_eof():
                self.upstream.write_eof()
            elif self.client is not None:
                self.client.resume_reading()
            return
        forwarder.log.debug("no endpoint answered; resetting the connection", client=client_ip)
        if self.client is not None:
            reset(self.client)
        self.close()

    # -- the two sides -----------------------------------------------------------------------------------------
    def client_data(self, data: bytes) -> None:
        if self.upstream is None:  # before the endpoint answered (uvloop may read before our pause holds)
            self.early.append(data)
            if self.client is not None:
                self.client.pause_reading()
        elif not self.upstream.is_closing():
            self.upstream.write(data)

    def upstream_data(self, data: bytes) -> None:
        if self.client is not None and not self.client.is_closing():
            self.client.write(data)

    def eof_from_client(self) -> bool:
        self.client_eof = True
        if self.upstream is None:
            return True  # passed on once the endpoint's connection is made
        return self._half_close(self.upstream, both=self.upstream_eof)

    def eof_from_upstream(self) -> bool:
        self.upstream_eof = True
        return self._half_close(self.client, both=self.client_eof)

    def _half_close(self, other: asyncio.Transport | None, both: bool) -> bool:
        """Pass an EOF on to the other side; keep the transport open (True) until both sides have ended."""
        if both or other is None or other.is_closing() or not other.can_write_eof():
            self.close()
            return False
        other.write_eof()
        return True

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for transport in (self.client, self.upstream):
            if transport is not None and not transport.is_closing():
                transport.close()  # sends what is still buffered, then FIN
        self.forwarder.connections.discard(self)
        if self.connecting is not None and not self.connecting.done() and \
                self.connecting is not asyncio.current_task():
            self.connecting.cancel()

    def abort(self) -> None:
        for transport in (self.client, self.upstream):
            if transport is not None:
                transport.abort()
        self.close()


class _ClientSide(asyncio.Protocol):
    def __init__(self, forwarder: TcpForwarder) -> None:
        self.conn = _Connection(forwarder)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.conn.accepted(cast(asyncio.Transport, transport))  # uvloop's transports are no subclasses

    def data_received(self, data: bytes) -> None:
        self.conn.client_data(data)

    def eof_received(self) -> bool:
        return self.conn.eof_from_client()

    def pause_writing(self) -> None:  # the client reads slower than the endpoint writes
        if self.conn.upstream is not None:
            self.conn.upstream.pause_reading()

    def resume_writing(self) -> None:
        if self.conn.upstream is not None:
            self.conn.upstream.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.conn.close()


class _UpstreamSide(asyncio.Protocol):
    def __init__(self, conn: _Connection) -> None:
        self.conn = conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.conn.upstream = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.conn.upstream_data(data)

    def eof_received(self) -> bool:
        return self.conn.eof_from_upstream()

    def pause_writing(self) -> None:  # the endpoint reads slower than the client writes
        if self.conn.client is not None:
            self.conn.client.pause_reading()

    def resume_writing(self) -> None:
        if self.conn.client is not None:
            self.conn.client.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.conn.close()


class TcpForwarder:
    """One TCP service port: listeners on the portal (any free port, for the cluster IP's redirect) and on the
    node port, and the connections they took."""

    def __init__(self, port: ServicePort, balancer: RoundRobin, *, portal: bool, bind: str = "0.0.0.0",
                 connect_timeout_seconds: float = 5.0) -> None:
        self.port = port
        self.balancer = balancer
        self.wants_portal = portal
        self.bind = bind
        self.connect_timeout_seconds = connect_timeout_seconds
        self.portal_port = 0
        """The portal's port; kept while the portal is closed, so that the redirect rule need not change."""
        self.portal: asyncio.Server | None = None
        self.node_server: asyncio.Server | None = None
        self.node_port_error = ""
        self.connections: set[_Connection] = set()
        self.log = log.bind(service=str(port.key), protocol="TCP")

    @property
    def listening(self) -> bool:
        return self.portal is not None or self.node_server is not None

    async def _serve(self, port: int) -> asyncio.Server:
        loop = asyncio.get_running_loop()
        return await loop.create_server(lambda: _ClientSide(self), self.bind, port, reuse_address=True,
                                        backlog=BACKLOG)

    async def sync(self) -> None:
        """Listen while there are ready endpoints, refuse (no listener) while there are none. The portal's port
        is chosen at the first sync even without endpoints, so that the cluster IP is redirected (and refused
        there) from the start."""
        if self.wants_portal and (self.portal is None and (self.balancer or not self.portal_port)):
            await self._open_portal()
        if not self.balancer:
            self.close_listeners()
            return
        if self.port.node_port and self.node_server is None:
            try:
                self.node_server = await self._serve(self.port.node_port)
                self.node_port_error = ""
            except OSError as exc:
                message = "in use by another process" if exc.errno == errno.EADDRINUSE else str(exc)
                if message != self.node_port_error:
                    self.log.warning("cannot listen on the node port; retrying", node_port=self.port.node_port,
                                     error=message)
                self.node_port_error = message

    async def _open_portal(self) -> None:
        if self.portal_port:
            try:
                self.portal = await self._serve(self.portal_port)
                return
            except OSError:
                self.log.info("the portal's port was taken meanwhile; choosing another", port=self.portal_port)
        self.portal = await self._serve(0)
        self.portal_port = int(self.portal.sockets[0].getsockname()[1])

    def close_listeners(self) -> None:
        """Stop listening (new connections are refused); connections in flight carry on."""
        for server in (self.portal, self.node_server):
            if server is not None:
                server.close()
        self.portal = self.node_server = None

    async def close(self) -> None:
        """Stop listening and end every connection."""
        self.close_listeners()
        tasks = [c.connecting for c in self.connections if c.connecting is not None]
        for conn in list(self.connections):
            conn.abort()
        for task in tasks:
            await stop_task(task)
