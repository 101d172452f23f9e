"""SPDY/3 framing, the part of it that Kubernetes' streams use (``SPDY/3.1`` upgrades, and kubectl's port-forward
tunneled inside a WebSocket).

A frame is an 8-byte head and a payload. A control frame's head is ``1 | version (15 bits) | type (16) | flags (8)
| length (24)``; a data frame's is ``0 | stream id (31) | flags (8) | length (24)``. Header blocks (in SYN_STREAM,
SYN_REPLY and HEADERS) are a count and length-prefixed names and values, compressed with zlib: one compression
stream per direction for the whole connection, each block ending in a sync flush, both sides seeded with the
protocol's dictionary (``DICTIONARY``). Header names travel lower-cased; a header with several values joins them
with NUL bytes.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

VERSION = 3

# control frame types
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
# flags
FLAG_FIN, FLAG_UNIDIRECTIONAL = 0x01, 0x02
# RST_STREAM status codes
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, UNSUPPORTED_VERSION, CANCEL, INTERNAL_ERROR = 1, 2, 3, 4, 5, 6
# GOAWAY status codes
GOAWAY_OK = 0

#: the largest payload one frame can carry (its length field has 24 bits)
MAX_LENGTH = 0xFFFFFF

_WORDS = (
    "options head post put delete trace accept accept-charset accept-encoding accept-language accept-ranges age "
    "allow authorization cache-control connection content-base content-encoding content-language content-length "
    "content-location content-md5 content-range content-type date etag expect expires from host if-match "
    "if-modified-since if-none-match if-range if-unmodified-since last-modified location max-forwards pragma "
    "proxy-authenticate proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade "
    "user-agent vary via warning www-authenticate method get status").split() + ["200 OK"] + \
    "version HTTP/1.1 url public set-cookie keep-alive origin".split()
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
#: SPDY/3's header compression dictionary (the draft's section 2.6.10.1): length-prefixed header names and
#: values, then a run of status lines, dates and media types; 1423 bytes
DICTIONARY = b"".join(struct.pack(">I", len(word)) + word.encode() for word in _WORDS) + _TAIL.encode()


class ProtocolError(Exception):
    """The peer sent what SPDY/3 does not allow: the connection ends."""


@dataclass(frozen=True, slots=True)
class Frame:
    """A decoded frame: ``kind`` is the control type, or 0 for data. ``stream_id`` is the data frame's stream, or
    for the control frames that name one (SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS, WINDOW_UPDATE) that one;
    ``value`` is the RST_STREAM or GOAWAY status, the PING id or the WINDOW_UPDATE delta."""

    kind: int
    flags: int
    stream_id: int = 0
    data: bytes = b""
    headers: dict[str, list[str]] | None = None
    value: int = 0

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)


class Decoder:
    """Frames from a byte stream, whatever the pieces it arrives in; one per connection (the header
    decompression runs across frames)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)

    def feed(self, data: bytes) -> list[Frame]:
        buffer = self._buffer
        buffer += data
        frames: list[Frame] = []
        start = 0
        size = len(buffer)
        while size - start >= 8:
            length = int.from_bytes(buffer[start + 5:start + 8], "big")
            end = start + 8 + length
            if end > size:
                break
            head = buffer[start:start + 8]
            payload = bytes(buffer[start + 8:end])
            frames.append(self._frame(head, payload))
            start = end
        if start:
            del buffer[:start]
        return frames

    def _frame(self, head: bytearray, payload: bytes) -> Frame:
        flags = head[4]
        if not head[0] & 0x80:
            return Frame(0, flags, int.from_bytes(head[:4], "big") & 0x7FFFFFFF, payload)
        version = int.from_bytes(head[:2], "big") & 0x7FFF
        if version != VERSION:
            raise ProtocolError(f"unsupported SPDY version {version}")
        kind = int.from_bytes(head[2:4], "big")
        if kind in (SYN_STREAM, SYN_REPLY, HEADERS):
            offset = 10 if kind == SYN_STREAM else 4
            if len(payload) < offset:
                raise ProtocolError(f"frame of type {kind} too short")
            return Frame(kind, flags, _word(payload, 0) & 0x7FFFFFFF, headers=self._headers(payload[offset:]))
        if kind in (RST_STREAM, WINDOW_UPDATE):
            if len(payload) < 8:
                raise ProtocolError(f"frame of type {kind} too short")
            return Frame(kind, flags, _word(payload, 0) & 0x7FFFFFFF, value=_word(payload, 4))
        if kind == PING:
            return Frame(kind, flags, value=_word(payload, 0) if len(payload) >= 4 else 0)
        if kind == GOAWAY:
            return Frame(kind, flags, _word(payload, 0) & 0x7FFFFFFF if len(payload) >= 4 else 0,
                         value=_word(payload, 4) if len(payload) >= 8 else 0)
        return Frame(kind, flags, data=payload)  # SETTINGS and anything newer: the caller decides

    def _headers(self, block: bytes) -> dict[str, list[str]]:
        try:
            raw = self._inflate.decompress(block)
        except zlib.error as exc:
            raise ProtocolError(f"bad header block: {exc}") from None
        headers: dict[str, list[str]] = {}
        try:
            count, offset = _word(raw, 0), 4
            for _ in range(count):
                size = _word(raw, offset)
                name = raw[offset + 4:offset + 4 + size].decode("latin-1").lower()
                offset += 4 + size
                size = _word(raw, offset)
                value = raw[offset + 4:offset + 4 + size].decode("latin-1")
                offset += 4 + size
                headers.setdefault(name, []).extend(value.split("\x00"))
        except struct.error:
            raise ProtocolError("truncated header block") from None
        return headers


def _word(data: bytes, offset: int) -> int:
    value: int = struct.unpack_from(">I", data, offset)[0]
    return value


def _control(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


class Encoder:
    """Frames to send; one per connection (the header compression runs across frames)."""

    def __init__(self) -> None:
        self._deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, zdict=DICTIONARY)

    def _block(self, headers: dict[str, list[str]]) -> bytes:
        parts = [struct.pack(">I", len(headers))]
        for name, values in headers.items():
            key, value = name.lower().encode("latin-1"), "\x00".join(values).encode("latin-1")
            parts += [struct.pack(">I", len(key)), key, struct.pack(">I", len(value)), value]
        raw = b"".join(parts)
        return self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def syn_stream(self, stream_id: int, headers: dict[str, list[str]], flags: int = 0) -> bytes:
        return _control(SYN_STREAM, flags, struct.pack(">IIH", stream_id, 0, 0) + self._block(headers))

    def syn_reply(self, stream_id: int, headers: dict[str, list[str]] | None = None, flags: int = 0) -> bytes:
        return _control(SYN_REPLY, flags, struct.pack(">I", stream_id) + self._block(headers or {}))


def data(stream_id: int, payload: bytes | memoryview = b"", flags: int = 0) -> bytes:
    return struct.pack(">II", stream_id & 0x7FFFFFFF, (flags << 24) | len(payload)) + payload


def rst_stream(stream_id: int, status: int) -> bytes:
    return _control(RST_STREAM, 0, struct.pack(">II", stream_id, status))


def ping(ping_id: int) -> bytes:
    return _control(PING, 0, struct.pack(">I", ping_id))


def goaway(last_stream_id: int, status: int = GOAWAY_OK) -> bytes:
    return _control(GOAWAY, 0, struct.pack(">II", last_stream_id, status))
