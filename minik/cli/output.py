"""Text output as kubectl lays it out: tab-aligned columns, human ages, YAML and JSON documents."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import yaml

from minik.api.durations import human_duration  # noqa: F401 - re-exported for the CLI modules


# -- columns ----------------------------------------------------------------------------------------------------
def align(rows: Sequence[Sequence[str]], minwidth: int = 6, padding: int = 3) -> list[str]:
    """Lay out rows of cells as Go's text/tabwriter does (kubectl prints through it): every cell but a row's last
    is a column cell, padded to the widest cell of its column block plus ``padding`` (at least ``minwidth``); a
    column block is a run of consecutive rows that have a cell in that column, so a row with fewer cells ends the
    blocks to its right."""
    widths: list[list[int]] = [[0] * max(len(row) - 1, 0) for row in rows]

    def lay_out(column: int, start: int, end: int) -> None:
        i = start
        while i < end:
            if column >= len(rows[i]) - 1:
                i += 1
                continue
            j, width = i, minwidth
            while j < end and column < len(rows[j]) - 1:
                width = max(width, len(rows[j][column]) + padding)
                j += 1
            for k in range(i, j):
                widths[k][column] = width
            lay_out(column + 1, i, j)
            i = j

    lay_out(0, 0, len(rows))
    lines = []
    for row, row_widths in zip(rows, widths):
        cells = [cell.ljust(width) for cell, width in zip(row, row_widths)]
        if row:
            cells.append(row[-1])
        lines.append("".join(cells).rstrip())
    return lines


def cell_text(value: Any) -> str:
    """A Table cell as kubectl prints it: strings up to their first line break (then ``...``), numbers without a
    needless ``.0``, booleans in lower case, null as nothing."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    text = str(value)
    for i, ch in enumerate(text):
        if ch in "\n\r\f":
            return text[:i] + "..."
    return text


# -- time -------------------------------------------------------------------------------------------------------
def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def age(timestamp: Any, now: datetime | None = None) -> str:
    """How long ago an RFC 3339 timestamp was, or ``<unknown>``."""
    when = parse_time(timestamp)
    if when is None:
        return "<unknown>"
    return human_duration(((now or datetime.now(UTC)) - when).total_seconds())


# -- documents --------------------------------------------------------------------------------------------------
class _Dumper(yaml.SafeDumper):
    """YAML as kubectl writes it: keys sorted, block style, lists not indented under their key, multi-line
    strings as literal blocks, no line folding."""


_STR = "tag:yaml.org,2002:str"


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style: str | None = None
    if "\n" in value and not any(c in value for c in "\r\t"):
        style = "|"
    elif dumper.resolve(yaml.ScalarNode, value, (True, False)) != _STR:
        style = '"'  # would read back as a number, boolean, null or date: quoted, as kubectl quotes them
    return dumper.represent_scalar(_STR, value, style=style)


_Dumper.add_representer(str, _str)


def to_yaml(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_Dumper, default_flow_style=False, sort_keys=True, allow_unicode=True,
                     width=1 << 30)


def go_json(obj: Any, indent: int | None = None) -> str:
    """JSON as Go's encoding/json writes it: keys sorted, non-ASCII kept, ``<``, ``>``, ``&``, U+2028 and U+2029
    escaped; compact, or indented by ``indent`` spaces."""
    text = json.dumps(obj, indent=indent, sort_keys=True, ensure_ascii=False,
                      separators=(",", ": ") if indent is not None else (",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def to_json(obj: Any) -> str:
    """``-o json``: four-space indentation, as kubectl."""
    return go_json(obj, indent=4)
