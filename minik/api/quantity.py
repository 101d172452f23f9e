"""Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource): ``500m``, ``1Gi``, ``1e3``, ``129M``.

A quantity is a decimal number with an optional suffix: a binary SI suffix (Ki, Mi, Gi, Ti, Pi, Ei), a decimal SI
suffix (n, u, m, k, M, G, T, P, E) or a decimal exponent (``e3``, ``E-2``). Values are exact ``Decimal``s.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import NamedTuple

#: the message Kubernetes gives for text that is not a quantity at all
FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
#: the message Kubernetes gives for a number followed by an unknown suffix
SUFFIX_ERROR = "unable to parse quantity's suffix"

#: matched with fullmatch: ``^...$`` with match would take "1Gi\n" for 1Gi
_SHAPE = re.compile(r"([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")
_EXPONENT = re.compile(r"[eE][-+]?[0-9]+")

_BINARY = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(text: str) -> Decimal:
    """The exact value of a quantity string; ValueError (with Kubernetes' message) when it is not one."""
    if not isinstance(text, str):
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            # JSON numbers are accepted where a quantity is expected, as Kubernetes' unmarshaller does
            return Decimal(str(text))
        raise ValueError(FORMAT_ERROR)
    match = _SHAPE.fullmatch(text)
    if match is None or not _NUMBER.fullmatch(match.group(1)):
        raise ValueError(FORMAT_ERROR)
    number, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation:
        raise ValueError(FORMAT_ERROR) from None
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    if suffix in _DECIMAL:
        return value.scaleb(_DECIMAL[suffix])
    if _EXPONENT.fullmatch(suffix):
        return value.scaleb(int(suffix[1:]))
    raise ValueError(SUFFIX_ERROR)


#: quantity strings known to parse (the same few, "100m" and "64Mi", come with every pod); starts over when full
_PARSED: set[str] = set()
_PARSED_SIZE = 4096


def is_quantity(text: object) -> bool:
    if type(text) is str and text in _PARSED:
        return True
    try:
        parse_quantity(text)  # type: ignore[arg-type]
    except ValueError:
        return False
    if type(text) is str:
        if len(_PARSED) >= _PARSED_SIZE:
            _PARSED.clear()
        _PARSED.add(text)
    return True


def value_of(quantity: str | Decimal) -> int:
    """The quantity as a whole number, rounded up (Kubernetes' ``Quantity.Value``): memory in bytes."""
    q = quantity if isinstance(quantity, Decimal) else parse_quantity(quantity)
    return int(q.to_integral_value(rounding=ROUND_CEILING))


def milli_value_of(quantity: str | Decimal) -> int:
    """The quantity in thousandths, rounded up (Kubernetes' ``Quantity.MilliValue``): CPU in millicores."""
    q = quantity if isinstance(quantity, Decimal) else parse_quantity(quantity)
    return int((q * 1000).to_integral_value(rounding=ROUND_CEILING))


# -- printing -----------------------------------------------------------------------------------------------------
#: Kubernetes' three formats: a quantity prints in the format its text was written in (its suffix decides)
DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"

_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_NANO = Decimal("1e-9")


def quantity_format(text: object) -> str:
    """The format of a quantity as written: BinarySI for ``Ki``..``Ei``, DecimalExponent for ``e3``, else
    DecimalSI (a JSON number too)."""
    if not isinstance(text, str):
        return DECIMAL_SI
    match = _SHAPE.fullmatch(text)
    suffix = match.group(2) if match is not None else ""
    if suffix in _BINARY:
        return BINARY_SI
    if suffix and _EXPONENT.fullmatch(suffix):
        return DECIMAL_EXPONENT
    return DECIMAL_SI


def format_quantity(value: Decimal, fmt: str = DECIMAL_SI) -> str:
    """A quantity's canonical text, as Kubernetes' ``Quantity.String()`` prints it: an integer with the largest
    suffix that keeps it whole (``0.1`` -> ``100m``, ``2048`` in BinarySI -> ``2Ki``, ``1500`` -> ``1500``);
    amounts finer than a nano are rounded up to one."""
    value = (value / _NANO).to_integral_value(rounding=ROUND_CEILING) * _NANO
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    magnitude = -value if value < 0 else value
    if fmt == BINARY_SI and magnitude >= 1024 and magnitude == magnitude.to_integral_value():
        number, power = int(magnitude), 0
        while number % 1024 == 0 and power < len(_BINARY_SUFFIXES) - 1:
            number //= 1024
            power += 1
        return f"{sign}{number}{_BINARY_SUFFIXES[power]}"
    number, exponent = int(magnitude / _NANO), -9  # a whole number of nanos
    while number % 1000 == 0 and exponent < 18:
        number //= 1000
        exponent += 3
    if fmt == DECIMAL_EXPONENT:
        return f"{sign}{number}" + (f"e{exponent}" if exponent else "")
    return f"{sign}{number}{_DECIMAL_SUFFIXES[exponent]}"


def canonical_quantity(text: object) -> str:
    """``text`` (a valid quantity) as Kubernetes prints it back: ``1000m`` -> ``1``, ``0.5Gi`` -> ``512Mi``."""
    return format_quantity(parse_quantity(text), quantity_format(text))  # type: ignore[arg-type]


class Quantity(NamedTuple):
    """An amount and the format it prints in (a sum keeps the format of its first term, as Kubernetes' Add)."""

    value: Decimal
    fmt: str = DECIMAL_SI

    @classmethod
    def parse(cls, text: object) -> Quantity:
        """ValueError with Kubernetes' message when ``text`` is not a quantity."""
        return cls(parse_quantity(text), quantity_format(text))  # type: ignore[arg-type]

    def __add__(self, other: object) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self.value + other.value, self.fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.value - other.value, self.fmt)

    def __str__(self) -> str:
        return format_quantity(self.value, self.fmt)


#: resource name -> amount (Kubernetes' ResourceList)
ResourceList = dict[str, Quantity]


def resource_list(values: object) -> ResourceList:
    """The valid quantities of a map of resource name to quantity text (others are left out: validation reports
    them)."""
    out: ResourceList = {}
    if isinstance(values, dict):
        for name, text in values.items():
            try:
                out[str(name)] = Quantity.parse(text)
            except ValueError:
                continue
    return out
