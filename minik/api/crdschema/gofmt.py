"""How Kubernetes (Go) prints values and builds field errors, where the CRD machinery's output depends on it.

``field.Error.ErrorBody()`` prints a bad value with ``%v`` for numbers and booleans, ``%q`` for strings (so ``nil``
becomes ``"null"``) and ``%#v`` for maps and slices; kube-openapi prints bounds with ``%v`` of a float64, which
switches to exponent form only from 1e21 on. The causes here use those rules; minik.api.fielderrors keeps the
project's own spelling for built-in kinds.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from minik.api.errors import Cause

#: the path Kubernetes prints for a nil ``*field.Path`` (an error at the root of a custom resource)
NIL_PATH = "<nil>"


def go_float(value: float) -> str:
    """``fmt.Sprintf("%v", float64)``: the shortest digits, in exponent form below 1e-4 and from 1e21 on."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    sign, digits, exp = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exp, int)
    text = "".join(map(str, digits))
    point = len(text) + exp  # position of the decimal point from the left of the digits
    x = point - 1
    if x < -4 or x >= 21:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        out = f"{mantissa}e{'-' if x < 0 else '+'}{abs(x):02d}"
    elif point <= 0:
        out = "0." + "0" * -point + text
    elif point >= len(text):
        out = text + "0" * (point - len(text))
    else:
        out = text[:point] + "." + text[point:]
    return ("-" if sign else "") + out


def go_number(value: int | float) -> str:
    return go_float(value) if isinstance(value, float) else str(value)


def go_quote(text: str) -> str:
    """``%q`` of a string (close enough: JSON escaping, non-ASCII kept)."""
    return json.dumps(text, ensure_ascii=False)


def go_sharp(value: Any) -> str:
    """``%#v`` of a JSON value as Go holds it in an unstructured object."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, dict):
        items = ", ".join(f"{go_quote(str(k))}:{go_sharp(v)}" for k, v in sorted(value.items()))
        return "map[string]interface {}{" + items + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_sharp(v) for v in value) + "}"
    return go_quote(str(value))


def go_value(value: Any) -> str:
    """A bad value as ``field.Error.ErrorBody()`` prints it."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return go_number(value)
    if isinstance(value, str):
        return go_quote(value)
    return go_sharp(value)


class Raw(str):
    """A value printed as is (Go's ``%#v`` of a struct, which the caller spells out)."""


def _body(kind: str, value: Any, detail: str) -> str:
    shown = str(value) if isinstance(value, Raw) else go_value(value)
    return f"{kind}: {shown}" + (f": {detail}" if detail else "")


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(path, "FieldValueInvalid", _body("Invalid value", value, detail))


def type_invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(path, "FieldValueTypeInvalid", _body("Invalid value", value, detail))


def not_supported(path: str, value: Any, supported: list[str]) -> Cause:
    detail = "supported values: " + ", ".join(go_quote(s) for s in supported) if supported else ""
    return Cause(path, "FieldValueNotSupported", _body("Unsupported value", value, detail))


def required(path: str, detail: str = "") -> Cause:
    return Cause(path, "FieldValueRequired", "Required value" + (f": {detail}" if detail else ""))


def forbidden(path: str, detail: str) -> Cause:
    return Cause(path, "FieldValueForbidden", "Forbidden" + (f": {detail}" if detail else ""))


def duplicate(path: str, value: Any) -> Cause:
    return Cause(path, "FieldValueDuplicate", _body("Duplicate value", value, ""))


def too_long(path: str, max_length: int) -> Cause:
    return Cause(path, "FieldValueTooLong", f"Too long: may not be more than {max_length} bytes")


def too_many(path: str, actual: int, max_items: int) -> Cause:
    return Cause(path, "FieldValueTooMany", f"Too many: {actual}: must have at most {max_items} items")


def internal(path: str, detail: str) -> Cause:
    return Cause(path, "InternalError", f"Internal error: {detail}")


def child(path: str, name: str) -> str:
    """``field.Path.Child``: a nil (empty) parent gives the bare name."""
    return f"{path}.{name}" if path else name


def key(path: str, name: str) -> str:
    """``field.Path.Key`` and ``Index``: ``[name]`` (a nil parent prints as nothing)."""
    return f"{path}[{name}]"


def shown(path: str) -> str:
    """The path as Kubernetes prints it: a nil path is ``<nil>``."""
    return path or NIL_PATH
