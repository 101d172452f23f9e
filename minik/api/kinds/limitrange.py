"""LimitRange (core/v1): per-namespace minimums, maximums, defaults and limit/request ratios for containers, pods
and claims. The LimitRanger admission plugin (minik.apiserver.admission.limit_ranger) applies them to pods."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj, dict_at, dicts_at
from minik.api.kinds.resourcenames import (
    overcommit_allowed,
    resource_map,
    validate_container_resource_name,
    validate_resource_name,
)
from minik.api.quantity import canonical_quantity, parse_quantity
from minik.api.strategy import Strategy

__all__ = ["LimitRangeStrategy", "CONTAINER", "POD", "PERSISTENT_VOLUME_CLAIM"]

CONTAINER, POD, PERSISTENT_VOLUME_CLAIM = "Container", "Pod", "PersistentVolumeClaim"
LIMIT_TYPES = (POD, CONTAINER, PERSISTENT_VOLUME_CLAIM)
_FIELDS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def default_limit_item(item: Obj) -> None:
    """A Container item's defaults, as Kubernetes' SetDefaults_LimitRangeItem: the default limit is the max, the
    default request the default limit, else the min."""
    if item.get("type") != CONTAINER:
        return
    if any(item.get(field) is not None and not isinstance(item[field], dict) for field in _FIELDS):
        return  # validation reports it
    defaults, requests = dict(dict_at(item, "default")), dict(dict_at(item, "defaultRequest"))
    for name, value in dict_at(item, "max").items():
        defaults.setdefault(name, value)
    for name, value in defaults.items():
        requests.setdefault(name, value)
    for name, value in dict_at(item, "min").items():
        requests.setdefault(name, value)
    if defaults:
        item["default"] = defaults
    if requests:
        item["defaultRequest"] = requests


class LimitRangeStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        for item in dicts_at(dict_at(obj, "spec"), "limits"):
            default_limit_item(item)

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if spec is not None and not isinstance(spec, dict):
            return causes + [v.type_invalid("spec", spec, "must be an object")]
        limits = (spec or {}).get("limits")
        if limits is None:
            return causes
        if not isinstance(limits, list):
            return causes + [v.type_invalid("spec.limits", limits, "must be a list")]
        seen: set[Any] = set()
        for i, item in enumerate(limits):
            at = v.index("spec.limits", i)
            if not isinstance(item, dict):
                causes.append(v.type_invalid(at, item, "must be an object"))
                continue
            kind = item.get("type")
            causes += _validate_type(kind, v.child(at, "type"))
            if kind in seen:
                causes.append(v.duplicate(v.child(at, "type"), kind))
            seen.add(kind)
            causes += _validate_item(item, str(kind or ""), at)
        return causes


def _validate_type(kind: Any, path: str) -> Causes:
    if not isinstance(kind, str) or not kind:
        return [v.required(path)]
    causes = [v.invalid(path, kind, m) for m in v.is_qualified_name(kind)]
    if not causes and "/" not in kind and kind not in LIMIT_TYPES:
        causes.append(v.invalid(path, kind, "must be a standard limit type or fully qualified"))
    return causes


def _validate_item(item: Obj, kind: str, at: str) -> Causes:
    causes: Causes = []
    values: dict[str, dict[str, Decimal]] = {}
    texts: dict[str, dict[str, str]] = {}
    check_name = validate_container_resource_name if kind in (POD, CONTAINER) else validate_resource_name
    for field in _FIELDS:
        path = v.child(at, field)
        given, shape = resource_map(item.get(field), path)
        causes += shape
        if kind == POD and field in ("default", "defaultRequest"):
            if given:
                causes.append(v.forbidden(path, "may not be specified when `type` is 'Pod'"))
            continue
        values[field], texts[field] = {}, {}
        for name, quantity in given.items():
            key_at = v.index(path, name)
            causes += check_name(str(name), key_at)
            try:
                values[field][name] = parse_quantity(quantity)
            except ValueError as exc:
                causes.append(v.invalid(key_at, quantity, str(exc)))
                continue
            texts[field][name] = canonical_quantity(quantity)
    if kind == PERSISTENT_VOLUME_CLAIM and "storage" not in values.get("min", {}) and \
            "storage" not in values.get("max", {}):
        causes.append(v.required(v.child(at, "limits"),
                                 "either minimum or maximum storage value is required, but neither was provided"))
    names = sorted({name for field in values.values() for name in field})
    for name in names:
        causes += _validate_bounds(name, values, texts, at)
    return causes


def _validate_bounds(name: str, values: dict[str, dict[str, Decimal]], texts: dict[str, dict[str, str]],
                     at: str) -> Causes:
    """The rules between one resource's min, max, default, defaultRequest and ratio, in Kubernetes' order."""
    causes: Causes = []
    low, high = values.get("min", {}).get(name), values.get("max", {}).get(name)
    limit, request = values.get("default", {}).get(name), values.get("defaultRequest", {}).get(name)
    ratio = values.get("maxLimitRequestRatio", {}).get(name)

    def text(field: str) -> str:
        return texts[field][name]

    def key(field: str) -> str:
        return v.index(v.child(at, field), name)

    if low is not None and high is not None and low > high:
        causes.append(v.invalid(key("min"), text("min"),
                                f"min value {text('min')} is greater than max value {text('max')}"))
    if request is not None and low is not None and low > request:
        causes.append(v.invalid(key("defaultRequest"), text("defaultRequest"),
                                f"min value {text('min')} is greater than default request value "
                                f"{text('defaultRequest')}"))
    if request is not None and high is not None and request > high:
        causes.append(v.invalid(key("defaultRequest"), text("defaultRequest"),
                                f"default request value {text('defaultRequest')} is greater than max value "
                                f"{text('max')}"))
    if request is not None and limit is not None and request > limit:
        causes.append(v.invalid(key("defaultRequest"), text("defaultRequest"),
                                f"default request value {text('defaultRequest')} is greater than default limit "
                                f"value {text('default')}"))
    if limit is not None and low is not None and low > limit:
        causes.append(v.invalid(key("default"), text("min"),
                                f"min value {text('min')} is greater than default value {text('default')}"))
    if limit is not None and high is not None and limit > high:
        causes.append(v.invalid(key("default"), text("max"),
                                f"default value {text('default')} is greater than max value {text('max')}"))
    if ratio is not None and ratio < 1:
        causes.append(v.invalid(key("maxLimitRequestRatio"), text("maxLimitRequestRatio"),
                                f"ratio {text('maxLimitRequestRatio')} is less than 1"))
    if ratio is not None and low is not None and high is not None and low > 0:
        bound = high / low
        if ratio > bound:
            causes.append(v.invalid(key("maxLimitRequestRatio"), text("maxLimitRequestRatio"),
                                    f"ratio {text('maxLimitRequestRatio')} is greater than max/min = "
                                    f"{float(bound):f}"))
    if not overcommit_allowed(name) and limit is not None and request is not None and limit != request:
        causes.append(v.invalid(key("defaultRequest"), text("defaultRequest"),
                                f"default value {text('default')} must equal to defaultRequest value "
                                f"{text('defaultRequest')} in {name}"))
    return causes
