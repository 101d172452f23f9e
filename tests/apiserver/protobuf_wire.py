"""A tiny protobuf encoder for tests: builds the bytes kubectl's typed clients send, field by field.

Each helper returns the bytes of one field (key + value); a message is the concatenation of its fields.
"""

from __future__ import annotations

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"

#: the body real kubectl 1.32 sent for `kubectl create namespace foo` (captured with -v=8)
KUBECTL_CREATE_NAMESPACE = bytes.fromhex(
    "6b3873000a0f0a02763112094e616d657370616365121b0a130a03666f6f12001a00220"
    "02a0032003800420012001a020a001a002200")


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative numbers as Go writes them: ten bytes, two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def num(number: int, value: int | bool) -> bytes:
    """A varint field (int32, int64, bool)."""
    return key(number, 0) + varint(int(value))


def raw(number: int, data: bytes) -> bytes:
    """A length-delimited field holding ``data`` (bytes, or an already encoded message)."""
    return key(number, 2) + varint(len(data)) + data


def text(number: int, value: str) -> bytes:
    return raw(number, value.encode())


def sub(number: int, *fields: bytes) -> bytes:
    """An embedded message made of ``fields``."""
    return raw(number, b"".join(fields))


def entry(number: int, map_key: str, value: bytes) -> bytes:
    """One entry of a map field: ``value`` is the encoded value field (number 2)."""
    return sub(number, text(1, map_key), value)


def packed(number: int, values: list[int]) -> bytes:
    return raw(number, b"".join(varint(v) for v in values))


def fixed64(number: int, value: int) -> bytes:
    return key(number, 1) + value.to_bytes(8, "little")


def envelope(api_version: str, kind: str, *fields: bytes) -> bytes:
    """A whole body: the magic, then runtime.Unknown{typeMeta, raw = the object's fields, "", ""}."""
    return MAGIC + sub(1, text(1, api_version), text(2, kind)) + raw(2, b"".join(fields)) + text(3, "") + \
        text(4, "")


def metadata(name: str, namespace: str = "") -> bytes:
    """ObjectMeta as Go writes it: every plain field present, zeros included."""
    return sub(1, text(1, name), text(2, ""), text(3, namespace), text(4, ""), text(5, ""), text(6, ""), num(7, 0),
               sub(8))
