"""SPDY/3 framing: what the port-forward session reads from kubectl and writes back, frame by frame."""

from __future__ import annotations

import struct
import zlib

import pytest

from minik.api import spdy


def test_the_header_dictionary_is_spdy3s_1423_bytes() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b"utf-,*,enq=0.")


def test_header_blocks_survive_a_shared_compression_stream_across_frames() -> None:
    encoder, decoder = spdy.Encoder(), spdy.Decoder()
    first = encoder.syn_stream(1, {"streamType": ["error"], "port": ["80"], "requestID": ["0"]})
    second = encoder.syn_stream(3, {"streamType": ["data"], "port": ["80"], "requestID": ["0"]})
    frames = decoder.feed(first + second)
    assert [(f.kind, f.stream_id, f.headers) for f in frames] == [
        (spdy.SYN_STREAM, 1, {"streamtype": ["error"], "port": ["80"], "requestid": ["0"]}),
        (spdy.SYN_STREAM, 3, {"streamtype": ["data"], "port": ["80"], "requestid": ["0"]})]
    # the second block leans on the first: a decoder that missed the first cannot read it
    with pytest.raises(spdy.ProtocolError):
        spdy.Decoder().feed(second)


def test_frames_are_read_whatever_pieces_they_arrive_in() -> None:
    stream = spdy.data(3, b"hello") + spdy.ping(7) + spdy.data(3, b"", spdy.FLAG_FIN) + \
        spdy.rst_stream(5, spdy.CANCEL) + spdy.goaway(5)
    decoder = spdy.Decoder()
    frames = [frame for byte in range(len(stream)) for frame in decoder.feed(stream[byte:byte + 1])]
    assert [(f.kind, f.stream_id, f.data, f.fin, f.value) for f in frames] == [
        (0, 3, b"hello", False, 0), (spdy.PING, 0, b"", False, 7), (0, 3, b"", True, 0),
        (spdy.RST_STREAM, 5, b"", False, spdy.CANCEL), (spdy.GOAWAY, 5, b"", False, 0)]


def test_a_syn_reply_carries_an_empty_header_block_compressed_with_the_dictionary() -> None:
    reply = spdy.Encoder().syn_reply(1)
    version, kind, flags_length, stream_id = struct.unpack(">HHII", reply[:12])
    assert (version, kind, flags_length & 0xFFFFFF, stream_id) == (0x8003, spdy.SYN_REPLY, len(reply) - 8, 1)
    inflate = zlib.decompressobj(zdict=spdy.DICTIONARY)
    assert inflate.decompress(reply[12:]) == b"\x00\x00\x00\x00"
    assert reply[12:14] in (b"\x78\xbb", b"\x78\xf9", b"\x78\x3f", b"\x78\x7d")  # a zlib header with FDICT


def test_another_version_is_a_protocol_error() -> None:
    with pytest.raises(spdy.ProtocolError, match="version 2"):
        spdy.Decoder().feed(struct.pack(">HHI", 0x8002, spdy.PING, 4) + b"\x00\x00\x00\x01")
