"""Rate limits measured on a controller's clock: a token bucket and the FIFO of names it lets through
(Kubernetes' flowcontrol token bucket and RateLimitedTimedQueue, as the node lifecycle controller uses them)."""

from __future__ import annotations

from minik.aio.clock import Clock


class TokenBucket:
    """``qps`` tokens a second, at most ``burst`` saved up; a rate of 0 lets nothing through."""

    def __init__(self, qps: float, clock: Clock, burst: int = 1) -> None:
        self.qps = qps
        self.burst = burst
        self._now = clock.now
        self._tokens = float(burst)
        self._last = self._now()

    def set_rate(self, qps: float) -> None:
        """Swap the rate (SwapLimiter); a bucket that was shut (0) starts full again."""
        if qps == self.qps:
            return
        self._refill()
        if self.qps == 0 and qps > 0:
            self._tokens = float(self.burst)
        self.qps = qps

    def _refill(self) -> None:
        now = self._now()
        if self.qps > 0:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    def try_accept(self) -> bool:
        self._refill()
        if self.qps <= 0 or self._tokens < 1:
            return False
        self._tokens -= 1
        return True


class RateLimitedQueue:
    """Names (nodes) waiting their turn through a token bucket; each name at most once, in arrival order."""

    def __init__(self, bucket: TokenBucket) -> None:
        self.bucket = bucket
        self._items: dict[str, None] = {}

    def add(self, name: str) -> bool:
        if name in self._items:
            return False
        self._items[name] = None
        return True

    def remove(self, name: str) -> None:
        self._items.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __len__(self) -> int:
        return len(self._items)

    def take(self) -> list[str]:
        """The names the bucket lets through now, removed from the queue."""
        out = []
        for name in list(self._items):
            if not self.bucket.try_accept():
                break
            del self._items[name]
            out.append(name)
        return out
