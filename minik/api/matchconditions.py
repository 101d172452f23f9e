"""CEL for admission: the matchConditions of admission webhooks (and the expressions of admission policies),
compiled once and evaluated against a request, with the ``common-expression-language`` package (module ``cel``).

Kubernetes declares ``object``, ``oldObject``, ``request``, ``authorizer`` (and ``params`` for policies) in these
expressions; here they are plain JSON values (``null`` where the request has none), and ``authorizer`` a value whose
methods (``group``, ``resource``, ``check``, ``allowed``...) are functions over plain maps (see ``AuthzChecks``).
A missing field is an error, as in Kubernetes (``has(object.x)`` tests for one); an error in any condition
is the webhook's failure unless another condition is false.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import cel

Obj = dict[str, Any]

#: the variables a match condition may read (Kubernetes' declarations for webhooks)
MATCH_VARIABLES = ("object", "oldObject", "request", "authorizer")

_PARSE_PREFIX = re.compile(r"^Failed to parse expression '.*?': ", re.DOTALL)


class CompileError(ValueError):
    """An expression CEL cannot parse; the message is the parser's, as Kubernetes reports it."""


def compile_expression(expression: str) -> cel.Program:
    """The program of ``expression``; CompileError with the parser's message when it is not CEL."""
    try:
        return cel.compile(expression)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise CompileError(_PARSE_PREFIX.sub("", str(exc)).strip()) from None


def compile_problem(expression: str) -> str:
    """"" when ``expression`` compiles, else the detail of Kubernetes' Invalid cause (``compilation failed:
    ERROR: <input>:1:4: Syntax error: ...``)."""
    try:
        compile_expression(expression)
    except CompileError as exc:
        return f"compilation failed: {exc}"
    return ""


# -- the authorizer -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuthzCheck:
    """One question an expression asks the authorizer: may the requesting user do ``verb`` on this resource
    (or ``path``)."""

    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


#: answers an AuthzCheck: (allowed, reason)
Authorize = Callable[[AuthzCheck], Awaitable[tuple[bool, str]]]

_AUTHZ = "__authz__"


def _builder(field: str) -> Callable[[Any, Any], Obj]:
    def build(target: Any, value: Any) -> Obj:
        base = dict(target) if isinstance(target, Mapping) else {}
        base[_AUTHZ] = "check"
        base[field] = str(value)
        return base
    return build


class AuthzChecks:
    """The ``authorizer`` variable. CEL functions are synchronous and the authorizer is not, so an expression is
    run twice when it asks anything: first to learn its questions (every ``allowed()`` answers false), then,
    once the authorizer has answered them, with the answers."""

    def __init__(self, answers: Mapping[AuthzCheck, tuple[bool, str]] | None = None) -> None:
        self.answers = dict(answers or {})
        self.asked: list[AuthzCheck] = []

    def functions(self) -> dict[str, Callable[..., Any]]:
        return {"group": _builder("group"), "resource": _builder("resource"),
                "subresource": _builder("subresource"), "namespace": _builder("namespace"),
                "name": _builder("name"), "path": _builder("path"), "check": self._check,
                "allowed": self._allowed, "reason": self._reason, "errored": lambda _d: False,
                "error": lambda _d: ""}

    def _check(self, target: Any, verb: Any) -> Obj:
        fields = dict(target) if isinstance(target, Mapping) else {}
        fields.pop(_AUTHZ, None)
        check = AuthzCheck(str(verb), **{k: str(v) for k, v in fields.items()
                                        if k in ("group", "resource", "subresource", "namespace", "name", "path")})
        if check not in self.answers and check not in self.asked:
            self.asked.append(check)
        allowed, reason = self.answers.get(check, (False, ""))
        return {_AUTHZ: "decision", "allowed": allowed, "reason": reason}

    @staticmethod
    def _allowed(decision: Any) -> bool:
        return bool(decision.get("allowed")) if isinstance(decision, Mapping) else False

    @staticmethod
    def _reason(decision: Any) -> str:
        return str(decision.get("reason") or "") if isinstance(decision, Mapping) else ""


# -- evaluation ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Condition:
    name: str
    expression: str
    program: cel.Program | None
    problem: str = ""


def compile_conditions(raw: Any) -> tuple[Condition, ...]:
    """The matchConditions of a webhook, compiled (a condition that does not compile keeps its problem: it
    is an error at every evaluation, as an expression stored before a CEL upgrade would be)."""
    conditions = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        conditions.append(compile_one(str(item.get("name") or ""), str(item.get("expression") or "")))
    return tuple(conditions)


@dataclass(frozen=True)
class MatchResult:
    matches: bool
    error: str = ""
    failed_condition: str = ""


@dataclass(frozen=True)
class Failure:
    """An expression that could not be evaluated, as Kubernetes words it."""

    message: str


def compile_one(name: str, expression: str) -> Condition:
    try:
        return Condition(name, expression, compile_expression(expression))
    except CompileError as exc:
        return Condition(name, expression, None, f"compilation failed: {exc}")


def _value(condition: Condition, context: cel.Context) -> Any:
    """The expression's value, or a Failure."""
    prefix = f"expression '{condition.expression}' resulted in error: "
    if condition.program is None:
        return Failure(prefix + condition.problem)
    try:
        return condition.program.execute(context)
    except KeyError as exc:
        return Failure(f"{prefix}no such key: {exc.args[0] if exc.args else ''}")
    except Exception as exc:  # noqa: BLE001 - any evaluation failure is the expression's error, never the server's
        return Failure(f"{prefix}{exc}")


def boolean(condition: Condition, value: Any) -> bool | Failure:
    """A value that must be a bool (conditions, validations)."""
    if isinstance(value, (bool, Failure)):
        return value
    return Failure(f"expression '{condition.expression}' resulted in error: must evaluate to bool")


async def evaluate(conditions: tuple[Condition, ...], activation: Obj, authorize: Authorize | None) -> list[Any]:
    """Each expression's value (or Failure) over ``activation``; run again with the authorizer's answers when any
    asked it something."""
    authz = AuthzChecks()
    context = cel.Context(activation, authz.functions())
    values = [_value(c, context) for c in conditions]
    if authz.asked and authorize is not None:
        answers = {check: await authorize(check) for check in authz.asked}
        authz = AuthzChecks(answers)
        context = cel.Context(activation, authz.functions())
        values = [_value(c, context) for c in conditions]
    return values


async def match(conditions: tuple[Condition, ...], activation: Obj, authorize: Authorize | None) -> MatchResult:
    """Kubernetes' rule: any condition false -> no match; else any error -> the error; else a match."""
    results = [boolean(c, v) for c, v in zip(conditions, await evaluate(conditions, activation, authorize))]
    errors = []
    for condition, result in zip(conditions, results):
        if result is False:
            return MatchResult(False, failed_condition=condition.name)
        if isinstance(result, Failure):
            errors.append(result.message)
    if errors:
        return MatchResult(False, error=errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    return MatchResult(True)


def variables(obj: Obj | None, old: Obj | None, request: Obj) -> Obj:
    """The activation of a match condition; ``authorizer.requestResource`` is the request's own resource."""
    resource = request.get("resource") or {}
    request_resource = {_AUTHZ: "check", "group": str(resource.get("group") or ""),
                        "resource": str(resource.get("resource") or ""),
                        "subresource": str(request.get("subResource") or ""),
                        "namespace": str(request.get("namespace") or ""), "name": str(request.get("name") or "")}
    return {"object": obj, "oldObject": old, "request": request,
            "authorizer": {_AUTHZ: "authorizer", "requestResource": request_resource}}
