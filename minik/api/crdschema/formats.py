"""The string formats Kubernetes checks in custom resources (kube-openapi's strfmt registry).

Kubernetes keeps only these formats of a CRD schema and drops any other (``int32``, ``int64``, ``float`` and
``double`` are not checked, nor is an unknown name); a format name is looked up without its dashes
(``date-time`` is ``datetime``).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import ipaddress
import re
from collections.abc import Callable
from email.utils import parseaddr
from urllib.parse import urlparse

Check = Callable[[str], bool]


def _rx(pattern: str, flags: int = 0) -> Check:
    compiled = re.compile(pattern, flags)
    return lambda text: compiled.search(text) is not None


_HOSTNAME = re.compile(r"^([a-zA-Z0-9\w]((-?[a-zA-Z0-9\w]{0,62})?)|([a-zA-Z0-9\w](([a-zA-Z0-9\-\w]{0,61}"
                       r"[a-zA-Z0-9\w])?)(\.)){1,}([a-zA-Z]|[^\W\d_]){2,63})$")


def _hostname(text: str) -> bool:
    if not _HOSTNAME.match(text) or len(text) > 255:
        return False
    return all(len(part) <= 63 for part in text.split("."))


def _email(text: str) -> bool:
    name, address = parseaddr(text)
    return bool(address) and "@" in address and not address.startswith("@") and not address.endswith("@")


def _uri(text: str) -> bool:
    if text.startswith("/"):
        return True
    try:
        return bool(urlparse(text).scheme)
    except ValueError:
        return False


def _ipv4(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv4Address)
    except ValueError:
        return False


def _ipv6(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv6Address)
    except ValueError:
        return False


def _cidr(text: str) -> bool:
    if "/" not in text:
        return False
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


def _date(text: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


_TIME = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")


def _datetime(text: str) -> bool:
    if len(text) < 4:
        return False
    parts = text.lower().split("t")
    if len(parts) < 2 or not _date(parts[0]):
        return False
    m = _TIME.match(parts[1])
    if not m:
        return False
    hour, minute, second = int(m.group(1)), int(m.group(2)), int(m.group(3))
    return hour <= 23 and minute <= 59 and second <= 59


_DURATION_UNITS = ("ns", "nano", "us", "µs", "micro", "ms", "milli", "s", "sec", "m", "min", "h", "hr", "d",
                   "day", "w", "wk")
_GO_DURATION = re.compile(r"[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+|[-+]?0")
_LOOSE_DURATION = re.compile(r"(\d+)\s*([A-Za-zµ]+)")


def _duration(text: str) -> bool:
    if _GO_DURATION.fullmatch(text):
        return True
    found = False
    for m in _LOOSE_DURATION.finditer(text):
        unit = m.group(2).lower()
        if unit.endswith("s") and unit[:-1] in _DURATION_UNITS:
            unit = unit[:-1]
        if unit not in _DURATION_UNITS:
            return False
        found = True
    return found


def _byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _isbn10(text: str) -> bool:
    digits = re.sub(r"[\s-]", "", text)
    if not re.fullmatch(r"\d{9}[\dX]", digits):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(digits))
    return total % 11 == 0


def _isbn13(text: str) -> bool:
    digits = re.sub(r"[\s-]", "", text)
    if not re.fullmatch(r"\d{13}", digits):
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(digits))
    return total % 10 == 0


def _creditcard(text: str) -> bool:
    digits = re.sub(r"[^0-9]", "", text)
    if not re.fullmatch(r"(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01]"
                        r"[0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])"
                        r"[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})", digits):
        return False
    total, double = 0, False
    for c in reversed(digits):
        d = int(c) * (2 if double else 1)
        total += d - 9 if d > 9 else d
        double = not double
    return total % 10 == 0


_UUID = r"[0-9a-f]{8}-?[0-9a-f]{4}-?%s[0-9a-f]{3}-?%s[0-9a-f]{3}-?[0-9a-f]{12}"

CHECKS: dict[str, Check] = {
    "bsonobjectid": _rx(r"^[0-9a-fA-F]{24}$"),
    "uri": _uri,
    "email": _email,
    "hostname": _hostname,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "cidr": _cidr,
    "mac": _rx(r"^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$|"
               r"^([0-9A-Fa-f]{2}[:-]){7}([0-9A-Fa-f]{2})$|^([0-9A-Fa-f]{2}[:-]){19}([0-9A-Fa-f]{2})$"),
    "uuid": _rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid3": _rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid4": _rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"),
    "uuid5": _rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"),
    "isbn": lambda text: _isbn10(text) or _isbn13(text),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": _creditcard,
    "ssn": _rx(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"),
    "hexcolor": _rx(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"),
    "rgbcolor": _rx(r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])"
                    r"\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$"),
    "byte": _byte,
    "password": lambda text: True,
    "date": _date,
    "duration": _duration,
    "datetime": _datetime,
}


def check_for(name: str) -> Check | None:
    """The check of a schema's ``format``, or None when Kubernetes drops the format."""
    return CHECKS.get(name.replace("-", ""))
