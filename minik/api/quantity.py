"""Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource): ``500m``, ``1Gi``, ``1e3``, ``129M``.

A quantity is a decimal number with an optional suffix: a binary SI suffix (Ki, Mi, Gi, Ti, Pi, Ei), a decimal SI
suffix (n, u, m, k, M, G, T, P, E) or a decimal exponent (``e3``, ``E-2``). Values are exact ``Decimal``s.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

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


def is_quantity(text: object) -> bool:
    try:
        parse_quantity(text)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def value_of(quantity: str | Decimal) -> int:
    """The quantity as a whole number, rounded up (Kubernetes' ``Quantity.Value``): memory in bytes."""
    q = quantity if isinstance(quantity, Decimal) else parse_quantity(quantity)
    return int(q.to_integral_value(rounding=ROUND_CEILING))


def milli_value_of(quantity: str | Decimal) -> int:
    """The quantity in thousandths, rounded up (Kubernetes' ``Quantity.MilliValue``): CPU in millicores."""
    q = quantity if isinstance(quantity, Decimal) else parse_quantity(quantity)
    return int((q * 1000).to_integral_value(rounding=ROUND_CEILING))
