"""What the store hands out: immutable records of the current state, lists of them, and events of the history."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson


class EventType(enum.IntEnum):
    """The kind of a write, as stored in the log's ``type`` column and sent to watchers."""

    ADDED = 0
    MODIFIED = 1
    DELETED = 2


@dataclass(frozen=True, slots=True)
class Record:
    """One object at one revision. ``raw`` is its JSON with metadata.resourceVersion == str(mod_revision)."""

    key: str
    raw: bytes
    mod_revision: int
    create_revision: int

    def object(self) -> dict[str, Any]:
        """A fresh decoded copy: callers may mutate it freely."""
        result: dict[str, Any] = orjson.loads(self.raw)
        return result


@dataclass(slots=True)
class Event:
    """One write as watchers see it. ``raw`` is the object after the write (for DELETED: its last state, carrying
    the deletion's revision); ``prev_raw`` is the object before it (None for ADDED, or when compacted away).

    Treat it as immutable; ``encoded`` is a cache a transport may fill with the event's wire form so that one
    encoding serves every watcher."""

    type: EventType
    key: str
    revision: int
    raw: bytes
    prev_raw: bytes | None
    encoded: bytes | None = field(default=None, compare=False, repr=False)

    def object(self) -> dict[str, Any]:
        result: dict[str, Any] = orjson.loads(self.raw)
        return result


@dataclass(frozen=True)
class ListResult:
    items: list[Record]
    revision: int
    #: whether keys remain in the range after the last item (a continue token is due)
    more: bool
    #: how many keys remain after the last item, when no predicate filtered the list
    remaining: int | None


#: which records a list keeps (it is tested before the list's limit counts them)
Predicate = Callable[[Record], bool]
