"""Timestamps as Kubernetes writes them (RFC 3339, UTC, whole seconds), shared by the API server and components."""

from __future__ import annotations

import time
from datetime import datetime, timezone

_last_second: list[tuple[int, str]] = [(-1, "")]


def now_rfc3339(delta_seconds: float = 0) -> str:
    """Now (plus ``delta_seconds``) as Kubernetes writes timestamps: RFC 3339, UTC, whole seconds.

    Formatting costs more than the write it stamps, so the text of the current second is cached."""
    second = int(time.time() + delta_seconds)
    cached = _last_second[0]
    if cached[0] == second:
        return cached[1]
    text = datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    _last_second[0] = (second, text)
    return text


def rfc3339(seconds: float) -> str:
    """A moment (seconds since the epoch) as Kubernetes writes timestamps."""
    return datetime.fromtimestamp(int(seconds), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(value: str) -> float:
    """Seconds since the epoch of an RFC 3339 timestamp ("2026-11-23T08:00:00Z", fractions allowed)."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
