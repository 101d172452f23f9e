"""Small helpers the kind strategies share: tolerant access to plain-dict objects, and workload rules."""

from __future__ import annotations

from typing import Any

from minik.api import validation as v
from minik.api.errors import Cause
from minik.api.selectors import selector_from_dict

Obj = dict[str, Any]
Causes = list[Cause]


def dict_at(obj: Any, key: str) -> Obj:
    """``obj[key]`` when it is a dict, else an empty dict (validation reports wrong types separately)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def list_at(obj: Any, key: str) -> list[Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, list) else []


def dicts_at(obj: Any, key: str) -> list[Obj]:
    """The dict entries of the list ``obj[key]``."""
    return [i for i in list_at(obj, key) if isinstance(i, dict)]


def ensure_dict(obj: Obj, key: str) -> Obj | None:
    """``obj[key]``, created empty when missing or null; None when it holds something that is not a dict."""
    if obj.get(key) is None:
        obj[key] = {}
    value = obj[key]
    return value if isinstance(value, dict) else None


def set_default(obj: Obj, key: str, value: Any) -> None:
    """Set ``obj[key]`` when it is missing, null or the empty string (Go's zero value for enums)."""
    if obj.get(key) in (None, ""):
        obj[key] = value


def expect_object(value: Any, path: str, *, required: bool = True) -> Causes:
    """A cause when a required object is missing or a value is not an object."""
    if value is None:
        return [v.required(path)] if required else []
    return [] if isinstance(value, dict) else [v.type_invalid(path, value, "must be an object")]


def labels_of(obj: Any) -> dict[str, str]:
    labels = dict_at(dict_at(obj, "metadata"), "labels")
    return {k: str(val) for k, val in labels.items()}


# -- workload controllers -----------------------------------------------------------------------------------------

SELECTOR_MISMATCH = "`selector` does not match template `labels`"


def validate_workload_selector(spec: Obj, path: str, kind_word: str) -> Causes:
    """An apps/v1 or batch/v1 selector: required, valid, not empty, and matching the template's labels."""
    selector = spec.get("selector")
    at = v.child(path, "selector")
    if selector is None:
        return [v.required(at)]
    causes = v.validate_label_selector(selector, at)
    if causes:
        return causes
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return [v.invalid(at, selector, f"empty selector is invalid for {kind_word}")]
    try:
        matcher = selector_from_dict(selector)
    except ValueError:
        return [v.invalid(at, selector, "invalid label selector")]
    template = dict_at(spec, "template")
    labels = labels_of(template)
    if not matcher.matches(labels):
        return [v.invalid(v.child(path, "template", "metadata", "labels"), labels, SELECTOR_MISMATCH)]
    return []


def validate_int_or_percent(value: Any, path: str) -> Causes:
    """A non-negative integer or a percentage string (maxSurge, maxUnavailable)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.invalid(path, value, m) for m in v.is_valid_percent(value)]
    return v.validate_nonnegative(value, path)


def int_or_percent_value(value: Any) -> int:
    if isinstance(value, str):
        digits = value.rstrip("%")
        return int(digits) if digits.isdigit() else 0
    return value if v.is_int(value) else 0


def validate_not_more_than_100_percent(value: Any, path: str) -> Causes:
    if isinstance(value, str) and value.endswith("%") and int_or_percent_value(value) > 100:
        return [v.invalid(path, value, "must not be greater than 100%")]
    return []


def validate_restart_always(template: Any, path: str, kind: str) -> Causes:
    """Controllers that keep pods running need restartPolicy Always and no activeDeadlineSeconds."""
    spec = dict_at(template, "spec")
    causes: Causes = []
    policy = spec.get("restartPolicy")
    if policy != "Always":
        causes.append(v.not_supported(v.child(path, "spec", "restartPolicy"), policy or "", ["Always"]))
    if spec.get("activeDeadlineSeconds") is not None:
        causes.append(v.forbidden(v.child(path, "spec", "activeDeadlineSeconds"),
                                  f"activeDeadlineSeconds in {kind} is not Supported"))
    return causes

