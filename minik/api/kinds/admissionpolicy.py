"""admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding: CEL validations
applied in the API server (minik.apiserver.admission.validating_policy), with Kubernetes' defaults and validation.
"""

from __future__ import annotations

from typing import Any

from minik.api import validation as v
from minik.api.kinds.admissionregistration import (
    FAILURE_POLICIES,
    MATCH_POLICIES,
    validate_match_conditions,
    validate_rule,
)
from minik.api.kinds.common import Causes, Obj, dict_at, dicts_at, set_default
from minik.api.matchconditions import Declarations, compile_problem, compile_variables
from minik.api.strategy import Strategy

__all__ = ["ValidatingAdmissionPolicyBindingStrategy", "ValidatingAdmissionPolicyStrategy"]

VALIDATION_REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge")
VALIDATION_ACTIONS = ("Audit", "Deny", "Warn")
NOT_FOUND_ACTIONS = ("Allow", "Deny")


def _default_match_resources(match: Any) -> None:
    if not isinstance(match, dict):
        return
    set_default(match, "matchPolicy", "Equivalent")
    for selector in ("namespaceSelector", "objectSelector"):
        if match.get(selector) is None:
            match[selector] = {}
    for field in ("resourceRules", "excludeResourceRules"):
        for rule in dicts_at(match, field):
            set_default(rule, "scope", "*")


def _validate_named_rule(rule: Any, path: str) -> Causes:
    if not isinstance(rule, dict):
        return [v.type_invalid(path, rule, "must be an object")]
    causes: Causes = []
    names = rule.get("resourceNames") or []
    seen: set[str] = set()
    for i, name in enumerate(names if isinstance(names, list) else []):
        at = v.index(v.child(path, "resourceNames"), i)
        causes += [v.invalid(at, name, m) for m in v.is_valid_path_segment_name(str(name))]
        if name in seen:
            causes.append(v.duplicate(at, name))
        seen.add(str(name))
    return causes + validate_rule(rule, path)


def validate_match_resources(match: Any, path: str, *, constraints: bool) -> Causes:
    if match is None:
        return [v.required(path)] if constraints else []
    if not isinstance(match, dict):
        return [v.type_invalid(path, match, "must be an object")]
    causes = v.validate_enum_field(match, "matchPolicy", path, MATCH_POLICIES)
    for selector in ("namespaceSelector", "objectSelector"):
        if match.get(selector) is None:
            causes.append(v.required(v.child(path, selector)))
        else:
            causes += v.validate_label_selector(match.get(selector), v.child(path, selector))
    for field in ("resourceRules", "excludeResourceRules"):
        rules = match.get(field)
        for i, rule in enumerate(rules if isinstance(rules, list) else []):
            causes += _validate_named_rule(rule, v.index(v.child(path, field), i))
    if constraints and not match.get("resourceRules"):
        causes.append(v.required(v.child(path, "resourceRules")))
    return causes


def _expression(value: Any, path: str, required_detail: str, decls: Declarations, returns: str) -> Causes:
    if not isinstance(value, str) or not value.strip():
        return [v.required(path, required_detail)]
    problem = compile_problem(value, decls, returns)
    return [v.invalid(path, value, problem)] if problem else []


def _validate_validation(item: Any, path: str, decls: Declarations) -> Causes:
    """One validation: its expression sees what ``decls`` declares, its messageExpression the same but the
    authorizer (as Kubernetes compiles them)."""
    if not isinstance(item, dict):
        return [v.type_invalid(path, item, "must be an object")]
    causes = _expression(item.get("expression"), v.child(path, "expression"), "expression is not specified", decls,
                         "bool")
    message_expression = item.get("messageExpression")
    if isinstance(message_expression, str) and message_expression:
        if not message_expression.strip():
            causes.append(v.invalid(v.child(path, "messageExpression"), message_expression,
                                    "must be non-empty if specified"))
        else:
            causes += _expression(message_expression, v.child(path, "messageExpression"), "",
                                  decls.for_messages(), "string")
    message = item.get("message")
    if isinstance(message, str) and message:
        if not message.strip():
            causes.append(v.invalid(v.child(path, "message"), message, "message must be non-empty if specified"))
        elif "\n" in message.strip():
            causes.append(v.invalid(v.child(path, "message"), message, "message must not contain line breaks"))
    reason = item.get("reason")
    if reason is not None and reason not in VALIDATION_REASONS:
        causes.append(v.not_supported(v.child(path, "reason"), reason, VALIDATION_REASONS))
    return causes


