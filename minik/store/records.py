"""What the store hands out: immutable records of the current state and events of the history."""

from __future__ import annotations

import enum
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class Event:
    """One write as watchers see it. ``raw`` is the object after the write (for DELETED: its last state, carrying
    the deletion's revision); ``prev_raw`` is the object before it (None for ADDED, or when compacted away)."""

    type: EventType
    key: str
    revision: int
    raw: bytes
    prev_raw: bytes | None

    def object(self) -> dict[str, Any]:
        result: dict[str, Any] = orjson.loads(self.raw)
        return result
