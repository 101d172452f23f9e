"""Exponential back-off, in one place: the delay after N failures (``exponential``), a sequence of delays for one
retry loop (``Backoff``), and a back-off window per key (``KeyedBackoff``)."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


def exponential(initial: float, maximum: float, step: int, factor: float = 2.0) -> float:
    """``initial * factor**step`` seconds, at most ``maximum`` (step 0 is ``initial``)."""
    try:
        return min(initial * factor ** step, maximum)
    except OverflowError:  # far past any maximum
        return maximum


class Backoff:
    """Exponential backoff: ``next()`` returns ``initial``, then ``initial * factor``, ... capped at ``maximum``.

    ``jitter`` adds up to that fraction of each delay at random, so many clients retrying together spread out.
    """

    def __init__(self, initial: float = 0.2, maximum: float = 30.0, factor: float = 2.0, jitter: float = 0.0) -> None:
        if initial <= 0 or maximum < initial or factor < 1:
            raise ValueError("need 0 < initial <= maximum and factor >= 1")
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self._steps = 0

    def next(self) -> float:
        delay = exponential(self.initial, self.maximum, self._steps, self.factor)
        if delay < self.maximum:
            self._steps += 1
        if self.jitter:
            delay = min(delay * (1 + random.random() * self.jitter), self.maximum)
        return delay

    def reset(self) -> None:
        self._steps = 0


class KeyedBackoff(Generic[K]):
    """A back-off window per key (client-go's flowcontrol.Backoff, behind the kubelet's CrashLoopBackOff and image
    pull back-off and the DaemonSet controller's failed pods). Each ``step`` of a key opens a window of ``initial``
    seconds, then twice the previous one, at most ``maximum``; a key whose last window opened more than twice the
    maximum ago starts over from ``initial``. Times are the caller's (``now``), so any clock will do."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial = initial
        self.maximum = maximum
        #: key -> (the window's length, when it opened)
        self._windows: dict[K, tuple[float, float]] = {}

    def remaining(self, key: K, now: float) -> float:
        """Seconds left of the key's window (0 when it is over, or the key has none)."""
        window = self._windows.get(key)
        if window is None:
            return 0.0
        delay, since = window
        return max(0.0, since + delay - now)

    def delay(self, key: K) -> float | None:
        """The length of the key's last window (None when it has none)."""
        window = self._windows.get(key)
        return None if window is None else window[0]

    def step(self, key: K, now: float) -> float:
        """Open the key's next window at ``now`` and return its length."""
        window = self._windows.get(key)
        if window is None or now - window[1] > 2 * self.maximum:
            delay = self.initial
        else:
            delay = min(window[0] * 2, self.maximum)
        self._windows[key] = (delay, now)
        return delay

    def reset(self, key: K) -> None:
        """The key succeeded: its next step starts over from ``initial``."""
        self._windows.pop(key, None)

    def reset_where(self, chosen: Callable[[K], bool]) -> None:
        """``reset`` every key ``chosen`` picks."""
        for key in [k for k in self._windows if chosen(k)]:
            del self._windows[key]
