"""Cron schedules as CronJobs use them (the standard 5-field syntax and the @descriptors Kubernetes accepts).

``parse_schedule`` raises ValueError with the messages of the parser Kubernetes uses (robfig/cron), which the
CronJob validation reports; ``Schedule.next_after`` gives the next time the schedule fires.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

_MONTHS = {name: i + 1 for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_WEEKDAYS = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
#: (minimum, maximum, names) of minute, hour, day of month, month, day of week
_FIELDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS), (0, 6, _WEEKDAYS))
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


@dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    weekdays: frozenset[int] = frozenset()
    #: day of month / day of week were "*" (or "?"): then both must match, otherwise either may
    any_day: bool = True
    any_weekday: bool = True
    #: set for "@every <duration>": fire at that fixed interval instead
    every: timedelta | None = None

    def _day_matches(self, t: datetime) -> bool:
        dom = t.day in self.days
        dow = (t.weekday() + 1) % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow

    def next_after(self, after: datetime) -> datetime | None:
        """The first time strictly after ``after`` (to the minute) when the schedule fires; None when it never
        does within five years (``0 0 30 2 *``). Works in ``after``'s own time zone."""
        if self.every is not None:
            return after.replace(microsecond=0) + self.every
        t = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = t.year + 5
        while t.year <= limit:
            if t.month not in self.months:
                t = (t.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
            elif not self._day_matches(t):
                t = t.replace(hour=0, minute=0) + timedelta(days=1)
            elif t.hour not in self.hours:
                t = t.replace(minute=0) + timedelta(hours=1)
            elif t.minute not in self.minutes:
                t += timedelta(minutes=1)
            else:
                return t
        return None


def _number(text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text):  # \d would take digits of any script, which Atoi does not
        raise ValueError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    number = int(text)
    if number < 0:
        raise ValueError(f"negative number ({number}) not allowed: {text}")
    return number


def _range(expr: str, low: int, high: int, names: dict[str, int]) -> tuple[set[int], bool]:
    """One comma-separated part of a field: the values it allows, and whether it is a bare star."""
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    star = False
    if low_high[0] in ("*", "?"):
        start, end, star = low, high, True
    else:
        start = names[low_high[0].lower()] if low_high[0].lower() in names else _number(low_high[0])
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = names[low_high[1].lower()] if low_high[1].lower() in names else _number(low_high[1])
        else:
            raise ValueError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _number(range_and_step[1])
        if len(low_high) == 1:
            end = high  # "N/step" means "N-max/step"
        if step > 1:
            star = False
    else:
        raise ValueError(f"too many slashes: {expr}")
    assert start is not None and end is not None
    if start < low:
        raise ValueError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise ValueError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ValueError(f"step of range should be a positive number: {expr}")
    return set(range(start, end + 1, step)), star


def _duration(text: str) -> timedelta:
    """A Go duration such as ``1h30m`` or ``90s``."""
    pos, seconds = 0, 0.0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None:
            raise ValueError(f'time: invalid duration "{text}"')
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if not text:
        raise ValueError('time: invalid duration ""')
    return timedelta(seconds=max(1, int(seconds)))


def parse_schedule(text: str) -> Schedule:
    spec = text.strip()
    if not spec:
        raise ValueError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        _, _, spec = spec.partition(" ")
        spec = spec.strip()
    if spec.startswith("@"):
        if spec.startswith("@every "):
            duration = spec[len("@every "):].strip()
            try:
                return Schedule(every=_duration(duration))
            except ValueError as exc:
                raise ValueError(f"failed to parse duration {spec}: {exc}") from None
        if spec not in _DESCRIPTORS:
            raise ValueError(f"unrecognized descriptor: {spec}")
        spec = _DESCRIPTORS[spec]
    fields = spec.split()
    if len(fields) != 5:
        raise ValueError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    values: list[frozenset[int]] = []
    stars: list[bool] = []
    for field, (low, high, names) in zip(fields, _FIELDS):
        allowed: set[int] = set()
        star = False
        for part in field.split(","):
            part_values, part_star = _range(part, low, high, names)
            allowed |= part_values
            star = star or part_star
        values.append(frozenset(allowed))
        stars.append(star)
    return Schedule(values[0], values[1], values[2], values[3], values[4], any_day=stars[2], any_weekday=stars[4])
