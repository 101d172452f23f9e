"""The grpc probe: one call of the standard health service, grpc.health.v1.Health/Check, over plain-text HTTP/2
(h2c with prior knowledge, as Kubernetes' probe dials), and its outcome worded as Kubernetes words it.

Only what the call needs of HTTP/2 is here: the preface, SETTINGS (acknowledged), one request stream (HEADERS
encoded with HPACK literals, which need no table, then one DATA frame), PING answered, and the response's DATA
read. Response headers are skipped rather than decoded, so a call that ends without a response message (an
error status in the trailers) is reported without its gRPC code.
"""

from __future__ import annotations

import asyncio
import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
STREAM = 1
#: HealthCheckResponse.ServingStatus
STATUSES = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def _integer(value: int, prefix_bits: int, first: int) -> bytes:
    """HPACK's integer with an N-bit prefix (RFC 7541 5.1), ``first`` holding the bits above it."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def _string(text: str) -> bytes:
    data = text.encode()
    return _integer(len(data), 7, 0) + data  # no Huffman coding


def header_block(authority: str) -> bytes:
    """The request's headers as HPACK: static-table entries where they exist, literals without indexing."""
    block = bytearray(b"\x83\x86")  # :method POST, :scheme http
    block += _integer(4, 4, 0) + _string("/grpc.health.v1.Health/Check")  # :path
    block += _integer(1, 4, 0) + _string(authority)  # :authority
    for name, value in (("content-type", "application/grpc"), ("te", "trailers"),
                        ("user-agent", "kube-probe/1.32")):
        block += b"\x00" + _string(name) + _string(value)
    return bytes(block)


def request_message(service: str) -> bytes:
    """HealthCheckRequest{service} in gRPC's length-prefixed framing (not compressed)."""
    data = service.encode()
    body = b"\x0a" + _integer(len(data), 7, 0) + data if data else b""
    return b"\x00" + struct.pack(">I", len(body)) + body


def response_status(message: bytes) -> int:
    """The status field (1, a varint) of a HealthCheckResponse; 0 (UNKNOWN) when absent."""
    body, index = message[5:], 0
    while index < len(body):
        key = body[index]
        index += 1
        value = shift = 0
        while index < len(body):
            byte = body[index]
            index += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if key == 0x08:
            return value
        if key & 0x07 != 0:  # the response has no other fields minik needs to skip safely
            break
    return 0


async def _call(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, authority: str,
                service: str) -> bytes | None:
    """The response message, or None when the call ended without one."""
    try:
        writer.write(PREFACE + frame(SETTINGS, 0, 0)
                     + frame(HEADERS, END_HEADERS, STREAM, header_block(authority))
                     + frame(DATA, END_STREAM, STREAM, request_message(service)))
        await writer.drain()
        received = bytearray()
        while True:
            head = await reader.readexactly(9)
            length = int.from_bytes(head[:3], "big")
            kind, flags, stream = head[3], head[4], struct.unpack(">I", head[5:9])[0] & 0x7FFFFFFF
            payload = await reader.readexactly(length)
            if kind == SETTINGS and not flags & ACK:
                writer.write(frame(SETTINGS, ACK, 0))
            elif kind == PING and not flags & ACK:
                writer.write(frame(PING, ACK, 0, payload))
            elif kind == GOAWAY or (kind == RST_STREAM and stream == STREAM):
                return None
            elif kind == DATA and stream == STREAM:
                received += payload
                if len(received) >= 5 and len(received) >= 5 + struct.unpack(">I", received[1:5])[0]:
                    return bytes(received)
            if stream == STREAM and flags & END_STREAM and kind in (DATA, HEADERS):
                return bytes(received) if received else None
    finally:
        writer.close()


async def grpc_check(host: str, port: int, service: str, timeout: float) -> tuple[bool, str]:
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
    except (TimeoutError, OSError):
        return False, f'timeout: failed to connect service "{address}" within {timeout:g}s: context deadline exceeded'
    try:
        async with asyncio.timeout(timeout):
            message = await _call(reader, writer, address, service)
    except TimeoutError:
        return False, f"timeout: health rpc did not complete within {timeout:g}s"
    except (OSError, asyncio.IncompleteReadError) as exc:
        return False, f"error: health rpc probe failed: {exc}"
    if message is None:
        return False, "error: health rpc probe failed: the call ended without a response (an error status)"
    status = response_status(message)
    if status != 1:
        return False, f'service unhealthy (responded with "{STATUSES.get(status, str(status))}")'
    return True, "service healthy"
