"""The event window: the newest events in memory, so that a watch from a recent revision starts without reading
the backend (a watch from further back replays the log)."""

from __future__ import annotations

from collections import deque

from minik.store.records import Event


class EventWindow:
    """The last ``size`` events, in revision order."""

    def __init__(self, size: int, revision: int) -> None:
        self._events: deque[Event] = deque(maxlen=size)
        #: every event after this revision is in the window
        self.floor = revision

    def extend(self, events: list[Event]) -> None:
        """Add a commit's events; the oldest ones make room."""
        window = self._events
        for event in events:
            if len(window) == window.maxlen:
                self.floor = window[0].revision
            window.append(event)

    def holds(self, after: int) -> bool:
        """Whether every event after revision ``after`` is here."""
        return after >= self.floor

    def since(self, prefix: str, after: int) -> list[Event]:
        """The events under ``prefix`` after revision ``after`` (which the window holds), in order."""
        backlog: list[Event] = []
        for event in reversed(self._events):
            if event.revision <= after:
                break
            if event.key.startswith(prefix):
                backlog.append(event)
        backlog.reverse()
        return backlog
