"""The node's cluster DNS server: UDP and TCP on one port, on the loopback address and the addresses of the
machine's bridge interfaces (where container networks attach), so that pods reach it but other machines do not
(it forwards, and must not be an open resolver).

Queries for the cluster zone are answered from the proxy's caches (minik.proxy.dnszone); every other query is
forwarded as it is to the node's own resolvers (the nameservers of /etc/resolv.conf), over the same transport,
and the answer relayed. Pods reach the server through the ``kube-dns`` Service's cluster IP, which the proxy
redirects to this port.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import functools
import os
import socket
import struct
from collections.abc import Sequence
from typing import cast

import structlog
from dnslib import QTYPE, RCODE, DNSError, DNSRecord

from minik.aio import stop_task
from minik.proxy.dnszone import ClusterZone

log = structlog.get_logger("minik.proxy.dns")

UDP_LIMIT = 512
"""The size of a UDP answer to a query without EDNS; a longer answer is sent truncated (the client asks over TCP)."""
TCP_IDLE_SECONDS = 10.0
SIOCGIFADDR = 0x8915


Upstream = tuple[str, int]


def resolv_conf_nameservers(path: str = "/etc/resolv.conf") -> list[Upstream]:
    """The nameservers of a resolv.conf, as (address, 53)."""
    servers: list[Upstream] = []
    try:
        with open(path) as conf:
            for line in conf:
                parts = line.split()
                if len(parts) >= 2 and parts[0] == "nameserver":
                    servers.append((parts[1], 53))
    except OSError:
        pass
    return servers


def bridge_addresses() -> list[str]:
    """The IPv4 address of every bridge interface of this machine (docker0, br-...)."""
    found = []
    for _, name in socket.if_nameindex():
        if not os.path.isdir(f"/sys/class/net/{name}/bridge"):
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                packed = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue  # a bridge without an IPv4 address
        found.append(socket.inet_ntoa(packed[20:24]))
    return found


def _udp_limit(request: DNSRecord) -> int:
    for rr in request.ar:
        if rr.rtype == QTYPE.OPT:
            return max(UDP_LIMIT, int(rr.rclass))
    return UDP_LIMIT


def _truncated(request: DNSRecord, reply: DNSRecord) -> bytes:
    short = request.reply()
    short.header.rcode = reply.header.rcode
    short.header.tc = 1
    return short.pack()


def _servfail(data: bytes) -> bytes | None:
    try:
        request = DNSRecord.parse(data)
    except DNSError:
        return None
    reply = request.reply()
    reply.header.rcode = RCODE.SERVFAIL
    return reply.pack()


def _same(protocol: _Once) -> _Once:
    return protocol


class _Once(asyncio.DatagramProtocol):
    """One UDP exchange with an upstream resolver."""

    def __init__(self, query_id: bytes) -> None:
        self.query_id = query_id
        self.answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if data[:2] == self.query_id and not self.answer.done():
            self.answer.set_result(data)

    def error_received(self, exc: Exception) -> None:
        if not self.answer.done():
            self.answer.set_exception(exc)


class _UdpServer(asyncio.DatagramProtocol):
    def __init__(self, server: DnsServer) -> None:
        self.server = server
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)  # 3.11's UDP transport is not a subclass

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if self.transport is not None:
            self.server.udp_query(self.transport, data, addr)


class DnsServer:
    def __init__(self, zone: ClusterZone, upstreams: Sequence[Upstream], addresses: Sequence[str], *, port: int = 0,
                 timeout_seconds: float = 2.0) -> None:
        self.zone = zone
        self.upstreams = list(upstreams)
        self.addresses = list(addresses)
        self.port = port
        self.timeout_seconds = timeout_seconds
        self._udp: list[asyncio.DatagramTransport] = []
        self._tcp: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()

    # -- life --------------------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Listen on every address, UDP and TCP, on one port (``port``, or the first one free everywhere)."""
        for _ in range(20):
            try:
                await self._bind(self.port)
                log.info("cluster DNS listening", addresses=self.addresses, port=self.port,
                         upstreams=[f"{host}:{port}" for host, port in self.upstreams], domain=self.zone.domain)
                return
            except OSError as exc:
                self._close_listeners()
                if exc.errno != errno.EADDRINUSE or self.port:
                    raise
        raise OSError(errno.EADDRINUSE, "no port free on every DNS address")

    async def _bind(self, port: int) -> None:
        loop = asyncio.get_running_loop()
        for address in self.addresses:
            transport, _ = await loop.create_datagram_endpoint(lambda: _UdpServer(self), local_addr=(address, port))
            self._udp.append(transport)
            port = port or int(transport.get_extra_info("sockname")[1])
            self._tcp.append(await asyncio.start_server(self._tcp_client, address, port, reuse_address=True))
        self.port = port

    def _close_listeners(self) -> None:
        for transport in self._udp:
            transport.close()
        for server in self._tcp:
            server.close()
        self._udp.clear()
        self._tcp.clear()

    async def stop(self) -> None:
        self._close_listeners()
        for task in list(self._tasks):
            await stop_task(task)
        self._tasks.clear()

    def _track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- answering ---------------------------------------------------------------------------------------------
    def local_answer(self, data: bytes) -> tuple[DNSRecord, DNSRecord] | None:
        """(request, reply) for a query the zone answers; None for one to forward (or that cannot be parsed)."""
        try:
            request = DNSRecord.parse(data)
        except DNSError:
            return None
        reply = self.zone.answer(request)
        return (request, reply) if reply is not None else None

    def udp_query(self, transport: asyncio.DatagramTransport, data: bytes, addr: tuple[str, int]) -> None:
        local = self.local_answer(data)
        if local is not None:
            request, reply = local
            packed = reply.pack()
            transport.sendto(packed if len(packed) <= _udp_limit(request) else _truncated(request, reply), addr)
            return
        task = asyncio.get_running_loop().create_task(self._forward_udp(transport, data, addr), name="dns forward")
        self._track(task)

    async def _forward_udp(self, transport: asyncio.DatagramTransport, data: bytes, addr: tuple[str, int]) -> None:
        loop = asyncio.get_running_loop()
        for upstream in self.upstreams:
            exchange: asyncio.DatagramTransport | None = None
            try:
                protocol = _Once(data[:2])
                exchange, _ = await loop.create_datagram_endpoint(functools.partial(_same, protocol), remote_addr=upstream)
                exchange.sendto(data)
                answer = await asyncio.wait_for(protocol.answer, self.timeout_seconds)
            except (OSError, TimeoutError) as exc:
                log.debug("upstream resolver did not answer", upstream=f"{upstream[0]}:{upstream[1]}",
                          error=str(exc) or type(exc).__name__)
                continue
            finally:
                if exchange is not None:
                    exchange.close()
            if not transport.is_closing():
                transport.sendto(answer, addr)
            return
        failed = _servfail(data)
        if failed is not None and not transport.is_closing():
            transport.sendto(failed, addr)

    async def _tcp_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._track(task)  # so that stop() ends the connections too
        try:
            while True:
                async with asyncio.timeout(TCP_IDLE_SECONDS):
                    size = int.from_bytes(await reader.readexactly(2), "big")
                    data = await reader.readexactly(size)
                local = self.local_answer(data)
                answer = local[1].pack() if local is not None else await self._forward_tcp(data)
                writer.write(len(answer).to_bytes(2, "big") + answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            pass
        finally:
            writer.close()

    async def _forward_tcp(self, data: bytes) -> bytes:
        for upstream in self.upstreams:
            try:
                async with asyncio.timeout(self.timeout_seconds):
                    reader, writer = await asyncio.open_connection(*upstream)
                    try:
                        writer.write(len(data).to_bytes(2, "big") + data)
                        size = int.from_bytes(await reader.readexactly(2), "big")
                        return await reader.readexactly(size)
                    finally:
                        writer.close()
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
                log.debug("upstream resolver did not answer", upstream=f"{upstream[0]}:{upstream[1]}",
                          error=str(exc) or type(exc).__name__)
        return _servfail(data) or b""
