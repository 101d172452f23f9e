"""ResourceQuota (core/v1): hard limits on what a namespace holds. The ResourceQuota admission plugin enforces them
(minik.apiserver.admission.resource_quota) and the resource quota controller keeps status.hard and status.used
(minik.controllers.resourcequota); the counting rules are minik.api.quota's."""

from __future__ import annotations

from typing import Any

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj, dict_at
from minik.api.kinds.resourcenames import (
    is_integer,
    is_standard_quota_name,
    resource_map,
    validate_quota_resource_name,
    validate_resource_name,
)
from minik.api.quantity import parse_quantity
from minik.api.quota import (
    BEST_EFFORT,
    CROSS_NAMESPACE_POD_AFFINITY,
    NOT_BEST_EFFORT,
    NOT_TERMINATING,
    SCOPES,
    TERMINATING,
)
from minik.api.strategy import Strategy

__all__ = ["ResourceQuotaStrategy"]

_CONFLICTING = ((BEST_EFFORT, NOT_BEST_EFFORT), (TERMINATING, NOT_TERMINATING))


def validate_quantities(values: Any, path: str, *, quota_names: bool) -> Causes:
    """A ResourceList of a quota: valid names, non-negative quantities, whole numbers for object counts."""
    given, causes = resource_map(values, path)
    for name, quantity in given.items():
        at = v.index(path, name)
        causes += (validate_quota_resource_name if quota_names else validate_resource_name)(str(name), at)
        try:
            amount = parse_quantity(quantity)
        except ValueError as exc:
            causes.append(v.invalid(at, quantity, str(exc)))
            continue
        if amount < 0:
            causes.append(v.invalid(at, str(quantity), "must be greater than or equal to 0"))
        if is_integer(str(name)) and (amount * 1000) % 1000 != 0:
            causes.append(v.invalid(at, str(quantity), "must be an integer"))
    return causes


#: what the scopes other than BestEffort may count; BestEffort pods have no compute resources, so it counts pods
_SCOPED_RESOURCES = frozenset({"pods", "cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu",
                               "limits.memory"})
_EXISTS_ONLY = (TERMINATING, NOT_TERMINATING, BEST_EFFORT, NOT_BEST_EFFORT, CROSS_NAMESPACE_POD_AFFINITY)


def _scope_refused(scope: Any, hard: list[str]) -> bool:
    """Whether a standard resource of ``hard`` cannot be counted under ``scope``."""
    if scope not in SCOPES:
        return False
    allowed = {"pods"} if scope == BEST_EFFORT else _SCOPED_RESOURCES
    return any(is_standard_quota_name(name) and name not in allowed for name in hard)


def _conflicts(scopes: set[Any]) -> bool:
    return any(all(s in scopes for s in pair) for pair in _CONFLICTING)


def _validate_scopes(spec: Obj) -> Causes:
    scopes = spec.get("scopes")
    if not scopes:
        return []
    if not isinstance(scopes, list):
        return [v.type_invalid("spec.scopes", scopes, "must be a list")]
    causes: Causes = []
    hard = sorted(str(n) for n in dict_at(spec, "hard"))
    for scope in scopes:
        if scope not in SCOPES:
            causes.append(v.invalid("spec.scopes", scopes, "unsupported scope"))
        if _scope_refused(scope, hard):
            causes.append(v.invalid("spec.scopes", scopes, "unsupported scope applied to resource"))
    if _conflicts(set(map(str, scopes))):
        causes.append(v.invalid("spec.scopes", scopes, "conflicting scopes"))
    return causes


def _validate_scope_selector(spec: Obj) -> Causes:
    selector = spec.get("scopeSelector")
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [v.type_invalid("spec.scopeSelector", selector, "must be an object")]
    expressions = selector.get("matchExpressions") or []
    at = "spec.scopeSelector.matchExpressions"
    if not isinstance(expressions, list):
        return [v.type_invalid(at, expressions, "must be a list")]
    causes: Causes = []
    hard = sorted(str(n) for n in dict_at(spec, "hard"))
    seen: set[Any] = set()
    for expr in expressions:
        if not isinstance(expr, dict):
            causes.append(v.type_invalid(at, expr, "must be an object"))
            continue
        scope, operator, values = expr.get("scopeName"), expr.get("operator"), expr.get("values") or []
        if scope not in SCOPES:
            causes.append(v.invalid(v.child(at, "scopeName"), scope, "unsupported scope"))
        if _scope_refused(scope, hard):
            causes.append(v.invalid(at, selector, "unsupported scope applied to resource"))
        if scope in _EXISTS_ONLY and operator != "Exists":
            causes.append(v.invalid(v.child(at, "operator"), operator,
                                    "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, "
                                    "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
                                    "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
        if operator in ("In", "NotIn"):
            if not values:
                causes.append(v.required(v.child(at, "values"), "must be at least one value when `operator` is "
                                                                 "'In' or 'NotIn' for scope selector"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                causes.append(v.invalid(v.child(at, "values"), values, "must be no value when `operator` is "
                                                                       "'Exist' or 'DoesNotExist' for scope "
                                                                       "selector"))
        else:
            causes.append(v.invalid(v.child(at, "operator"), operator, "not a valid selector operator"))
        seen.add(scope)
    if _conflicts(seen):
        causes.append(v.invalid(at, spec.get("scopes") or [], "conflicting scopes"))
    return causes


class ResourceQuotaStrategy(Strategy):
    has_status = True

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if spec is not None and not isinstance(spec, dict):
            return causes + [v.type_invalid("spec", spec, "must be an object")]
        spec = spec or {}
        causes += validate_quantities(spec.get("hard"), "spec.hard", quota_names=True)
        causes += _validate_scopes(spec)
        causes += _validate_scope_selector(spec)
        status = obj.get("status")
        if isinstance(status, dict):
            causes += validate_quantities(status.get("hard"), "status.hard", quota_names=False)
            causes += validate_quantities(status.get("used"), "status.used", quota_names=False)
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        causes = super().validate_update(obj, old)
        scopes = dict_at(obj, "spec").get("scopes") or []
        old_scopes = dict_at(old, "spec").get("scopes") or []
        if isinstance(scopes, list) and isinstance(old_scopes, list) and set(map(str, scopes)) != \
                set(map(str, old_scopes)):
            causes.append(v.invalid("spec.scopes", scopes, v.FIELD_IMMUTABLE))
        return causes
