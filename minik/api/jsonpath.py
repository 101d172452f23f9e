"""The JSONPath that Kubernetes reads in CustomResourceDefinitions (client-go's util/jsonpath): printer columns'
``jsonPath`` and selectable fields.

What is understood: ``.field`` and ``['field']`` steps, ``[N]`` (negative from the end), ``[start:end]`` slices,
``[*]`` and ``.*`` wildcards, ``..field`` (recursive descent) and filters ``[?(@.path OP literal)]`` (``==``,
``!=``, ``<``, ``<=``, ``>``, ``>=``, or a bare ``@.path`` for existence), optionally wrapped in ``{...}``. A path is
parsed once (``parse``) and then evaluated against plain JSON values (``find``), which returns every match in
document order; a missing key matches nothing rather than failing, as with AllowMissingKeys.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import orjson

_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_FILTER = re.compile(r"^\s*@((?:\.[^\s=!<>]*)*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*$")


class JsonPathError(ValueError):
    """A path that cannot be parsed."""


@dataclass(frozen=True)
class _Step:
    kind: str  # "field", "index", "slice", "all", "recurse", "filter"
    name: str = ""
    index: int = 0
    start: int | None = None
    end: int | None = None
    path: tuple[_Step, ...] = ()
    op: str = ""
    literal: Any = None


@functools.lru_cache(maxsize=1024)
def parse(text: str) -> tuple[_Step, ...]:
    """The steps of a path; JsonPathError when it is not one."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1].strip()
    if body.startswith("$"):
        body = body[1:]
    steps: list[_Step] = []
    i = 0
    while i < len(body):
        c = body[i]
        if body.startswith("..", i):
            steps.append(_Step("recurse"))
            i += 2
            i = _read_name(body, i, steps)
        elif c == ".":
            i = _read_name(body, i + 1, steps)
        elif c == "[":
            close = _matching_bracket(body, i)
            steps.append(_bracket(body[i + 1:close].strip(), text))
            i = close + 1
        else:
            raise JsonPathError(f"unrecognized character in action: {body[i:]!r} of {text!r}")
    return tuple(steps)


def _read_name(body: str, i: int, steps: list[_Step]) -> int:
    end = i
    while end < len(body) and body[end] not in ".[":
        end += 1
    name = body[i:end]
    if name == "*":
        steps.append(_Step("all"))
    elif name:
        steps.append(_Step("field", name=name))
    return end


def _matching_bracket(body: str, start: int) -> int:
    depth, quote = 0, ""
    for i in range(start, len(body)):
        c = body[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i
    raise JsonPathError(f"unterminated array in {body!r}")


def _bracket(inner: str, text: str) -> _Step:
    if inner == "*":
        return _Step("all")
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        return _Step("field", name=inner[1:-1])
    if inner.startswith("?(") and inner.endswith(")"):
        match = _FILTER.match(inner[2:-1])
        if match is None:
            raise JsonPathError(f"unrecognized filter {inner!r} in {text!r}")
        path, op, literal = match.groups()
        return _Step("filter", path=parse(path) if path else (), op=op or "",
                     literal=_literal(literal, text) if op else None)
    if ":" in inner:
        parts = inner.split(":")
        if len(parts) > 3:
            raise JsonPathError(f"invalid array index {inner!r} in {text!r}")
        try:
            start = int(parts[0]) if parts[0].strip() else None
            end = int(parts[1]) if parts[1].strip() else None
        except ValueError:
            raise JsonPathError(f"invalid array index {inner!r} in {text!r}") from None
        return _Step("slice", start=start, end=end)
    try:
        return _Step("index", index=int(inner))
    except ValueError:
        raise JsonPathError(f"invalid array index {inner!r} in {text!r}") from None


def _literal(text: str, path: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if _NUMBER.fullmatch(text):
        return float(text) if "." in text else int(text)
    raise JsonPathError(f"unrecognized literal {text!r} in {path!r}")


def find(steps: tuple[_Step, ...] | str, value: Any) -> list[Any]:
    """Every value ``steps`` (or a path) selects in ``value``, in document order."""
    if isinstance(steps, str):
        steps = parse(steps)
    current = [value]
    for step in steps:
        current = [found for item in current for found in _apply(step, item)]
        if not current:
            break
    return current


def _apply(step: _Step, value: Any) -> list[Any]:
    kind = step.kind
    if kind == "field":
        return [value[step.name]] if isinstance(value, dict) and step.name in value else []
    if kind == "all":
        if isinstance(value, dict):
            return list(value.values())
        return list(value) if isinstance(value, list) else []
    if kind == "index":
        if not isinstance(value, list):
            return []
        i = step.index + len(value) if step.index < 0 else step.index
        return [value[i]] if 0 <= i < len(value) else []
    if kind == "slice":
        return value[step.start:step.end] if isinstance(value, list) else []
    if kind == "recurse":
        return _descendants(value)
    if kind == "filter":
        items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else []
        return [item for item in items if _matches(step, item)]
    return []


def _descendants(value: Any) -> list[Any]:
    out = [value]
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        out.extend(_descendants(child))
    return out


def _matches(step: _Step, item: Any) -> bool:
    found = find(step.path, item)
    if not step.op:
        return bool(found)
    if not found:
        return False
    left, right = found[0], step.literal
    if step.op == "==":
        return bool(left == right)
    if step.op == "!=":
        return bool(left != right)
    if isinstance(left, bool) or isinstance(right, bool) or not isinstance(left, (int, float)) or \
            not isinstance(right, (int, float)):
        return False
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[step.op]


def text(value: Any) -> str:
    """A value as kubectl's jsonpath prints it (Go's fmt of the decoded value): strings as they are, whole
    numbers without a fraction, booleans in lower case, lists and maps as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if value is None:
        return "<nil>"
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return str(value)
