"""Timestamps as Kubernetes reads them into a Time or MicroTime field (an Event's lastTimestamp and eventTime, a
condition's lastTransitionTime, a Lease's renewTime...) and writes them back.

Kubernetes' decoder reads a Time with Go's ``time.Parse(time.RFC3339, ...)`` and a MicroTime with the layout
``2006-01-02T15:04:05.000000Z07:00``; the field holds the instant, so a read gives it back in UTC: a Time to the
second (``2026-11-27T19:52:34Z``, the fraction dropped), a MicroTime to the microsecond
(``2026-11-27T19:52:34.819123Z``); the zero instant (0001-01-01T00:00:00Z) and null read back as null. A client
that writes ``2026-11-27T19:52:34.819123+00:00`` (Python's ``isoformat()``, as kopf posts its Events) gets that
back. Go's parser is followed step by step, so what it takes (a one-digit hour, a comma before the fraction, any
number of fraction digits in a Time) is taken and what it refuses is refused with its message (``parsing time
"yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"``); a MicroTime needs exactly six
fraction digits, as in Go.
"""

from __future__ import annotations

import functools
import re

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"

#: the layouts as Go's parser walks them: (literal prefix, layout element) pairs
_ELEMENTS = {
    RFC3339: (("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05"), ("", "Z07:00")),
    RFC3339_MICRO: (("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05"),
                    ("", ".000000"), ("", "Z07:00")),
}
#: what most clients write, and every minik component: checked by range, kept as it is
_CANONICAL = {
    RFC3339: re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z", re.ASCII),
    RFC3339_MICRO: re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.\d{6}Z", re.ASCII),
}
_ZERO_SECONDS = -62135596800  # 0001-01-01T00:00:00Z, Go's zero Time, as seconds since the epoch
_ZERO_TEXTS = frozenset({"0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000Z"})