def _validate_param_kind(kind: Any, path: str) -> Causes:
    if not isinstance(kind, dict):
        return [v.type_invalid(path, kind, "must be an object")]
    causes: Causes = []
    if not kind.get("apiVersion"):
        causes.append(v.required(v.child(path, "apiVersion")))
    if not kind.get("kind"):
        causes.append(v.required(v.child(path, "kind")))
    return causes


class ValidatingAdmissionPolicyStrategy(Strategy):
    namespace_scoped = False
    tracks_generation = True
    has_status = True

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        set_default(spec, "failurePolicy", "Fail")
        _default_match_resources(spec.get("matchConstraints"))

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return causes + [v.required("spec") if spec is None else v.type_invalid("spec", spec, "must be an object")]
        causes += v.validate_enum_field(spec, "failurePolicy", "spec", FAILURE_POLICIES)
        if spec.get("paramKind") is not None:
            causes += _validate_param_kind(spec["paramKind"], "spec.paramKind")
        causes += validate_match_resources(spec.get("matchConstraints"), "spec.matchConstraints", constraints=True)
        decls = Declarations(params=spec.get("paramKind") is not None)
        causes += validate_match_conditions(spec.get("matchConditions"), "spec.matchConditions", decls)
        variables = dicts_at(spec, "variables")
        compiled, decls = compile_variables(variables, decls)  # each variable sees those before it
        for i, (variable, condition) in enumerate(zip(variables, compiled)):
            at = v.index("spec.variables", i)
            name = variable.get("name")
            if not isinstance(name, str) or not name.strip():
                causes.append(v.required(v.child(at, "name"), "name is not specified"))
            elif not name.isidentifier():
                causes.append(v.invalid(v.child(at, "name"), name, "name is not a valid CEL identifier"))
            expression = variable.get("expression")
            if not isinstance(expression, str) or not expression.strip():
                causes.append(v.required(v.child(at, "expression"), "expression is not specified"))
            elif condition.problem:
                causes.append(v.invalid(v.child(at, "expression"), expression, condition.problem))
        validations = spec.get("validations") or []
        if not validations and not spec.get("auditAnnotations"):
            detail = "validations or auditAnnotations must contain at least one item"
            causes += [v.required("spec.validations", detail), v.required("spec.auditAnnotations", detail)]
        for i, item in enumerate(validations if isinstance(validations, list) else []):
            causes += _validate_validation(item, v.index("spec.validations", i), decls)
        return causes

    def spec_of(self, obj: Obj) -> Obj:
        return dict_at(obj, "spec")


class ValidatingAdmissionPolicyBindingStrategy(Strategy):
    namespace_scoped = False
    tracks_generation = True

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            _default_match_resources(spec.get("matchResources"))

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return causes + [v.required("spec") if spec is None else v.type_invalid("spec", spec, "must be an object")]
        if not spec.get("policyName"):
            causes.append(v.required("spec.policyName"))
        else:
            causes += [v.invalid("spec.policyName", spec["policyName"], m)
                       for m in v.is_dns1123_subdomain(str(spec["policyName"]))]
        ref = spec.get("paramRef")
        if isinstance(ref, dict):
            if ref.get("name") and ref.get("selector") is not None:
                causes.append(v.forbidden("spec.paramRef.name", "name and selector are mutually exclusive"))
            if not ref.get("name") and ref.get("selector") is None:
                causes.append(v.required("spec.paramRef", "one of name or selector must be specified"))
            causes += v.validate_enum_field(ref, "parameterNotFoundAction", "spec.paramRef", NOT_FOUND_ACTIONS)
        causes += validate_match_resources(spec.get("matchResources"), "spec.matchResources", constraints=False)
        actions = spec.get("validationActions")
        actions = actions if isinstance(actions, list) else []
        seen: set[str] = set()
        for i, action in enumerate(actions):
            at = v.index("spec.validationActions", i)
            if action not in VALIDATION_ACTIONS:
                causes.append(v.not_supported(at, action, VALIDATION_ACTIONS))
            if action in seen:
                causes.append(v.duplicate(at, action))
            seen.add(str(action))
        if {"Deny", "Warn"} <= seen:
            causes.append(v.invalid("spec.validationActions", actions, "must not contain both Deny and Warn "
                                    "(repeating the same validation failure information in the API response and "
                                    "headers serves no purpose)"))
        if not seen:
            causes.append(v.required("spec.validationActions", "at least one validation action is required"))
        return causes

    def spec_of(self, obj: Obj) -> Obj:
        return dict_at(obj, "spec")
