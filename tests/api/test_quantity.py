"""Kubernetes quantity syntax: SI and binary suffixes, exponents, and Kubernetes' error messages."""

from __future__ import annotations

from decimal import Decimal

import pytest

from minik.api.quantity import FORMAT_ERROR, SUFFIX_ERROR, milli_value_of, parse_quantity, value_of


@pytest.mark.parametrize("text, expected", [
    ("500m", Decimal("0.5")),
    ("1Gi", Decimal(2 ** 30)),
    ("1e3", Decimal(1000)),
    ("1E3", Decimal(1000)),
    ("1.5", Decimal("1.5")),
    ("2k", Decimal(2000)),
    ("128974848", Decimal(128974848)),
    ("129e6", Decimal(129_000_000)),
    ("129M", Decimal(129_000_000)),
    ("123Mi", Decimal(128974848)),
    ("100n", Decimal("0.0000001")),
    ("5u", Decimal("0.000005")),
    ("1Ki", Decimal(1024)),
    ("2Ti", Decimal(2 * 2 ** 40)),
    ("1P", Decimal(10 ** 15)),
    ("1E", Decimal(10 ** 18)),
    ("0", Decimal(0)),
    ("+1", Decimal(1)),
    ("-1", Decimal(-1)),
    (".5", Decimal("0.5")),
    ("1.", Decimal(1)),
    ("12e-3", Decimal("0.012")),
])
def test_every_kubernetes_quantity_form_parses_to_its_exact_value(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


def test_the_same_amount_written_three_ways_is_equal() -> None:
    assert parse_quantity("129e6") == parse_quantity("129M") == parse_quantity("129000000")
    assert parse_quantity("123Mi") == parse_quantity("128974848")


def test_json_numbers_are_quantities_too() -> None:
    assert parse_quantity(2) == Decimal(2)  # type: ignore[arg-type]
    assert parse_quantity(0.25) == Decimal("0.25")  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "Gi", " 1", "1 ", "2KiB", ".", "--1", "1/2"])
def test_text_that_is_not_a_number_is_a_format_error(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_quantity(text)
    assert str(info.value) == FORMAT_ERROR


@pytest.mark.parametrize("text", ["1K", "1e", "1Mii", "1mi", "1Gi1"])
def test_an_unknown_suffix_is_a_suffix_error(text: str) -> None:
    with pytest.raises(ValueError, match="unable to parse quantity's suffix"):
        parse_quantity(text)
    assert SUFFIX_ERROR == "unable to parse quantity's suffix"


def test_booleans_and_null_are_not_quantities() -> None:
    for value in (True, None, [1]):
        with pytest.raises(ValueError):
            parse_quantity(value)  # type: ignore[arg-type]


def test_value_and_milli_value_round_up_as_kubernetes_does() -> None:
    assert milli_value_of("100m") == 100
    assert milli_value_of("1.5") == 1500
    assert milli_value_of("0.1m") == 1
    assert value_of("1.5") == 2
    assert value_of("1Gi") == 2 ** 30
    assert value_of(Decimal("0.001")) == 1


@pytest.mark.parametrize("text", ["1\n", "1Gi\n", "100m\n", "1e3\n"])
def test_a_trailing_newline_is_not_part_of_a_quantity(text: str) -> None:
    with pytest.raises(ValueError):
        parse_quantity(text)


@pytest.mark.parametrize("text, printed", [
    ("100m", "100m"), ("0.1", "100m"), ("1000m", "1"), ("1.5", "1500m"), ("2000", "2k"), ("1500", "1500"),
    ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1.5Gi", "1536Mi"), ("1.5Ki", "1536"), ("512", "512"), ("1e3", "1e3"),
    ("12e-3", "12e-3"), ("0", "0"), ("-1", "-1"), ("0.5n", "1n"),
])
def test_a_quantity_prints_back_in_kubernetes_canonical_form(text: str, printed: str) -> None:
    from minik.api.quantity import canonical_quantity

    assert canonical_quantity(text) == printed


def test_a_sum_of_quantities_keeps_the_format_of_its_first_term() -> None:
    from minik.api.quantity import Quantity

    assert str(Quantity.parse("1Gi") + Quantity.parse("512Mi")) == "1536Mi"
    assert str(Quantity.parse("100m") + Quantity.parse("0.2")) == "300m"
    assert str(Quantity.parse("2") + Quantity.parse("1Ki")) == "1026"
