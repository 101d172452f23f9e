"""Event expiry: an Event is removed once it has not been updated for the TTL (1 h by default), as the API
server's --event-ttl does in Kubernetes (there an etcd lease renewed at each write). An Event's last update is
its lastTimestamp, series.lastObservedTime or eventTime, whichever is latest (its creation, when it has none)."""

from __future__ import annotations

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.timestamps import parse_time
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder

DEFAULT_TTL_SECONDS = 3600.0


def last_seen(event: Obj) -> float | None:
    stamps = [parse_time(event.get("lastTimestamp")), parse_time((event.get("series") or {}).get("lastObservedTime")),
              parse_time(event.get("eventTime")), parse_time((event.get("metadata") or {}).get("creationTimestamp"))]
    known = [s for s in stamps if s is not None]
    return max(known) if known else None


def times_only(event: Obj) -> Obj:
    """What the controller keeps of an Event: its identity and its times (a large cluster has an Event per pod)."""
    meta = event.get("metadata") or {}
    kept: Obj = {"metadata": {field: meta[field] for field in ("name", "namespace", "uid", "resourceVersion",
                                                               "creationTimestamp") if field in meta}}
    for field in ("lastTimestamp", "eventTime"):
        if event.get(field) is not None:
            kept[field] = event[field]
    observed = (event.get("series") or {}).get("lastObservedTime")
    if observed is not None:
        kept["series"] = {"lastObservedTime": observed}
    return kept


class EventTTLController(Controller):
    name = "event-ttl"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 1, clock: Clock | None = None,
                 recorder: Recorder | None = None, *, ttl_seconds: float = DEFAULT_TTL_SECONDS) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.ttl_seconds = ttl_seconds
        self.events = factory.informer("events", transform=times_only)
        self.events.add_handlers(self.enqueue, lambda old, new: self.enqueue(new))

    async def sync(self, key: str) -> None:
        event = self.events.get(key)
        if event is None:
            return
        seen = last_seen(event)
        if seen is None:
            return
        remaining = seen + self.ttl_seconds - self.clock.now()
        if remaining > 0:
            self.enqueue_after(event, remaining)
            return
        meta = event["metadata"]
        try:
            await self.client.delete("events", meta["name"], meta.get("namespace"),
                                     preconditions={"uid": meta["uid"], "resourceVersion": meta["resourceVersion"]})
        except StatusError as exc:
            if exc.code not in (404, 409):  # 409: updated since (a repeat): its new time decides
                raise
