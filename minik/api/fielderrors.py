"""Causes as Kubernetes' field.Error constructors build them: a field path and an ErrorBody-style message.

``required("spec.containers")`` -> ``Required value``; ``invalid(path, -1, "must be ...")`` ->
``Invalid value: -1: must be ...``; paths are built with ``child`` and ``index`` (``spec.containers[0].image``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from minik.api.errors import Cause


def go_repr(value: Any) -> str:
    """How Kubernetes prints a bad value in a message: strings quoted, numbers bare, maps as Go literals."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict) and value and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        pairs = (f"{json.dumps(k)}:{json.dumps(v)}" for k, v in sorted(value.items()))
        return "map[string]string{" + ", ".join(pairs) + "}"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(json.dumps(v) for v in value) + "}"
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def _body(kind: str, value: Any, detail: str) -> str:
    return f"{kind}: {go_repr(value)}" + (f": {detail}" if detail else "")


def required(path: str, detail: str = "") -> Cause:
    return Cause(path, "FieldValueRequired", "Required value" + (f": {detail}" if detail else ""))


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(path, "FieldValueInvalid", _body("Invalid value", value, detail))


def type_invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(path, "FieldValueTypeInvalid", _body("Invalid value", value, detail))


def not_supported(path: str, value: Any, supported: Sequence[str]) -> Cause:
    detail = "supported values: " + ", ".join(f'"{s}"' for s in supported) if supported else ""
    return Cause(path, "FieldValueNotSupported", _body("Unsupported value", value, detail))


def forbidden(path: str, detail: str) -> Cause:
    return Cause(path, "FieldValueForbidden", "Forbidden" + (f": {detail}" if detail else ""))


def duplicate(path: str, value: Any, detail: str = "") -> Cause:
    return Cause(path, "FieldValueDuplicate", _body("Duplicate value", value, detail))


def not_found(path: str, value: Any) -> Cause:
    return Cause(path, "FieldValueNotFound", _body("Not found", value, ""))


def too_long(path: str, max_bytes: int) -> Cause:
    return Cause(path, "FieldValueTooLong", f"Too long: must have at most {max_bytes} bytes")


def child(path: str, *names: str) -> str:
    """``child("spec", "template", "spec")`` -> ``spec.template.spec``."""
    return ".".join([path, *names] if path else names)


def index(path: str, i: int | str) -> str:
    """``spec.containers[0]``; also used for map keys (``data[key]``, ``resources.limits[cpu]``)."""
    return f"{path}[{i}]"
