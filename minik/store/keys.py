"""How the store's keys are laid out ("/group/plural/namespace/name", as the registry makes them) and ranged."""

from __future__ import annotations


def prefix_end(prefix: str) -> str:
    """The smallest string greater than every string starting with ``prefix``."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def type_prefix(key: str) -> str:
    """The "/group/plural/" a key starts with (the whole key when it has fewer parts)."""
    first = key.find("/", 1)
    second = key.find("/", first + 1) if first >= 0 else -1
    return key[:second + 1] if second >= 0 else key
