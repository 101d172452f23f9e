"""What Kubernetes' decoder refuses in a body that parses as JSON: a number its Go integer field cannot hold
(``replicas: 1099511627776`` in an int32, ``2^64`` in an int64, ``1.5`` anywhere), a timestamp that is no string,
and how the API server says so.

Finding such numbers is the field validation walk's job (minik.apiserver.fieldvalidation), driven by the widths
schema.json gives every integer field; this module holds what the walk raises and the Statuses it becomes.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from minik.api import fielderrors, schema
from minik.api.errors import StatusError, bad_request, invalid

Obj = dict[str, Any]


class FieldDecodeError(Exception):
    """A value its Go field cannot take, raised by the walk. The walk's frames add the JSON names of the fields it
    sits in as it passes through them, so the happy path builds no path at all."""

    def __init__(self) -> None:
        super().__init__()
        self.struct = ""
        self.fields: list[str] = []

    def within(self, field: str, type_name: str) -> None:
        """Note the field the value was found in, and (the first time) the type that has it."""
        self.fields.append(field)
        if not self.struct:
            self.struct = type_name.rsplit(".", 1)[-1]

    @property
    def path(self) -> str:
        """The JSON names from the object down, without list indices or map keys, as Go's decoder gives them."""
        return ".".join(reversed(self.fields))

    @property
    def message(self) -> str:
        raise NotImplementedError


class IntegerOverflow(FieldDecodeError):
    """A number an integer field cannot hold."""

    def __init__(self, value: int | float, kind: schema.IntRange) -> None:
        super().__init__()
        self.value = value
        self.kind = kind

    @property
    def message(self) -> str:
        """encoding/json's UnmarshalTypeError, as Kubernetes' decoder words it."""
        return (f"json: cannot unmarshal number {number_literal(self.value)} into Go struct field "
                f"{self.struct}.{self.path} of type int{self.kind.bits}")


class NotAString(FieldDecodeError):
    """A number, bool, object or array where a timestamp (a Time or MicroTime, which Go reads from a string) goes.
    Go's decoder words it as for any string field: the error the timestamp's own UnmarshalJSON gets is given the
    field's context on its way out."""

    def __init__(self, value: object) -> None:
        super().__init__()
        self.value = value

    @property
    def message(self) -> str:
        kind = {bool: "bool", int: "number", float: "number", dict: "object", list: "array"}.get(type(self.value),
                                                                                                "value")
        return f"json: cannot unmarshal {kind} into Go struct field {self.struct}.{self.path} of type string"


def number_literal(value: int | float) -> str:
    """The number as the client most likely wrote it: a whole float below 10^21 (a literal too large for a 64-bit
    integer, which the JSON decoder reads as a float) as its digits, other floats as Python prints them."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def fits(value: Any, kind: schema.IntRange) -> bool:
    """False for a number the Go integer type cannot hold: out of its range, or a fraction. Anything else (a
    string, a bool, null) is the kinds' validation's business."""
    if type(value) is int:  # noqa: E721 - not a bool
        return kind.low <= value <= kind.high
    if type(value) is float:  # noqa: E721
        return value.is_integer() and kind.low <= value <= kind.high
    return True


def decode_error(kind: str, version: str, message: str) -> StatusError:
    """The 400 Kubernetes answers a create or update whose body does not decode into its type."""
    return bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {message}')


def patch_decode_error(patched: Obj, message: str) -> StatusError:
    """The 422 Kubernetes answers a patch whose result does not decode: the field ``patch``, the patched object as
    the value."""
    try:
        text = orjson.dumps(patched).decode()
    except (orjson.JSONEncodeError, TypeError):  # an integer over 64 bits (from YAML) that orjson will not write
        text = json.dumps(patched, separators=(",", ":"), default=str)
    return invalid("", "", "", [fielderrors.invalid("patch", text, message)])
