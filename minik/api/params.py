"""Query parameters as the API reads them, for every server that speaks it (the API server, the kubelet)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from minik.api.errors import bad_request

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1

#: what Go's strconv.ParseInt(s, 10, 64) reads: ASCII digits after an optional sign, and nothing else (Python's
#: int() would also take spaces around them, underscores between them and digits of other scripts)
_INTEGER = re.compile(r"[+-]?[0-9]+")


def _digits(text: str) -> int | None:
    """The integer ``text`` writes, when it has the syntax Go reads; None otherwise."""
    if not _INTEGER.fullmatch(text):
        return None
    try:
        return int(text)
    except ValueError:  # over Python's 4300-digit limit for int(): far out of any range
        return INT64_MAX + 1


def go_int(text: str) -> int | None:
    """``text`` as Go's strconv.ParseInt(text, 10, 64) reads it (label values compared by Gt and Lt); None where
    Go fails."""
    number = _digits(text)
    return number if number is not None and INT64_MIN <= number <= INT64_MAX else None


def parse_int64(name: str, value: str) -> int:
    """``value`` of the parameter ``name`` as Kubernetes reads its int64 parameters (tailLines, limitBytes,
    sinceSeconds, gracePeriodSeconds, limit, timeoutSeconds); a 400 BadRequest when it is not an integer or does
    not fit in 64 bits."""
    number = _digits(value)
    if number is None:
        raise bad_request(f"{name}: Invalid value: {value!r}: must be an integer")
    if not INT64_MIN <= number <= INT64_MAX:
        raise bad_request(f"{name}: Invalid value: {value!r}: must fit in a 64-bit integer")
    return number


def non_negative_int(query: Mapping[str, str], name: str, upper: int | None = None) -> int | None:
    """``name``'s value as an integer of at least 0 (None when absent or empty), capped at ``upper`` when given;
    anything else is a 400 BadRequest worded as Kubernetes words it."""
    value = query.get(name)
    if value in (None, ""):
        return None
    number = parse_int64(name, value)
    if number < 0:
        raise bad_request(f"{name}: Invalid value: {number}: must be greater than or equal to 0")
    return number if upper is None else min(number, upper)
