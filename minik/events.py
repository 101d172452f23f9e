"""Events for every component: one recorder that writes core/v1 Events the way client-go's recorder does.

``recorder.event(obj, "Normal", "Scheduled", "Successfully assigned default/web to node-1")`` returns at once;
a background task writes the event. Repeats are aggregated as Kubernetes' EventCorrelator does:

- the same event again (same object, type, reason, message and source) bumps ``count`` and ``lastTimestamp`` of
  the Event already written instead of writing a new one;
- more than ``similar_limit`` events that differ only in their message within ``similar_window_seconds`` are
  folded into one Event whose message starts with "(combined from similar events): ".

Repeats that arrive before the writer gets to them are folded in memory, so a burst costs one write.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from minik.aio import start_task, stop_task
from minik.api.errors import StatusError
from minik.api.timestamps import now_rfc3339
from minik.client import Client, TransportError

log = structlog.get_logger("minik.events")

Obj = dict[str, Any]

NORMAL = "Normal"
WARNING = "Warning"

_COMBINED = "(combined from similar events): "

#: the involved-object fields an Event carries (an ObjectReference)
_REFERENCE_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion")

#: the involved-object fields that tell events apart (with the type, the reason and the message)
_KEY_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "fieldPath")


def object_reference(obj: Mapping[str, Any], field_path: str | None = None) -> Obj:
    """An ObjectReference to ``obj``, which must carry ``kind`` and ``apiVersion`` (as objects read from the API
    do)."""
    meta = obj.get("metadata") or {}
    if not obj.get("kind") or not obj.get("apiVersion"):
        raise ValueError("an event's object needs kind and apiVersion")
    ref: Obj = {"kind": obj["kind"], "apiVersion": obj["apiVersion"]}
    for field in ("namespace", "name", "uid", "resourceVersion"):
        if meta.get(field):
            ref[field] = meta[field]
    if field_path:
        ref["fieldPath"] = field_path
    return ref


@dataclass
class _Written:
    """An Event already in the API, kept so a repeat can bump its count."""

    namespace: str
    name: str
    count: int
    first_timestamp: str


@dataclass
class _Pending:
    """An event waiting for the writer; ``repeats`` counts the occurrences folded into it."""

    reference: Obj
    type_: str
    reason: str
    message: str
    repeats: int
    last_timestamp: str


class EventRecorder:
    """Writes Events for one component (``source.component``, e.g. "default-scheduler"), aggregating repeats.

    Never blocks and never fails the caller: when the API cannot be reached, events are logged and dropped, as
    client-go does after its retries; a full backlog (``max_pending``) drops new events with a warning.
    """

    def __init__(self, client: Client, component: str, host: str | None = None, *, cache_size: int = 4096,
                 max_pending: int = 10_000, similar_limit: int = 10, similar_window_seconds: float = 600.0) -> None:
        self.client = client
        self.component = component
        self.host = host
        self.cache_size = cache_size
        self.max_pending = max_pending
        self.similar_limit = similar_limit
        self.similar_window_seconds = similar_window_seconds
        self._written: OrderedDict[tuple[Any, ...], _Written] = OrderedDict()
        self._similar: OrderedDict[tuple[Any, ...], tuple[float, set[str]]] = OrderedDict()
        self._pending: dict[tuple[Any, ...], _Pending] = {}
        self._wake = asyncio.Event()
        #: set while everything recorded has been written (what flush and stop wait for)
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._log = log.bind(component=component)

    async def start(self) -> None:
        if self._task is None:
            self._task = start_task(self._run(), name=f"events-{self.component}")

    async def stop(self, flush_timeout_seconds: float = 2.0) -> None:
        """Write what is pending (for at most ``flush_timeout_seconds``), then stop the writer."""
        if self._task is None:
            return
        if self._pending:
            await self._until_idle(flush_timeout_seconds)
        await stop_task(self._task)
        self._task = None

    async def flush(self) -> None:
        """Wait until every event recorded so far has been written (for tests and orderly shutdowns)."""
        await self._until_idle()

    async def _until_idle(self, timeout: float | None = None) -> None:
        """Until the writer has written everything recorded so far, has stopped, or ``timeout`` has passed."""
        if self._task is None or self._task.done() or self._idle.is_set():
            return
        self._wake.set()
        idle = asyncio.ensure_future(self._idle.wait())
        try:
            await asyncio.wait([idle, self._task], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            idle.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await idle

    # -- recording ------------------------------------------------------------------------------------------
    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str, *,
              field_path: str | None = None) -> None:
        """Record an event about ``obj``. ``type_`` is "Normal" or "Warning"; ``reason`` is UpperCamelCase."""
        reference = object_reference(obj, field_path)
        group = (*(reference.get(f, "") for f in _KEY_FIELDS), type_, reason)
        if self._too_many_similar(group, message):
            # one Event per group from here on, its message the latest one
            key = (*group, _COMBINED)
            message = _COMBINED + message
        else:
            key = (*group, message)
        pending = self._pending.get(key)
        if pending is not None:
            pending.repeats += 1
            pending.message = message
            pending.last_timestamp = now_rfc3339()
        elif len(self._pending) >= self.max_pending:
            self._log.warning("event dropped: backlog full", reason=reason, object=reference.get("name"))
            return
        else:
            self._pending[key] = _Pending(reference, type_, reason, message, 1, now_rfc3339())
        self._idle.clear()
        self._wake.set()

    def _too_many_similar(self, group: tuple[Any, ...], message: str) -> bool:
        """Whether more than ``similar_limit`` messages were recorded for this group (object, type and reason)
        within the window (Kubernetes' EventAggregator)."""
        now = time.monotonic()
        found = self._similar.get(group)
        if found is None or now - found[0] > self.similar_window_seconds:
            found = (now, {message})
            self._similar.pop(group, None)
            self._similar[group] = found  # the newest at the end
            while len(self._similar) > self.cache_size:
                self._similar.popitem(last=False)
            return len(found[1]) > self.similar_limit
        messages = found[1]
        if len(messages) <= self.similar_limit:  # past the limit, what matters is only that it was passed
            messages.add(message)
        self._similar.move_to_end(group)
        return len(messages) > self.similar_limit

    # -- writing --------------------------------------------------------------------------------------------
    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                batch, self._pending = self._pending, {}
                for key, pending in batch.items():
                    await self._write(key, pending)
            self._idle.set()

    async def _write(self, key: tuple[Any, ...], pending: _Pending) -> None:
        written = self._written.get(key)
        try:
            if written is not None:
                await self._bump(written, pending)
                self._written.move_to_end(key)
                return
            self._written[key] = await self._create(pending)
            while len(self._written) > self.cache_size:
                self._written.popitem(last=False)
        except StatusError as exc:
            if exc.code == 404 and written is not None:  # the Event expired: write it afresh
                del self._written[key]
                await self._write(key, pending)
                return
            self._log.warning("event not written", reason=pending.reason, error=exc.message)
        except TransportError as exc:
            self._log.warning("event not written: API unreachable", reason=pending.reason, error=str(exc))

    async def _create(self, pending: _Pending) -> _Written:
        ref = pending.reference
        namespace = ref.get("namespace") or "default"
        name = f"{ref.get('name', '')}.{time.time_ns():x}"
        source: Obj = {"component": self.component}
        if self.host:
            source["host"] = self.host
        event: Obj = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref, "reason": pending.reason, "message": pending.message, "type": pending.type_,
            "source": source, "firstTimestamp": pending.last_timestamp, "lastTimestamp": pending.last_timestamp,
            "count": pending.repeats, "reportingComponent": self.component, "reportingInstance": self.host or "",
        }
        await self.client.create("events", event, namespace)
        return _Written(namespace, name, pending.repeats, pending.last_timestamp)

    async def _bump(self, written: _Written, pending: _Pending) -> None:
        count = written.count + pending.repeats
        await self.client.patch("events", written.name, {"count": count, "lastTimestamp": pending.last_timestamp,
                                                        "message": pending.message}, written.namespace)
        written.count = count
