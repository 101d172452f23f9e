"""Cron schedules: parsing as Kubernetes' CronJob validation does, and finding the next time one fires."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from minik.api.cron import parse_schedule

T0 = datetime(2025, 3, 14, 10, 7, 30, tzinfo=UTC)  # a Friday


@pytest.mark.parametrize("schedule, expected", [
    ("* * * * *", datetime(2025, 3, 14, 10, 8, tzinfo=UTC)),
    ("*/15 * * * *", datetime(2025, 3, 14, 10, 15, tzinfo=UTC)),
    ("0 * * * *", datetime(2025, 3, 14, 11, 0, tzinfo=UTC)),
    ("@hourly", datetime(2025, 3, 14, 11, 0, tzinfo=UTC)),
    ("@daily", datetime(2025, 3, 15, 0, 0, tzinfo=UTC)),
    ("30 9 * * mon", datetime(2025, 3, 17, 9, 30, tzinfo=UTC)),
    ("0 0 1 * *", datetime(2025, 4, 1, 0, 0, tzinfo=UTC)),
    ("@yearly", datetime(2026, 1, 1, 0, 0, tzinfo=UTC)),
    ("0 12 29 feb *", datetime(2028, 2, 29, 12, 0, tzinfo=UTC)),
])
def test_the_next_run_is_the_first_matching_minute_after_now(schedule: str, expected: datetime) -> None:
    assert parse_schedule(schedule).next_after(T0) == expected


def test_a_restricted_day_of_month_or_week_fires_on_either() -> None:
    # the 20th or any Monday, as cron has always meant it
    schedule = parse_schedule("0 0 20 * 1")
    assert schedule.next_after(T0) == datetime(2025, 3, 17, 0, 0, tzinfo=UTC)
    assert schedule.next_after(datetime(2025, 3, 17, 1, 0, tzinfo=UTC)) == \
        datetime(2025, 3, 20, 0, 0, tzinfo=UTC)


def test_at_every_fires_at_a_fixed_interval() -> None:
    assert parse_schedule("@every 1h30m").next_after(T0) == T0 + timedelta(hours=1, minutes=30)


def test_a_schedule_that_never_fires_has_no_next_run() -> None:
    assert parse_schedule("0 0 30 2 *").next_after(T0) is None


@pytest.mark.parametrize("schedule, message", [
    ("", "empty spec string"),
    ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
    ("* * * * 7", "end of range (7) above maximum (6): 7"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("*/2/3 * * * *", "too many slashes: */2/3"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("@every soon", 'failed to parse duration @every soon: time: invalid duration "soon"'),
])
def test_bad_schedules_explain_themselves(schedule: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_schedule(schedule)
    assert str(info.value) == message
