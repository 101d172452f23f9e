"""The event window holds the newest events and says from which revision on it holds every one."""

from __future__ import annotations

from minik.store import Event, EventType
from minik.store.window import EventWindow


def event(key: str, revision: int) -> Event:
    return Event(EventType.ADDED, key, revision, b"{}", None)


def test_a_new_window_holds_every_event_after_the_revision_it_starts_at() -> None:
    window = EventWindow(3, 10)
    assert window.holds(10) and not window.holds(9)
    assert window.since("/", 10) == []


def test_the_oldest_events_make_room_and_the_window_then_holds_only_what_follows_them() -> None:
    window = EventWindow(3, 0)
    window.extend([event("/a/1", 1), event("/b/1", 2)])
    window.extend([event("/a/2", 3), event("/a/3", 4), event("/b/2", 5)])
    assert not window.holds(1) and window.holds(2)
    assert [e.revision for e in window.since("/a/", 2)] == [3, 4]
    assert [e.revision for e in window.since("/", 3)] == [4, 5]
