"""A tiny protobuf encoder for tests: builds the bytes kubectl's typed clients send, field by field.

Each helper returns the bytes of one field (key + value); a message is the concatenation of its fields.
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

import orjson

from minik.apiserver import protobuf

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


# -- whole objects, driven by minik's own table ----------------------------------------------------------------
def encode_object(obj: dict[str, Any]) -> bytes:
    """A JSON object as a protobuf body, its fields numbered by minik/api/protobuf_fields.json (the inverse of the
    decoder, for round trips and benchmarks; every field present is written, as a Go pointer would be)."""
    table = protobuf.layouts()
    name = table.message_of(obj["apiVersion"], obj["kind"])
    assert name is not None, f"no message for {obj['apiVersion']} {obj['kind']}"
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    return envelope(obj["apiVersion"], obj["kind"], _message(body, name))


def _json_names(name: str) -> set[str]:
    out: set[str] = set()
    for json_name, type_, _mode in protobuf.layouts().messages[name].values():
        out |= _json_names(type_) if not json_name else {json_name}
    return out


def _message(value: dict[str, Any], name: str) -> bytes:
    layout = protobuf.layouts().messages[name]
    known = _json_names(name)
    unknown = set(value) - known
    assert not unknown, f"{name} has no fields {unknown}"
    out: list[bytes] = []
    for number, (json_name, type_, mode) in sorted(layout.items()):
        if not json_name:  # an inlined struct: the parent's keys that are its fields
            part = {k: v for k, v in value.items() if k in _json_names(type_)}
            if part:
                out.append(raw(number, _message(part, type_)))
        elif json_name in value:
            item = value[json_name]
            if mode == "[]":
                out.extend(_value(number, type_, each) for each in item)
            elif mode == "{}":
                out.extend(sub(number, text(1, k), _value(2, type_, v)) for k, v in item.items())
            else:
                out.append(_value(number, type_, item))
    return b"".join(out)


def _value(number: int, type_: str, value: Any) -> bytes:
    if type_ == "string":
        return text(number, value)
    if type_ == "bytes":
        return raw(number, base64.b64decode(value))
    if type_ in ("int32", "int64", "bool"):
        return num(number, value)
    special = type_.rpartition(".")[2]
    if special in ("Time", "MicroTime"):
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return sub(number, num(1, int(moment.timestamp())), num(2, moment.microsecond * 1000))
    if special == "Quantity":
        return sub(number, text(1, str(value)))
    if special == "IntOrString":
        return sub(number, num(1, 1), text(3, value)) if isinstance(value, str) else \
            sub(number, num(1, 0), num(2, value))
    if special in ("FieldsV1", "RawExtension"):
        return sub(number, raw(1, orjson.dumps(value)))
    return raw(number, _message(value, type_))
