"""ValidatingAdmissionPolicies and their bindings as admission applies them: followed in the store (a write takes
effect for the next request), their CEL compiled once per write, and paired (each binding with the policy it
names), in the order of the bindings' names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from minik.api.matchconditions import Condition, Declarations, compile_conditions, compile_one, compile_variables
from minik.api.selectors import LabelSelector, selector_from_dict
from minik.store import Event, EventType, Record, Store
from minik.store.follower import Follower

Obj = dict[str, Any]

POLICIES = "/admissionregistration.k8s.io/validatingadmissionpolicies/"
BINDINGS = "/admissionregistration.k8s.io/validatingadmissionpolicybindings/"


@dataclass(frozen=True)
class MatchResources:
    rules: tuple[Obj, ...]
    exclude: tuple[Obj, ...]
    namespace_selector: LabelSelector | None
    object_selector: LabelSelector | None
    problem: str = ""


@dataclass(frozen=True)
class Validation:
    condition: Condition
    message: str
    message_expression: Condition | None
    reason: str


@dataclass(frozen=True)
class Policy:
    name: str
    failure_policy: str
    #: (apiVersion, kind) of the params, or None
    param_kind: tuple[str, str] | None
    constraints: MatchResources
    conditions: tuple[Condition, ...]
    variables: tuple[Condition, ...]
    validations: tuple[Validation, ...]


@dataclass(frozen=True)
class Binding:
    name: str
    policy: str
    param_ref: Obj | None
    match: MatchResources | None
    actions: tuple[str, ...]


def _match_resources(raw: Any) -> MatchResources:
    raw = raw if isinstance(raw, dict) else {}
    try:
        namespace = selector_from_dict(raw["namespaceSelector"]) if raw.get("namespaceSelector") else None
        obj = selector_from_dict(raw["objectSelector"]) if raw.get("objectSelector") else None
        problem = ""
    except ValueError as exc:
        namespace = obj = None
        problem = str(exc)
    return MatchResources(tuple(r for r in raw.get("resourceRules") or [] if isinstance(r, dict)),
                          tuple(r for r in raw.get("excludeResourceRules") or [] if isinstance(r, dict)),
                          namespace, obj, problem)


def parse_policy(raw: bytes) -> Policy:
    obj = orjson.loads(raw)
    spec = obj.get("spec") or {}
    kind = spec.get("paramKind")
    param_kind = (str(kind.get("apiVersion") or ""), str(kind.get("kind") or "")) if isinstance(kind, dict) else None
    base = Declarations(params=param_kind is not None)
    variables, decls = compile_variables(spec.get("variables"), base)
    validations = []
    for item in spec.get("validations") or []:
        if not isinstance(item, dict):
            continue
        message_expression = item.get("messageExpression")
        validations.append(Validation(
            compile_one("", str(item.get("expression") or ""), decls), str(item.get("message") or ""),
            compile_one("", message_expression, decls.for_messages(), "string")
            if isinstance(message_expression, str) and message_expression.strip() else None,
            str(item.get("reason") or "")))
    return Policy(str((obj.get("metadata") or {}).get("name") or ""), str(spec.get("failurePolicy") or "Fail"),
                  param_kind, _match_resources(spec.get("matchConstraints")),
                  compile_conditions(spec.get("matchConditions"), base), variables, tuple(validations))


def parse_binding(raw: bytes) -> Binding:
    obj = orjson.loads(raw)
    spec = obj.get("spec") or {}
    match = spec.get("matchResources")
    ref = spec.get("paramRef")
    return Binding(str((obj.get("metadata") or {}).get("name") or ""), str(spec.get("policyName") or ""),
                   ref if isinstance(ref, dict) else None, _match_resources(match) if isinstance(match, dict) else None,
                   tuple(str(a) for a in spec.get("validationActions") or []))


class PolicySource:
    """The current (binding, policy) pairs."""

    def __init__(self, store: Store) -> None:
        self._policies: dict[str, Policy] = {}
        self._bindings: dict[str, Binding] = {}
        self.pairs: tuple[tuple[Binding, Policy], ...] = ()
        self._followers = (Follower(store, POLICIES, self._load_policies, self._apply_policies),
                           Follower(store, BINDINGS, self._load_bindings, self._apply_bindings))

    def start(self) -> None:
        for follower in self._followers:
            follower.start()

    async def stop(self) -> None:
        for follower in self._followers:
            await follower.stop()

    def _load_policies(self, records: list[Record]) -> None:
        self._policies = {record.key: parse_policy(record.raw) for record in records}
        self._pair()

    def _apply_policies(self, events: list[Event]) -> None:
        for event in events:
            if event.type is EventType.DELETED:
                self._policies.pop(event.key, None)
            else:
                self._policies[event.key] = parse_policy(event.raw)
        self._pair()

    def _load_bindings(self, records: list[Record]) -> None:
        self._bindings = {record.key: parse_binding(record.raw) for record in records}
        self._pair()

    def _apply_bindings(self, events: list[Event]) -> None:
        for event in events:
            if event.type is EventType.DELETED:
                self._bindings.pop(event.key, None)
            else:
                self._bindings[event.key] = parse_binding(event.raw)
        self._pair()

    def _pair(self) -> None:
        by_name = {policy.name: policy for policy in self._policies.values()}
        self.pairs = tuple((binding, by_name[binding.policy])
                           for binding in sorted(self._bindings.values(), key=lambda b: b.name)
                           if binding.policy in by_name)
