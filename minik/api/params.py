"""Query parameters as the API reads them, for every server that speaks it (the API server, the kubelet)."""

from __future__ import annotations

from collections.abc import Mapping

from minik.api.errors import bad_request


def non_negative_int(query: Mapping[str, str], name: str, upper: int | None = None) -> int | None:
    """``name``'s value as an integer of at least 0 (None when absent or empty), capped at ``upper`` when given;
    anything else is a 400 BadRequest worded as Kubernetes words it."""
    value = query.get(name)
    if value in (None, ""):
        return None
    try:
        number = int(value)
    except ValueError:
        raise bad_request(f"{name}: Invalid value: {value!r}: must be an integer") from None
    if number < 0:
        raise bad_request(f"{name}: Invalid value: {number}: must be greater than or equal to 0")
    return number if upper is None else min(number, upper)
