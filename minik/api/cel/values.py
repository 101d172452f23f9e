"""JSON values as CEL values where Kubernetes gives an expression more than the JSON: a schema's string formats
(``byte``, ``duration``, ``date``, ``date-time``) become bytes, durations and timestamps. Every other JSON value
serves as it is (objects as maps, arrays as lists, integers as int, numbers as double)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str) -> dt.timedelta:
    """Go's time.ParseDuration (``1h30m``, ``-1.5s``, ``300ms``)."""
    rest, sign = text, 1
    if rest[:1] in "+-" and rest:
        sign, rest = (-1 if rest[0] == "-" else 1), rest[1:]
    if rest == "0":
        return dt.timedelta(0)
    if not rest:
        raise ValueError(f'time: invalid duration "{text}"')
    seconds, pos = 0.0, 0
    while pos < len(rest):
        m = _DURATION_PART.match(rest, pos)
        if not m:
            raise ValueError(f'time: invalid duration "{text}"')
        seconds += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return dt.timedelta(seconds=sign * seconds)


def parse_timestamp(text: str) -> dt.datetime:
    """An RFC 3339 date-time or full-date as a UTC-aware datetime."""
    if len(text) == 10:
        return dt.datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=dt.UTC)
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def decode_bytes(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return text.encode()
