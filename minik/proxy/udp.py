"""The UDP forwarder of one service port: listeners as for TCP (portal and node port, open only while there are
ready endpoints, so that a datagram to a service without any gets the kernel's port unreachable), and one session
per client address: a socket connected to the endpoint the client got, whose replies go back to the client from
the listener, until the session has been idle for ``idle_seconds``.

A listener is bound to every address, so a reply must leave from the address the client's datagram arrived at
(after the NAT redirect: 127.0.0.1 for the node itself, the bridge's address for a pod); otherwise conntrack does
not recognise it and the client never sees it. The listener reads each datagram's destination (IP_PKTINFO) and
replies from it, with plain ``recvmsg``/``sendmsg`` on the loop's reader, since asyncio's datagram transports
carry no ancillary data.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import socket
import struct
import time
from typing import Any, cast

import structlog

from minik.proxy.balancer import RoundRobin
from minik.proxy.servicemap import Endpoint, ServicePort

log = structlog.get_logger("minik.proxy")

Address = tuple[Any, ...]

#: datagrams a session holds while its upstream socket is being made
MAX_PENDING = 64
IP_PKTINFO = getattr(socket, "IP_PKTINFO", 8)
_PKTINFO = struct.Struct("i4s4s")  # struct in_pktinfo: ifindex, spec_dst, addr


class Listener:
    """A UDP socket on ``(bind, port)`` that hands each datagram, its sender and the address it was sent to to
    ``forwarder.datagram``, and replies from that address."""

    def __init__(self, forwarder: UdpForwarder, bind: str, port: int) -> None:
        self.forwarder = forwarder
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.sock.setblocking(False)
            self.sock.setsockopt(socket.SOL_IP, IP_PKTINFO, 1)
            self.sock.bind((bind, port))
        except OSError:
            self.sock.close()
            raise
        self.port = int(self.sock.getsockname()[1])
        self.closed = False
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.sock.fileno(), self._readable)

    def _readable(self) -> None:
        for _ in range(64):  # a bounded batch, then let the loop run other things
            try:
                data, ancillary, _flags, sender = self.sock.recvmsg(65535, socket.CMSG_SPACE(_PKTINFO.size))
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                log.debug("udp listener read failed", error=str(exc))
                return
            local = ""
            for level, kind, cdata in ancillary:
                if level == socket.SOL_IP and kind == IP_PKTINFO and len(cdata) >= _PKTINFO.size:
                    local = socket.inet_ntoa(_PKTINFO.unpack(cdata[:_PKTINFO.size])[2])
            self.forwarder.datagram(self, data, sender, local)

    def sendto(self, data: bytes, client: Address, local: str) -> None:
        if self.closed:
            return
        ancillary = [(socket.SOL_IP, IP_PKTINFO, _PKTINFO.pack(0, socket.inet_aton(local), bytes(4)))] if local else []
        try:
            self.sock.sendmsg([data], ancillary, 0, client)
        except OSError as exc:  # a full buffer drops the datagram, as UDP does
            log.debug("udp reply dropped", error=str(exc))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._loop.remove_reader(self.sock.fileno())
            self.sock.close()


class _Session:
    def __init__(self, listener: Listener, client: Address, local: str, endpoint: Endpoint) -> None:
        self.listener = listener
        self.client = client
        self.local = local
        self.endpoint = endpoint
        self.upstream: asyncio.DatagramTransport | None = None
        self.pending: list[bytes] = []
        self.last_used = time.monotonic()
        self.closed = False

    def send(self, data: bytes) -> None:
        self.last_used = time.monotonic()
        if self.upstream is not None:
            self.upstream.sendto(data)
        elif len(self.pending) < MAX_PENDING:
            self.pending.append(data)

    def connected(self, transport: asyncio.DatagramTransport) -> None:
        self.upstream = transport
        for data in self.pending:
            transport.sendto(data)
        self.pending.clear()

    def reply(self, data: bytes) -> None:
        self.last_used = time.monotonic()
        self.listener.sendto(data, self.client, self.local)

    def close(self) -> None:
        self.closed = True
        if self.upstream is not None:
            self.upstream.close()


class _Upstream(asyncio.DatagramProtocol):
    def __init__(self, forwarder: UdpForwarder, session: _Session) -> None:
        self.forwarder = forwarder
        self.session = session

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.session.connected(cast(asyncio.DatagramTransport, transport))  # 3.11's UDP transport is no subclass

    def datagram_received(self, data: bytes, addr: Address) -> None:
        self.session.reply(data)

    def error_received(self, exc: Exception) -> None:
        # the endpoint's port is unreachable: the client's next datagram picks an endpoint afresh
        self.forwarder.balancer.failed(str(self.session.client[0]), self.session.endpoint)
        self.forwarder.drop(self.session)


class UdpForwarder:
    """One UDP service port: the portal and node port listeners and a session per client."""

    def __init__(self, port: ServicePort, balancer: RoundRobin, *, portal: bool, bind: str = "0.0.0.0",
                 idle_seconds: float = 30.0) -> None:
        self.port = port
        self.balancer = balancer
        self.wants_portal = portal
        self.bind = bind
        self.idle_seconds = idle_seconds
        self.portal_port = 0
        self.portal: Listener | None = None
        self.node_server: Listener | None = None
        self.node_port_error = ""
        self.sessions: dict[tuple[int, Address], _Session] = {}
        self._connecting: set[asyncio.Task[Any]] = set()
        self.log = log.bind(service=str(port.key), protocol="UDP")

    @property
    def listening(self) -> bool:
        return self.portal is not None or self.node_server is not None

    async def sync(self) -> None:
        if self.wants_portal and (self.portal is None and (self.balancer or not self.portal_port)):
            if self.portal_port:
                try:
                    self.portal = Listener(self, self.bind, self.portal_port)
                except OSError:
                    self.portal = None
            if self.portal is None:
                self.portal = Listener(self, self.bind, 0)
                self.portal_port = self.portal.port
        if not self.balancer:
            self.close_listeners()
            return
        if self.port.node_port and self.node_server is None:
            try:
                self.node_server = Listener(self, self.bind, self.port.node_port)
                self.node_port_error = ""
            except OSError as exc:
                message = "in use by another process" if exc.errno == errno.EADDRINUSE else str(exc)
                if message != self.node_port_error:
                    self.log.warning("cannot listen on the node port; retrying", node_port=self.port.node_port,
                                     error=message)
                self.node_port_error = message

    def datagram(self, listener: Listener, data: bytes, client: Address, local: str) -> None:
        key = (id(listener), client)
        session = self.sessions.get(key)
        if session is not None and session.endpoint not in self.balancer.endpoints:
            self.drop(session)  # its endpoint went away: pick a new one
            session = None
        if session is None:
            endpoint = next(self.balancer.candidates(str(client[0])), None)
            if endpoint is None:
                return
            session = self.sessions[key] = _Session(listener, client, local, endpoint)
            loop = asyncio.get_running_loop()
            # a connected UDP socket is made at once (no handshake), but through the loop's coroutine API
            connect = loop.create_datagram_endpoint(functools.partial(_Upstream, self, session),
                                                    remote_addr=(endpoint.ip, endpoint.port))
            task = loop.create_task(connect, name="proxy udp session")
            self._connecting.add(task)  # awaited by close(); its outcome is handled by _made
            task.add_done_callback(functools.partial(self._made, session=session))
        session.send(data)

    def _made(self, task: asyncio.Task[Any], session: _Session) -> None:
        self._connecting.discard(task)
        if task.cancelled() or task.exception() is not None:
            if not task.cancelled():
                self.log.debug("cannot reach the endpoint", endpoint=str(session.endpoint), error=str(task.exception()))
            self.drop(session)
            return
        if session.closed:  # dropped while its socket was being made
            task.result()[0].close()

    def drop(self, session: _Session) -> None:
        session.close()
        for key in [k for k, s in self.sessions.items() if s is session]:
            del self.sessions[key]

    def expire(self) -> None:
        """End sessions idle for longer than ``idle_seconds``."""
        cutoff = time.monotonic() - self.idle_seconds
        for session in [s for s in self.sessions.values() if s.last_used < cutoff]:
            self.drop(session)

    def close_listeners(self) -> None:
        for listener in (self.portal, self.node_server):
            if listener is not None:
                listener.close()
        self.portal = self.node_server = None

    async def close(self) -> None:
        self.close_listeners()
        for session in list(self.sessions.values()):
            self.drop(session)
        if self._connecting:  # sockets being made: they close themselves when they see their session closed
            await asyncio.wait(list(self._connecting))
