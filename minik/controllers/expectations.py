"""Expectations (Kubernetes' ControllerExpectations / UIDTrackingControllerExpectations): after a sync creates or
deletes pods, the controller waits until the informer has seen those writes before it syncs the owner again, so
it never counts its own in-flight creations as missing and creates twice. Expectations expire after five
minutes, so a lost event cannot wedge a controller forever.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from minik.aio.clock import SYSTEM_CLOCK, Clock

#: how long expectations hold before a sync goes ahead anyway (Kubernetes' ExpectationsTimeout)
EXPECTATIONS_TIMEOUT = 300.0


@dataclass
class _Expectation:
    adds: int = 0
    deletes: set[str] = field(default_factory=set)  # uids still to be seen gone (or marked for deletion)
    timestamp: float = 0.0


class Expectations:
    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._now = clock.monotonic
        self._items: dict[str, _Expectation] = {}

    def satisfied(self, key: str) -> bool:
        """True when nothing is expected for ``key`` (or the expectation has expired): the owner may sync."""
        e = self._items.get(key)
        if e is None:
            return True
        if e.adds <= 0 and not e.deletes:
            return True
        return self._now() - e.timestamp > EXPECTATIONS_TIMEOUT

    def expect(self, key: str, creations: int = 0, deletions: Iterable[str] = ()) -> None:
        """Creations and deletions (uids) made by one sync together."""
        self._items[key] = _Expectation(adds=creations, deletes=set(deletions), timestamp=self._now())

    def expect_creations(self, key: str, count: int) -> None:
        self._items[key] = _Expectation(adds=count, timestamp=self._now())

    def expect_deletions(self, key: str, uids: Iterable[str]) -> None:
        self._items[key] = _Expectation(deletes=set(uids), timestamp=self._now())

    def creation_observed(self, key: str) -> None:
        e = self._items.get(key)
        if e is not None:
            e.adds -= 1

    def creation_failed(self, key: str, count: int = 1) -> None:
        """Creations that were never made will never be observed."""
        e = self._items.get(key)
        if e is not None:
            e.adds -= count

    def deletion_observed(self, key: str, uid: str) -> None:
        e = self._items.get(key)
        if e is not None:
            e.deletes.discard(uid)

    def forget(self, key: str) -> None:
        self._items.pop(key, None)
