"""The WebSocket protocols of pods/portforward, shared by the kubelet that serves them and the API server that
relays them.

- ``v4.channel.k8s.io`` (and the older ``channel.k8s.io``), as the official Python client speaks it: for the i-th
  port asked for (``?ports=80,8080``), channel 2i carries its data and 2i+1 its errors; the first message on each
  channel is the port, two bytes little-endian. One TCP connection per port; the socket closes when they are done.
- ``portforward.minik.io``: many connections over one WebSocket, what the API server opens to the kubelet for one
  kubectl session. A message holds one or more records, each a kind (1 byte), a connection id (4 bytes, big-endian),
  a length (4 bytes) and that many bytes. From the API server: OPEN (the payload is the port, 2 bytes big-endian),
  DATA, EOF (the client's side ended: a TCP half-close) and CLOSE (drop the connection). From the kubelet: DATA,
  EOF (the pod's side ended), ERROR (why the connection failed, as text) and CLOSE (the connection is over). Records
  of many connections that are ready together travel in one message.
- ``SPDY/3.1+portforward.k8s.io``: kubectl's (1.31 and later) SPDY/3.1 session tunneled inside the WebSocket's
  binary messages (``minik.api.spdy``); the API server ends it and opens the connections above.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping

from minik.api.errors import bad_request

V4 = "v4.channel.k8s.io"
CHANNEL = "channel.k8s.io"
MINIK = "portforward.minik.io"
#: what the kubelet serves, preferred first
KUBELET_PROTOCOLS = (MINIK, V4, CHANNEL)
#: kubectl's SPDY tunnel: the WebSocket subprotocol it asks for
SPDY_TUNNEL = "SPDY/3.1+portforward.k8s.io"
#: the SPDY upgrade's protocol (X-Stream-Protocol-Version)
SPDY_PROTOCOL = "portforward.k8s.io"

#: the kinds of portforward.minik.io's records
OPEN, DATA, EOF, ERROR, CLOSE = 1, 2, 3, 4, 5
_RECORD = struct.Struct(">BII")

#: the SPDY stream headers kubectl sets on each stream of a forwarded connection
STREAM_TYPE, PORT, REQUEST_ID = "streamtype", "port", "requestid"


def port_prefix(port: int) -> bytes:
    return port.to_bytes(2, "little")


def parse_ports(values: list[str], name: str = "ports") -> list[int]:
    """The ports of ``?ports=80,8080`` or ``?ports=80&ports=8080`` (the API server's) and ``?port=80`` (the
    kubelet's), each 1-65535, at least one."""
    ports: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                port = int(part)
            except ValueError:
                raise bad_request(f'unable to parse "{part}" as a port: invalid syntax') from None
            if not 0 < port < 65536:
                raise bad_request(f"port {port} must be > 0 and < 65536")
            ports.append(port)
    if not ports:
        raise bad_request(f"query parameter {name!r} is required")
    return ports


def query_values(query: Mapping[str, str], key: str) -> list[str]:
    getall = getattr(query, "getall", None)
    if getall is not None:
        return list(getall(key, []))
    value = query.get(key)
    return [value] if value is not None else []


def record(kind: int, connection: int, payload: bytes = b"") -> bytes:
    return _RECORD.pack(kind, connection, len(payload)) + payload


def records(message: bytes) -> Iterator[tuple[int, int, bytes]]:
    """The (kind, connection, payload) records of a portforward.minik.io message; a truncated tail is dropped."""
    offset, size = 0, len(message)
    while size - offset >= _RECORD.size:
        kind, connection, length = _RECORD.unpack_from(message, offset)
        start = offset + _RECORD.size
        if start + length > size:
            return
        yield kind, connection, message[start:start + length]
        offset = start + length
