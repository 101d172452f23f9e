"""Timestamps read as Go's time.Parse reads a Time (RFC 3339) or a MicroTime (RFC 3339 with exactly six fraction
digits), and written back as Kubernetes writes them: UTC, to the second or the microsecond."""

from __future__ import annotations

import orjson
import pytest

from minik.api import gotime, schema
from minik.apiserver.protobuf import FIELDS_FILE

PYTHON_ISOFORMAT = "2026-11-27T19:52:34.819123+00:00"  # datetime.now(UTC).isoformat(), as kopf writes its Events


@pytest.mark.parametrize(("text", "stored"), [
    ("2026-11-27T19:52:34Z", "2026-11-27T19:52:34Z"),
    (PYTHON_ISOFORMAT, "2026-11-27T19:52:34Z"),  # the fraction is dropped, not rounded
    ("2026-11-27T19:52:34.999999999999Z", "2026-11-27T19:52:34Z"),
    ("2026-11-27T21:52:34+02:00", "2026-11-27T19:52:34Z"),
    ("2026-01-01T01:30:00+02:30", "2025-12-31T23:00:00Z"),  # across a year
    ("2026-11-27T9:05:00,5-01:00", "2026-11-27T10:05:00Z"),  # Go takes a one-digit hour and a comma
    ("2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z"),
    ("0001-01-01T00:00:00Z", None),  # Go's zero time is written as null
    ("0001-01-01T02:00:00+02:00", None),
    (None, None),
])
def test_a_time_is_stored_in_utc_to_the_second(text: str | None, stored: str | None) -> None:
    assert gotime.canonical_time(text) == stored


@pytest.mark.parametrize(("text", "stored"), [
    (PYTHON_ISOFORMAT, "2026-11-27T19:52:34.819123Z"),
    ("2026-11-27T19:52:34.000001Z", "2026-11-27T19:52:34.000001Z"),
    ("2026-11-27T20:52:34.500000+01:00", "2026-11-27T19:52:34.500000Z"),
    ("2026-11-27T19:52:34,123456Z", "2026-11-27T19:52:34.123456Z"),
    ("0001-01-01T00:00:00.000000Z", None),
])
def test_a_micro_time_is_stored_in_utc_to_the_microsecond(text: str, stored: str | None) -> None:
    assert gotime.canonical_micro_time(text) == stored


@pytest.mark.parametrize(("text", "message"), [
    ("yesterday", 'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'),
    ("2026-11-27 19:52:34Z",
     'parsing time "2026-11-27 19:52:34Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 19:52:34Z" as "T"'),
    ("2026-11-27T19:52:34", 'parsing time "2026-11-27T19:52:34" as "2006-01-02T15:04:05Z07:00": cannot parse "" as '
                            '"Z07:00"'),
    ("2026-11-27T19:52:34+0200",
     'parsing time "2026-11-27T19:52:34+0200" as "2006-01-02T15:04:05Z07:00": cannot parse "+0200" as "Z07:00"'),
    ("2026-11-27T19:52Z", 'parsing time "2026-11-27T19:52Z" as "2006-01-02T15:04:05Z07:00": cannot parse "Z" as ":"'),
    ("2026-1-27T19:52:34Z",
     'parsing time "2026-1-27T19:52:34Z" as "2006-01-02T15:04:05Z07:00": cannot parse "1-27T19:52:34Z" as "01"'),
    ("2026-13-01T00:00:00Z", 'parsing time "2026-13-01T00:00:00Z": month out of range'),
    ("2026-02-29T00:00:00Z", 'parsing time "2026-02-29T00:00:00Z": day out of range'),
    ("2026-11-27T24:00:00Z", 'parsing time "2026-11-27T24:00:00Z": hour out of range'),
    ("2026-11-27T19:60:00Z", 'parsing time "2026-11-27T19:60:00Z": minute out of range'),
    ("2026-11-27T19:52:60Z", 'parsing time "2026-11-27T19:52:60Z": second out of range'),
    ("2026-11-27T19:52:34+25:00", 'parsing time "2026-11-27T19:52:34+25:00": time zone offset hour out of range'),
    ("2026-11-27T19:52:34Z and more", 'parsing time "2026-11-27T19:52:34Z and more": extra text: " and more"'),
    ('2026-11-27T19:52:34"é',
     'parsing time "2026-11-27T19:52:34\\"\\xc3\\xa9" as "2006-01-02T15:04:05Z07:00": cannot parse "\\"\\xc3\\xa9" '
     'as "Z07:00"'),
])
def test_what_go_cannot_parse_as_a_time_is_refused_with_its_message(text: str, message: str) -> None:
    with pytest.raises(gotime.TimeParseError) as refused:
        gotime.canonical_time(text)
    assert refused.value.message == message


@pytest.mark.parametrize(("text", "message"), [
    ("2026-11-27T19:52:34Z", 'parsing time "2026-11-27T19:52:34Z" as "2006-01-02T15:04:05.000000Z07:00": cannot '
                             'parse "Z" as ".000000"'),
    ("2026-11-27T19:52:34.123Z", 'parsing time "2026-11-27T19:52:34.123Z" as "2006-01-02T15:04:05.000000Z07:00": '
                                 'cannot parse ".123Z" as ".000000"'),
    ("2026-11-27T19:52:34.123456789Z",
     'parsing time "2026-11-27T19:52:34.123456789Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "789Z" as '
     '"Z07:00"'),
    ("2026-11-27T19:52:34.-12345Z", 'parsing time "2026-11-27T19:52:34.-12345Z": fractional second out of range'),
])
def test_a_micro_time_needs_exactly_six_fraction_digits(text: str, message: str) -> None:
    with pytest.raises(gotime.TimeParseError) as refused:
        gotime.canonical_micro_time(text)
    assert refused.value.message == message


def test_times_far_from_now_round_trip_as_go_formats_them() -> None:
    for text in ("1970-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "0000-03-01T00:00:00Z", "9999-12-31T23:59:59Z",
                 "2000-02-29T12:00:00Z", "1900-03-01T00:00:00Z"):
        seconds, nanos = gotime.parse(text, gotime.RFC3339)
        assert gotime.format_time(seconds, nanos, gotime.RFC3339) == text
    assert gotime.canonical_time("9999-12-31T23:59:59-01:00") == "10000-01-01T00:59:59Z"
    assert gotime.canonical_time("0000-01-01T00:30:00+01:00") == "-0001-12-31T23:30:00Z"


def test_the_micro_time_fields_are_those_kubernetes_declares_micro_time() -> None:
    """schema.json says date-time for Time and MicroTime alike; protobuf_fields.json, from Kubernetes' own
    definitions, knows which are which."""
    messages = orjson.loads(FIELDS_FILE.read_bytes())["messages"]
    types = schema.load().types
    declared = {("io.k8s." + name.removeprefix("k8s.io."), field)  # k8s.io.api.core.v1.Event: io.k8s.api.core...
                for name, fields in messages.items()
                for field, type_, _mode in fields.values() if type_.endswith(".meta.v1.MicroTime")}
    served = {(type_name, field) for type_name, field in declared if type_name in types}
    assert served == schema.MICRO_TIME_FIELDS
    for type_name, field in schema.MICRO_TIME_FIELDS:
        assert types[type_name].properties[field].type == "date-time"
