"""Shared by the proxy tests: endpoints to proxy to (real servers on loopback addresses), a client that reads what
one connection gets, an upstream DNS server, Service and Endpoints bodies, and polling."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from dnslib import EDNS0, QTYPE, RR, A, DNSRecord

Obj = dict[str, Any]
T = TypeVar("T")


class Backends:
    """TCP servers on 127.0.0.2, 127.0.0.3... all on one port (an Endpoints subset has one port for all its
    addresses). Each answers a connection with its own address and closes it, or, in echo mode, sends back
    everything it reads until the client's EOF."""

    def __init__(self) -> None:
        self.servers: list[asyncio.Server] = []
        self.udp: list[asyncio.DatagramTransport] = []
        self.port = 0

    async def start(self, count: int, *, echo: bool = False) -> list[str]:
        ips = [f"127.0.0.{2 + len(self.servers) + i}" for i in range(count)]
        for ip in ips:
            self.servers.append(await asyncio.start_server(self._echo if echo else self._name, ip, self.port))
            self.port = self.port or int(self.servers[-1].sockets[0].getsockname()[1])
        return ips

    async def start_udp(self, count: int) -> list[str]:
        """UDP servers that answer each datagram with their address."""
        loop = asyncio.get_running_loop()
        ips = [f"127.0.0.{2 + len(self.udp) + i}" for i in range(count)]
        for ip in ips:
            transport, _ = await loop.create_datagram_endpoint(lambda ip=ip: _UdpName(ip), local_addr=(ip, self.port))
            self.udp.append(transport)  # type: ignore[arg-type]
            self.port = self.port or int(transport.get_extra_info("sockname")[1])
        return ips

    @staticmethod
    async def _name(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(str(writer.get_extra_info("sockname")[0]).encode())
        await writer.drain()
        writer.close()

    @staticmethod
    async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def close(self) -> None:
        for server in self.servers:
            server.close()
            await server.wait_closed()
        for transport in self.udp:
            transport.close()


class _UdpName(asyncio.DatagramProtocol):
    def __init__(self, ip: str) -> None:
        self.ip = ip
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.transport.sendto(self.ip.encode(), addr)


async def fetch(host: str, port: int, timeout: float = 5.0) -> str:
    """Connect, read until the server closes, return what it sent."""
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(host, port)
        try:
            return (await reader.read()).decode()
        finally:
            writer.close()


async def refused(host: str, port: int) -> bool:
    """True when a connection is refused at once (not accepted, not left to time out)."""
    try:
        async with asyncio.timeout(2.0):
            _, writer = await asyncio.open_connection(host, port)
    except ConnectionRefusedError:
        return True
    writer.close()
    return False


async def eventually(check: Callable[[], Awaitable[T]], timeout: float = 10.0, what: str = "condition") -> T:
    """Poll ``check`` until it returns something true; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} not reached in {timeout}s (last: {last!r})")


def service(name: str, *, ports: list[Obj] | None = None, namespace: str = "default", **spec: Any) -> Obj:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"ports": ports or [{"port": 80, "targetPort": 8080}], **spec}}


def endpoints(name: str, ips: list[str], ports: list[Obj], *, not_ready: list[str] | None = None,
              namespace: str = "default") -> Obj:
    subset: Obj = {"ports": ports}
    if ips:
        subset["addresses"] = [{"ip": ip} for ip in ips]
    if not_ready:
        subset["notReadyAddresses"] = [{"ip": ip} for ip in not_ready]
    return {"metadata": {"name": name, "namespace": namespace}, "subsets": [subset] if ips or not_ready else []}


class DnsUpstream:
    """A DNS server on 127.0.0.1 (UDP and TCP, one port) that answers A queries for the names it is given and
    NXDOMAIN otherwise: the node's own resolver, as far as the cluster DNS can tell."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names
        self.queries: list[str] = []
        self.transport: Any = None
        self.tcp: asyncio.Server | None = None
        self.address = ("127.0.0.1", 0)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for _ in range(10):
            self.transport, _ = await loop.create_datagram_endpoint(lambda: _Upstream(self),
                                                                    local_addr=("127.0.0.1", 0))
            self.address = ("127.0.0.1", int(self.transport.get_extra_info("sockname")[1]))
            try:
                self.tcp = await asyncio.start_server(self._tcp, *self.address)
                return
            except OSError:
                self.transport.close()
        raise OSError("no port free for UDP and TCP")

    def answer(self, data: bytes) -> bytes:
        request = DNSRecord.parse(data)
        name = str(request.q.qname)
        self.queries.append(name)
        reply = request.reply(aa=0)
        if name in self.names and request.q.qtype == QTYPE.A:
            reply.add_answer(RR(name, QTYPE.A, rdata=A(self.names[name]), ttl=60))
        elif name not in self.names:
            reply.header.rcode = 3  # NXDOMAIN
        return reply.pack()

    async def _tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            size = int.from_bytes(await reader.readexactly(2), "big")
            answer = self.answer(await reader.readexactly(size))
            writer.write(len(answer).to_bytes(2, "big") + answer)
            await writer.drain()
        finally:
            writer.close()

    def stop(self) -> None:
        self.transport.close()
        if self.tcp is not None:
            self.tcp.close()


class _Upstream(asyncio.DatagramProtocol):
    def __init__(self, server: DnsUpstream) -> None:
        self.server = server

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.transport.sendto(self.server.answer(data), addr)


async def query(server: tuple[str, int], name: str, qtype: str = "A", *, tcp: bool = False,
                edns: bool = False) -> DNSRecord:
    """Ask a DNS server one question over UDP or TCP (asyncio, so a server in this process can answer)."""
    request = DNSRecord.question(name, qtype)
    if edns:
        request.add_ar(EDNS0(udp_len=4096))
    data = request.pack()
    async with asyncio.timeout(5.0):
        if tcp:
            reader, writer = await asyncio.open_connection(*server)
            try:
                writer.write(len(data).to_bytes(2, "big") + data)
                size = int.from_bytes(await reader.readexactly(2), "big")
                return DNSRecord.parse(await reader.readexactly(size))
            finally:
                writer.close()
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[bytes] = loop.create_future()

        class Once(asyncio.DatagramProtocol):
            def datagram_received(self, data: bytes, addr: Any) -> None:
                if not answer.done():
                    answer.set_result(data)

        transport, _ = await loop.create_datagram_endpoint(Once, remote_addr=server)
        try:
            transport.sendto(data)
            return DNSRecord.parse(await answer)
        finally:
            transport.close()
