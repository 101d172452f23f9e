"""ValidatingAdmissionPolicy: CEL validations applied in the API server, as Kubernetes' plugin of the name. Each
ValidatingAdmissionPolicyBinding applies its policy to the requests that both the policy's matchConstraints and
the binding's matchResources select (and the policy's matchConditions), with the binding's params (``paramRef``:
an object of the policy's ``paramKind``, by name or by selector). A validation that is false is a violation the
binding's validationActions decide: Deny refuses the request (``configmaps "x" is forbidden:
ValidatingAdmissionPolicy 'P' with binding 'B' denied request: MESSAGE``, 422 unless the validation's reason
says otherwise), Warn answers with a Warning header, Audit logs it. An expression that cannot be evaluated gets
the policy's failurePolicy.

It runs among the validating steps after the mutating webhooks and before the validating ones, as in Kubernetes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import structlog

from minik.api import matchconditions as mc
from minik.api.errors import StatusError
from minik.api.registry import Registry
from minik.api.selectors import selector_from_dict
from minik.apiserver.admission.base import Attributes, ObjectReader
from minik.apiserver.admission.policy.source import Binding, MatchResources, Policy, PolicySource, Validation
from minik.apiserver.admission.webhook.dispatch import Authorize, authorizer_for, exempt
from minik.apiserver.admission.webhook.matching import rule_matches, selectors_match_for
from minik.apiserver.admission.webhook.review import request_for
from minik.apiserver.warnings import add_warning

log = structlog.get_logger("minik.admission.policy")

Obj = dict[str, Any]

_CODES = {"Invalid": 422, "Forbidden": 403, "RequestEntityTooLarge": 413}


@dataclass(frozen=True)
class Decision:
    message: str
    reason: str = "Invalid"


def _rule_selects(rule: Obj, attrs: Attributes) -> bool:
    names = rule.get("resourceNames") or []
    if names and attrs.name not in names:
        return False
    return rule_matches(rule, attrs, attrs.resource.group, attrs.resource.version)


def _matches(match: MatchResources, attrs: Attributes, reader: ObjectReader) -> bool:
    if match.problem:
        raise StatusError(500, "InternalError", f"Internal error occurred: {match.problem}")
    if not selectors_match_for(match.namespace_selector, match.object_selector, attrs, reader):
        return False
    if match.rules and not any(_rule_selects(rule, attrs) for rule in match.rules):
        return False
    return not any(_rule_selects(rule, attrs) for rule in match.exclude)


class ValidatingAdmissionPolicyPlugin:
    name = "ValidatingAdmissionPolicy"

    def __init__(self, source: PolicySource, reader: ObjectReader, registry: Registry,
                 authorize: Authorize | None = None) -> None:
        self._source = source
        self._reader = reader
        self._registry = registry
        self._authorize = authorize

    async def validate(self, attrs: Attributes) -> None:
        pairs = self._source.pairs
        if not pairs or exempt(attrs):
            return
        for binding, policy in pairs:
            if not _matches(policy.constraints, attrs, self._reader):
                continue
            if binding.match is not None and not _matches(binding.match, attrs, self._reader):
                continue
            for decision in await self._decide(binding, policy, attrs):
                self._act(binding, policy, decision, attrs)

    def _act(self, binding: Binding, policy: Policy, decision: Decision, attrs: Attributes) -> None:
        if "Warn" in binding.actions:
            add_warning(f"Validation failed for ValidatingAdmissionPolicy '{policy.name}' with binding "
                        f"'{binding.name}': {decision.message}")
        if "Audit" in binding.actions:
            log.warning("validation failed", policy=policy.name, binding=binding.name, message=decision.message,
                        resource=attrs.resource.plural, namespace=attrs.namespace, name=attrs.name)
        if "Deny" in binding.actions:
            message = f"ValidatingAdmissionPolicy '{policy.name}' with binding '{binding.name}' denied request: " \
                      f"{decision.message}"
            what = attrs.resource.group_resource
            text = f'{what} "{attrs.name}" is forbidden: {message}' if attrs.name else f"{what} is forbidden: {message}"
            details: Obj = {"kind": attrs.resource.plural, "causes": [{"message": message}]}
            if attrs.name:
                details["name"] = attrs.name
            if attrs.resource.group:
                details["group"] = attrs.resource.group
            raise StatusError(_CODES.get(decision.reason, 422), decision.reason, text, details)

    async def _params(self, binding: Binding, policy: Policy, attrs: Attributes) -> list[Obj | None] | Decision:
        """The params to evaluate with (None: no paramKind), or a Decision when they cannot be had."""
        if policy.param_kind is None:
            return [None]
        ref = binding.param_ref
        resource = self._registry.by_kind(*policy.param_kind)
        if ref is None or resource is None:
            missing = "paramRef" if ref is None else f"paramKind {policy.param_kind[0]}, Kind={policy.param_kind[1]}"
            return Decision(f"failed to configure binding: {missing} not found")
        namespace = None
        if resource.namespaced:
            namespace = str(ref.get("namespace") or attrs.namespace or "")
        found: list[Obj | None] = []
        if ref.get("name"):
            obj = self._reader.get(resource.group, resource.version, resource.plural, namespace, str(ref["name"]))
            found = [obj] if obj is not None else []
        else:
            try:
                selector = selector_from_dict(ref.get("selector") or {})
            except ValueError as exc:
                return Decision(str(exc))
            found = [o for o in await self._reader.list(resource.group, resource.version, resource.plural, namespace)
                     if selector.matches(((o.get("metadata") or {}).get("labels")) or {})]
        if not found:
            if ref.get("parameterNotFoundAction") == "Allow":
                return []
            return Decision("no params found for policy binding with `Deny` parameterNotFoundAction")
        return found

    async def _decide(self, binding: Binding, policy: Policy, attrs: Attributes) -> list[Decision]:
        params = await self._params(binding, policy, attrs)
        if isinstance(params, Decision):
            return [] if policy.failure_policy == "Ignore" else [params]
        decisions: list[Decision] = []
        request = request_for(str(uuid.uuid4()), (attrs.resource.group, attrs.resource.version,
                                                  attrs.resource.plural, attrs.resource.kind), attrs, attrs.dry_run)
        namespace = self._reader.get("", "v1", "namespaces", None, attrs.namespace) if attrs.namespace else None
        authorize = authorizer_for(self._authorize, attrs.user)
        for param in params:
            activation = {**mc.variables(attrs.obj, attrs.old, request), "params": param,
                          "namespaceObject": namespace, "variables": {}}
            if policy.conditions:
                result = await mc.match(policy.conditions, activation, authorize)
                if result.error:
                    if policy.failure_policy != "Ignore":
                        decisions.append(Decision(result.error))
                    continue
                if not result.matches:
                    continue
            for variable in policy.variables:  # each may read the ones before it
                [value] = await mc.evaluate((variable,), activation, authorize)
                if not isinstance(value, mc.Failure):
                    activation["variables"] = {**activation["variables"], variable.name: value}
            values = await mc.evaluate(tuple(v.condition for v in policy.validations), activation, authorize)
            for validation, value in zip(policy.validations, values):
                passed = mc.boolean(validation.condition, value)
                if passed is True:
                    continue
                if isinstance(passed, mc.Failure):
                    if policy.failure_policy != "Ignore":
                        decisions.append(Decision(passed.message))
                    continue
                decisions.append(Decision(await self._message(validation, activation, authorize),
                                          validation.reason or "Invalid"))
        return decisions

    @staticmethod
    async def _message(validation: Validation, activation: Obj, authorize: mc.Authorize | None) -> str:
        if validation.message_expression is not None:
            [text] = await mc.evaluate((validation.message_expression,), activation, authorize)
            if isinstance(text, str) and text.strip() and "\n" not in text:
                return text
        if validation.message:
            return str(validation.message)
        return f"failed expression: {validation.condition.expression}"
