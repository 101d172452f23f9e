"""events.k8s.io/v1 Event: a second view of the core/v1 Events, as Kubernetes serves it. Both are one stored
object (kept in core/v1 form), converted on every read and write: reportingController <-> reportingComponent,
regarding <-> involvedObject, note <-> message, deprecatedSource/FirstTimestamp/LastTimestamp/Count <-> source,
firstTimestamp, lastTimestamp and count; eventTime, series, action, reason, related, reportingInstance and type
are the same.

Writes through events.k8s.io/v1 are held to its stricter rules (eventTime required, the deprecated fields
unset, series of at least 2, most fields immutable); the legacy rules of core/v1 apply to every event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj, dict_at
from minik.api.kinds.core import EventStrategy
from minik.api.registry import ResourceType
from minik.api.strategy import Strategy

__all__ = ["EventsV1Strategy", "SharedStorageType", "from_core", "to_core", "view_raw", "GROUP"]

GROUP = "events.k8s.io"
API_VERSION = f"{GROUP}/v1"

#: (events.k8s.io/v1 field, core/v1 field)
_RENAMED = (("reportingController", "reportingComponent"), ("regarding", "involvedObject"), ("note", "message"),
            ("deprecatedSource", "source"), ("deprecatedFirstTimestamp", "firstTimestamp"),
            ("deprecatedLastTimestamp", "lastTimestamp"), ("deprecatedCount", "count"))
_SAME = ("eventTime", "series", "reportingInstance", "action", "reason", "related", "type")


@dataclass(frozen=True)
class SharedStorageType(ResourceType):
    """A resource served from the stored objects of another (``storage_group``/``storage_plural``): its keys, lists
    and watches are that resource's; the API server converts each object on the way in and out."""

    storage_group: str = ""
    storage_plural: str = ""

    def prefix(self, namespace: str | None = None) -> str:
        base = f"/{self.storage_group or 'core'}/{self.storage_plural}/"
        if namespace is not None and self.namespaced:
            return f"{base}{namespace}/"
        return base


def from_core(event: Obj) -> Obj:
    """A core/v1 Event as events.k8s.io/v1 shows it (eventTime always, null when the event has none)."""
    out: Obj = {"apiVersion": API_VERSION, "kind": "Event", "metadata": event.get("metadata") or {},
                "eventTime": event.get("eventTime")}
    for field in _SAME:
        if event.get(field) is not None:
            out[field] = event[field]
    for new, old in _RENAMED:
        if event.get(old) is not None:
            out[new] = event[old]
    return out


def to_core(event: Obj) -> Obj:
    """An events.k8s.io/v1 Event as it is stored (core/v1)."""
    out: Obj = {"apiVersion": "v1", "kind": "Event", "metadata": event.get("metadata") or {}}
    for field in _SAME:
        if event.get(field) is not None:
            out[field] = event[field]
    for new, old in _RENAMED:
        if event.get(new) is not None:
            out[old] = event[new]
    return out


def view_raw(raw: bytes) -> bytes:
    """A stored event's JSON as events.k8s.io/v1 JSON."""
    return orjson.dumps(from_core(orjson.loads(raw)))


def _is_set(value: Any) -> bool:
    return value not in (None, "", 0, {})


#: what an update through events.k8s.io/v1 may not change (Kubernetes' ValidateEventUpdate names them by their
#: core field names)
_IMMUTABLE = (("regarding", "involvedObject"), ("reason", "reason"), ("note", "message"),
              ("deprecatedSource", "source"), ("deprecatedFirstTimestamp", "firstTimestamp"),
              ("deprecatedLastTimestamp", "lastTimestamp"), ("deprecatedCount", "count"), ("type", "type"),
              ("eventTime", "eventTime"), ("action", "action"), ("related", "related"),
              ("reportingController", "reportingController"), ("reportingInstance", "reportingInstance"))


class EventsV1Strategy(Strategy):
    """The rules of writes through events.k8s.io/v1, on objects in that form. Lists and watches select stored
    (core/v1) objects, so ``field_set`` reads that form, with core/v1's selectable fields."""

    _core = EventStrategy()

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj) + self._series(obj)
        if not obj.get("eventTime"):
            causes.append(v.required("eventTime"))
        if obj.get("type") not in ("Normal", "Warning"):
            causes.append(v.invalid("type", "", f"has invalid value: {obj.get('type') or ''}"))
        for field in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"):
            if _is_set(obj.get(field)):
                causes.append(v.invalid(field, "", "needs to be unset"))
        source = dict_at(obj, "deprecatedSource")
        if source.get("component") or source.get("host"):
            causes.append(v.invalid("deprecatedSource", "", "needs to be unset"))
        return causes

    @staticmethod
    def _series(obj: Obj) -> Causes:
        causes: Causes = []
        series = obj.get("series")
        if series is not None:
            if not isinstance(series, dict):
                causes.append(v.type_invalid("series", series, "must be an object"))
            else:
                count = series.get("count")
                if not v.is_int(count) or count < 2:
                    causes.append(v.invalid("series.count", "", "should be at least 2"))
                if not series.get("lastObservedTime"):
                    causes.append(v.required("series.lastObservedTime"))
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        causes = v.validate_object_meta_update(obj.get("metadata"), old.get("metadata")) + self._series(obj)
        for field, path in _IMMUTABLE:
            causes += v.validate_immutable(obj.get(field), old.get(field), path)
        return causes

    def field_set(self, obj: Obj) -> dict[str, str]:
        return self._core.field_set(obj)
