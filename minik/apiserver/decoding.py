"""What Kubernetes' decoder refuses in a body that parses as JSON: a value of the wrong JSON type for its Go field
(``replicas: "3"``), a number its Go integer field cannot hold (``replicas: 1099511627776`` in an int32, ``2^64``
in an int64, ``1.5`` anywhere), a quantity that does not parse, and how the API server says so.

Finding such values is the field validation walk's job (minik.apiserver.fieldvalidation), driven by the types
schema.json gives every field; this module holds what the walk raises and the Statuses it becomes.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from minik.api import fielderrors, quantity, schema
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


def _json_kind(value: object) -> str:
    """How Go's decoder names the JSON value it could not store."""
    return {bool: "bool", int: "number", float: "number", str: "string", dict: "object", list: "array"}.get(
        type(value), "value")


class TypeMismatch(FieldDecodeError):
    """A value of the wrong JSON type for its Go field: a string where an int32 goes, a list where a struct goes, a
    number in a map of strings (``json: cannot unmarshal number into Go struct field ConfigMap.data of type
    string``). A timestamp is read from a string, so a timestamp that is no string is worded as for a string."""

    def __init__(self, value: object, go_type: str) -> None:
        super().__init__()
        self.value = value
        self.go_type = go_type

    @property
    def message(self) -> str:
        return (f"json: cannot unmarshal {_json_kind(self.value)} into Go struct field {self.struct}.{self.path} "
                f"of type {self.go_type}")


class NotAnIntOrString(FieldDecodeError):
    """A bool, object or array in an int-or-string field. The field's own decoder reads anything but a string as
    an int32 and its error carries no field: Go words it as for a bare value."""

    def __init__(self, value: object) -> None:
        super().__init__()
        self.value = value

    @property
    def message(self) -> str:
        return f"json: cannot unmarshal {_json_kind(self.value)} into Go value of type int32"


class NotAQuantity(FieldDecodeError):
    """A resource quantity that does not parse (``cpu: lots``, ``memory: true``): the quantity's own decoder
    refuses it, in its own words and without the field."""

    def __init__(self, value: object) -> None:
        super().__init__()
        self.value = value

    @property
    def message(self) -> str:
        try:
            quantity.parse_quantity(self.value)  # type: ignore[arg-type]
        except ValueError as exc:
            return str(exc)
        return quantity.FORMAT_ERROR


def number_literal(value: int | float) -> str:
    """The number as the client most likely wrote it: a whole float below 10^21 (a literal too large for a 64-bit
    integer, which the JSON decoder reads as a float) as its digits, other floats as Python prints them."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def fits(value: Any, kind: schema.IntRange) -> bool:
    """False for a number the Go integer type cannot hold: out of its range, or a fraction. Anything else (a
    string, a bool, null) is not a number at all: the walk words that as a TypeMismatch."""
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
