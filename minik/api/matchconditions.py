"""CEL for admission: the matchConditions of admission webhooks and the expressions of ValidatingAdmissionPolicies,
compiled once (in minik.api.cel's admission environment, type-checked as Kubernetes does) and evaluated against a
request.

The values are JSON: ``object``, ``oldObject``, ``params`` and ``namespaceObject`` are ``null`` where the request
has none. A missing field is an error, as in Kubernetes (``has(object.x)`` tests for one); an error in any
condition is the webhook's failure unless another condition is false. ``authorizer`` asks the API server's
authorizer: an expression that asks anything is evaluated twice (see minik.api.cel.authz).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from minik.api.cel import CompileError, run
from minik.api.cel.admission import Declarations, activation, compile_expression
from minik.api.cel.authz import AuthzCheck, Questions, answering, authorizer_value

__all__ = ["WEBHOOK", "AuthzCheck", "Authorize", "Condition", "Declarations", "Failure", "MatchResult", "boolean",
           "compile_conditions", "compile_one", "compile_problem", "compile_variables", "evaluate", "match",
           "variables"]

Obj = dict[str, Any]

#: what webhooks' matchConditions see: no params, no variables
WEBHOOK = Declarations()

#: answers an AuthzCheck: (allowed, reason)
Authorize = Callable[[AuthzCheck], Awaitable[tuple[bool, str]]]


@dataclass(frozen=True)
class Condition:
    """One compiled expression (a condition, a variable, a validation or a message); one that does not compile
    keeps its problem, an error at every evaluation (as an expression stored before a CEL upgrade would be)."""

    name: str
    expression: str
    program: Any
    problem: str = ""
    #: the variables it reads; the type of its value (types.spec_of)
    reads: frozenset[str] = frozenset()
    output: str = "dyn"


def compile_one(name: str, expression: str, decls: Declarations = WEBHOOK, returns: str | None = "bool") -> Condition:
    """``expression`` compiled with ``decls``; its value must be of type ``returns`` (None: any)."""
    try:
        compiled = compile_expression(expression, decls, returns)
    except CompileError as exc:
        return Condition(name, expression, None, str(exc))
    return Condition(name, expression, compiled.program, reads=compiled.reads, output=compiled.output)


def compile_problem(expression: str, decls: Declarations = WEBHOOK, returns: str | None = "bool") -> str:
    """"" when ``expression`` compiles, else the detail of Kubernetes' Invalid cause (``compilation failed:
    ERROR: <input>:1:4: Syntax error: ...``, ``must evaluate to bool``)."""
    return compile_one("", expression, decls, returns).problem


def compile_conditions(raw: Any, decls: Declarations = WEBHOOK) -> tuple[Condition, ...]:
    """The matchConditions of a webhook or policy, compiled."""
    return tuple(compile_one(str(item.get("name") or ""), str(item.get("expression") or ""), decls)
                 for item in (raw if isinstance(raw, list) else []) if isinstance(item, dict))


_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def compile_variables(raw: Any, decls: Declarations) -> tuple[tuple[Condition, ...], Declarations]:
    """A policy's variables compiled in order, each seeing those before it as fields of ``variables`` (of the
    type of their expression; dyn when it does not compile), and the declarations the policy's validations
    get: ``decls`` with every variable (unchanged when there is none, so ``variables`` is then undeclared)."""
    items = [item for item in (raw if isinstance(raw, list) else []) if isinstance(item, dict)]
    if not items:
        return (), decls
    current = replace(decls, variables=())
    compiled = []
    for item in items:
        name, expression = str(item.get("name") or ""), str(item.get("expression") or "")
        if not expression.strip():
            compiled.append(Condition(name, expression, None, "expression is not specified"))
            continue
        variable = compile_one(name, expression, current, returns=None)
        compiled.append(variable)
        if _FIELD_NAME.fullmatch(name):
            current = current.with_variable(name, variable.output if variable.program is not None else "dyn")
    return tuple(compiled), current


# -- evaluation ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MatchResult:
    matches: bool
    error: str = ""
    failed_condition: str = ""


@dataclass(frozen=True)
class Failure:
    """An expression that could not be evaluated, as Kubernetes words it."""

    message: str


def _value(condition: Condition, values: Any) -> Any:
    """The expression's value, or a Failure."""
    prefix = f"expression '{condition.expression}' resulted in error: "
    if condition.program is None:
        return Failure(prefix + condition.problem)
    outcome = run(condition.program, activation=values)
    if outcome.error is not None:
        return Failure(prefix + outcome.error)
    return outcome.value


def boolean(condition: Condition, value: Any) -> bool | Failure:
    """A value that must be a bool (conditions, validations)."""
    if isinstance(value, (bool, Failure)):
        return value
    return Failure(f"expression '{condition.expression}' resulted in error: must evaluate to bool")


#: how many times expressions are evaluated again for the authorizer's answers, at most
AUTHORIZER_ROUNDS = 16


async def evaluate(conditions: Sequence[Condition], data: Obj, authorize: Authorize | None) -> list[Any]:
    """Each expression's value (or Failure) over ``data`` (variable -> JSON value). While they ask the authorizer
    questions it has not answered yet, they are evaluated again with its answers: a question can depend on an
    earlier answer (``a.check('get').allowed() && b.check('list').allowed()`` asks the second only once the first
    is allowed). After AUTHORIZER_ROUNDS, what is still unanswered counts as not allowed."""
    needed = frozenset().union(*(c.reads for c in conditions))
    values = activation({k: v for k, v in data.items() if k in needed})
    answers: dict[AuthzCheck, tuple[bool, str]] = {}
    for _ in range(AUTHORIZER_ROUNDS + 1):
        with answering(Questions(answers)) as questions:
            results = [_value(c, values) for c in conditions]
        if not questions.asked or authorize is None:
            break
        answers.update({check: await authorize(check) for check in questions.asked})
    return results


async def match(conditions: Sequence[Condition], data: Obj, authorize: Authorize | None) -> MatchResult:
    """Kubernetes' rule: any condition false -> no match; else any error -> the error; else a match."""
    results = [boolean(c, v) for c, v in zip(conditions, await evaluate(conditions, data, authorize))]
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
    """The values of a match condition's variables; ``authorizer.requestResource`` is the request's own
    resource."""
    resource = request.get("resource") or {}
    return {"object": obj, "oldObject": old, "request": request, "namespaceObject": None,
            "authorizer": authorizer_value(str(resource.get("group") or ""), str(resource.get("resource") or ""),
                                           str(request.get("subResource") or ""),
                                           str(request.get("namespace") or ""), str(request.get("name") or ""))}
