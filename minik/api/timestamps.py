"""Timestamps, formatted in one place: RFC 3339 as Kubernetes writes them (UTC; whole seconds for a Time,
microseconds for a MicroTime), and the HTTP Date header. Shared by the API server and every component."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import formatdate
from typing import Generic, TypeVar

T = TypeVar("T")


def rfc3339(seconds: float) -> str:
    """A moment (seconds since the epoch) as Kubernetes writes a Time: "2026-11-23T08:00:00Z"."""
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(seconds: float) -> str:
    """A moment as Kubernetes writes a MicroTime (Lease renewTime, Event eventTime): "2026-11-23T08:00:00.123456Z"."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(value: str) -> float:
    """Seconds since the epoch of an RFC 3339 timestamp ("2026-11-23T08:00:00Z", fractions allowed; one without an
    offset is read as UTC). ValueError for anything else."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def parse_time(value: object) -> float | None:
    """Seconds since the epoch of a timestamp read from an object; None for none (or nonsense)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_rfc3339(value)
    except ValueError:
        return None


class EachSecond(Generic[T]):
    """The current second, formatted once per second: formatting costs more than the write (or the response) it
    stamps."""

    __slots__ = ("_format", "_second", "_value")

    def __init__(self, format_: Callable[[int], T]) -> None:
        self._format = format_
        self._second = 0
        self._value = format_(0)

    def at(self, second: int) -> T:
        if second != self._second:
            self._value = self._format(second)
            self._second = second
        return self._value


_RFC3339 = EachSecond(rfc3339)
_HTTP_DATE = EachSecond(lambda second: formatdate(second, usegmt=True).encode())


def now_rfc3339(delta_seconds: float = 0) -> str:
    """Now (plus ``delta_seconds``) as Kubernetes writes a Time."""
    return _RFC3339.at(int(time.time() + delta_seconds))


def http_date() -> bytes:
    """Now as an HTTP Date header's value: "Mon, 23 Nov 2026 08:00:00 GMT"."""
    return _HTTP_DATE.at(int(time.time()))