class TimeParseError(ValueError):
    """Go's time.ParseError, worded as its Error() words it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def canonical_time(value: str | None) -> str | None:
    """A Time field's value as Kubernetes stores it; TimeParseError where Go's decoder gives up."""
    return None if value is None else canonical(value, RFC3339)


def canonical_micro_time(value: str | None) -> str | None:
    """A MicroTime field's value as Kubernetes stores it; TimeParseError where Go's decoder gives up."""
    return None if value is None else canonical(value, RFC3339_MICRO)


@functools.lru_cache(maxsize=4096)
def canonical(value: str, layout: str) -> str | None:
    """``value`` read with ``layout`` (RFC3339 for a Time, RFC3339_MICRO for a MicroTime) and written back as
    Kubernetes writes it. Remembered: the same few timestamps come by again and again (every write of an object
    carries its creationTimestamp and its conditions' times), and reading one costs microseconds."""
    match = _CANONICAL[layout].fullmatch(value)
    if match is not None and _in_range(*(int(g) for g in match.groups())):
        return None if value in _ZERO_TEXTS else value
    seconds, nanos = parse(value, layout)
    if seconds == _ZERO_SECONDS and nanos == 0:
        return None
    return format_time(seconds, nanos, layout)


def _in_range(year: int, month: int, day: int, hour: int, minute: int, second: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= _days_in(month, year) and hour < 24 and minute < 60 and second < 60


def parse(value: str, layout: str) -> tuple[int, int]:
    """Seconds since the epoch and nanoseconds of ``value`` read with Go's ``time.Parse(layout, value)`` (one of
    RFC3339 and RFC3339_MICRO); TimeParseError with Go's message where Go gives up."""
    raw = value.encode("utf-8", "surrogatepass")
    rest = raw
    year = month = day = hour = minute = second = nanos = offset = 0
    for prefix, element in _ELEMENTS[layout]:
        if not rest.startswith(prefix.encode()):
            raise _error(layout, raw, prefix.encode(), rest)
        rest = rest[len(prefix):]
        hold = rest
        failed = False
        out_of_range = ""
        if element == "2006":
            failed = len(rest) < 4 or not _all_digits(rest[:4])
            if not failed:
                year, rest = int(rest[:4]), rest[4:]
        elif element == "01":
            month, rest, failed = _getnum(rest, True)
            if not failed and not 1 <= month <= 12:
                out_of_range = "month"
        elif element == "02":
            day, rest, failed = _getnum(rest, True)  # checked against the month once all is read, as Go does
        elif element == "15":
            hour, rest, failed = _getnum(rest, False)
            if hour >= 24:
                out_of_range = "hour"
        elif element == "04":
            minute, rest, failed = _getnum(rest, True)
            if minute >= 60:
                out_of_range = "minute"
        elif element == "05":
            second, rest, failed = _getnum(rest, True)
            if not failed and second >= 60:
                out_of_range = "second"
            elif not failed and layout == RFC3339 and len(rest) >= 2 and rest[:1] in b".," and _digit(rest, 1):
                # a fraction the layout does not ask for: Go reads (and a Time drops) any number of digits
                n = 2
                while n < len(rest) and _digit(rest, n):
                    n += 1
                nanos, out_of_range, failed = _nanoseconds(rest, n)
                rest = rest[n:]
        elif element == ".000000":
            failed = len(rest) < 7
            if not failed:
                nanos, out_of_range, failed = _nanoseconds(rest, 7)
                rest = rest[7:]
        else:  # Z07:00
            if rest[:1] == b"Z":
                rest = rest[1:]
            elif len(rest) < 6 or rest[3:4] != b":":
                failed = True
            else:
                sign, hours, minutes, rest = rest[:1], rest[1:3], rest[4:6], rest[6:]
                zone_hours, _, failed = _getnum(hours, True)
                zone_minutes = 0
                if not failed:
                    zone_minutes, _, failed = _getnum(minutes, True)
                if zone_hours > 24:
                    out_of_range = "time zone offset hour"
                if zone_minutes > 60:
                    out_of_range = "time zone offset minute"
                offset = (zone_hours * 60 + zone_minutes) * 60 * (-1 if sign == b"-" else 1)
                failed = failed or sign not in (b"+", b"-")
        if out_of_range:
            raise _error(layout, raw, element.encode(), rest, f": {out_of_range} out of range")
        if failed:
            raise _error(layout, raw, element.encode(), hold)
    if rest:
        raise _error(layout, raw, b"", rest, ": extra text: " + _quote(rest))
    if day < 1 or day > _days_in(month, year):
        raise _error(layout, raw, b"", rest, ": day out of range")
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset
    return seconds, nanos


def format_time(seconds: int, nanos: int, layout: str) -> str:
    """An instant as Go formats it in UTC with ``layout`` (RFC3339: whole seconds, the fraction dropped)."""
    days, in_day = divmod(seconds, 86400)
    year, month, day = _civil_from_days(days)
    hour, in_hour = divmod(in_day, 3600)
    minute, second = divmod(in_hour, 60)
    year_text = f"-{-year:04d}" if year < 0 else f"{year:04d}"
    fraction = f".{nanos // 1000:06d}" if layout == RFC3339_MICRO else ""
    return f"{year_text}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{fraction}Z"


def _digit(data: bytes, i: int) -> bool:
    return i < len(data) and 0x30 <= data[i] <= 0x39


def _all_digits(data: bytes) -> bool:
    return all(0x30 <= b <= 0x39 for b in data)


def _getnum(data: bytes, fixed: bool) -> tuple[int, bytes, bool]:
    """Go's getnum: one or two leading digits (exactly two when ``fixed``); (number, rest, failed)."""
    if not _digit(data, 0):
        return 0, data, True
    if not _digit(data, 1):
        if fixed:
            return 0, data, True
        return data[0] - 0x30, data[1:], False
    return (data[0] - 0x30) * 10 + data[1] - 0x30, data[2:], False


def _nanoseconds(data: bytes, n: int) -> tuple[int, str, bool]:
    """Go's parseNanoseconds of ``data[:n]``: a period or comma, then what its atoi reads (digits past the ninth
    dropped, and a sign taken, so ".-00001" is out of range); (nanoseconds, out of range, failed)."""
    if data[:1] not in (b".", b","):
        return 0, "", True
    n = min(n, 10)
    number = data[1:n]
    digits = number[1:] if number[:1] in (b"+", b"-") else number
    if not digits or not _all_digits(digits):
        return 0, "", True
    value = int(digits) * (-1 if number[:1] == b"-" else 1)
    if value < 0:
        return 0, "fractional second", False
    return value * 10 ** (10 - n), "", False


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, unlike datetime)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + (3 if shifted_month < 10 else -9)
    return year_of_era + era * 400 + (month <= 2), month, day


def _quote(data: bytes) -> str:
    """Go's time.quote: double quotes, a backslash before quotes and backslashes, \\x escapes for other bytes that
    are not printable ASCII."""
    out = ['"']
    for b in data:
        if b < 0x20 or b >= 0x80:
            out.append(f"\\x{b:02x}")
        else:
            out.append(("\\" if b in b'"\\' else "") + chr(b))
    out.append('"')
    return "".join(out)


def _error(layout: str, value: bytes, layout_element: bytes, value_element: bytes, message: str = ""
           ) -> TimeParseError:
    """Go's ParseError, as its Error() words it."""
    if message:
        return TimeParseError(f"parsing time {_quote(value)}{message}")
    return TimeParseError(f"parsing time {_quote(value)} as {_quote(layout.encode())}: cannot parse "
                          f"{_quote(value_element)} as {_quote(layout_element)}")
