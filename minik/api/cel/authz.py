"""Kubernetes' authorizer library (k8s.io/apiserver/pkg/cel/library/authz.go): the ``authorizer`` variable of
admission expressions and its methods.

    authorizer.group('apps').resource('deployments').subresource('scale').namespace('ns').name('x').check('update')
    authorizer.path('/healthz').check('get'), authorizer.serviceAccount('ns', 'sa').group('')...
    authorizer.requestResource.check('delete')          (the request's own resource)
    decision.allowed(), .reason(), .errored(), .error()

Declared twice. For the type check (declarations()), with Kubernetes' types (kubernetes.authorization.Authorizer,
GroupCheck, ResourceCheck, PathCheck, Decision; see types), so ``authorizer.group(1)`` or ``authorizer.check('x')``
is a compile error as in Kubernetes. For evaluation (runtime()), over maps that carry what the chain has named
so far: this runtime's Python functions cannot return opaque values.

CEL functions are synchronous and minik's authorizer is not, so ``check`` does not ask it: it answers from the
Questions of the evaluation under way (``answering``), recording what it did not know. An expression that asked
anything is then evaluated again, once the authorizer has answered (minik.api.matchconditions.evaluate).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel

T = cel.Type
Obj = dict[str, Any]

#: the key of a runtime value that says which of the library's types it is
KIND = "__minik_authz__"


@dataclass(frozen=True)
class AuthzCheck:
    """One question an expression asks: may the user do ``verb`` on this resource (or non-resource ``path``)?
    The user is the requesting one, or ``service_account`` (namespace, name) after authorizer.serviceAccount()."""

    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    service_account: tuple[str, str] | None = None


@dataclass
class Questions:
    """The authorizer's answers known to one evaluation (allowed, reason), and the questions it could not answer
    (they are answered ``not allowed`` meanwhile)."""

    answers: Mapping[AuthzCheck, tuple[bool, str]] = field(default_factory=dict)
    asked: list[AuthzCheck] = field(default_factory=list)

    def decide(self, check: AuthzCheck) -> tuple[bool, str]:
        found = self.answers.get(check)
        if found is None:
            if check not in self.asked:
                self.asked.append(check)
            return False, ""
        return found


_CURRENT: ContextVar[Questions | None] = ContextVar("minik_cel_authz", default=None)


@contextmanager
def answering(questions: Questions) -> Iterator[Questions]:
    """Evaluations inside answer ``check`` from ``questions``."""
    token = _CURRENT.set(questions)
    try:
        yield questions
    finally:
        _CURRENT.reset(token)


def authorizer_value(group: str, resource: str, subresource: str, namespace: str, name: str) -> Obj:
    """The value of ``authorizer``, whose ``requestResource`` is the request's own resource."""
    return {KIND: "authorizer", "requestResource": {KIND: "resource", "group": group, "resource": resource,
                                                    "subresource": subresource, "namespace": namespace,
                                                    "name": name}}


# -- the runtime functions ---------------------------------------------------------------------------------------
def _expect(value: Any, *kinds: str) -> Obj:
    if isinstance(value, dict) and value.get(KIND) in kinds:
        return value
    raise ValueError("no such overload")


def _user(value: Obj) -> Obj:
    return {"serviceAccount": value["serviceAccount"]} if "serviceAccount" in value else {}


def _path(authorizer: Any, path: Any) -> Obj:
    return {**_user(_expect(authorizer, "authorizer")), KIND: "path", "path": str(path)}


def _group(authorizer: Any, group: Any) -> Obj:
    return {**_user(_expect(authorizer, "authorizer")), KIND: "group", "group": str(group)}


def _service_account(authorizer: Any, namespace: Any, name: Any) -> Obj:
    _expect(authorizer, "authorizer")
    return {KIND: "authorizer", "serviceAccount": [str(namespace), str(name)]}


def _resource(check: Any, resource: Any) -> Obj:
    return {**_expect(check, "group"), KIND: "resource", "resource": str(resource)}


def _setter(key: str) -> Callable[[Any, Any], Obj]:
    def set_field(check: Any, value: Any) -> Obj:
        return {**_expect(check, "resource"), key: str(value)}
    return set_field


def _check(target: Any, verb: Any) -> Obj:
    fields = _expect(target, "resource", "path")
    account = fields.get("serviceAccount")
    question = AuthzCheck(str(verb), **{k: str(v) for k, v in fields.items()
                                        if k in ("group", "resource", "subresource", "namespace", "name", "path")},
                          service_account=(str(account[0]), str(account[1])) if account else None)
    questions = _CURRENT.get()
    allowed, reason = questions.decide(question) if questions is not None else (False, "")
    return {KIND: "decision", "allowed": allowed, "reason": reason}


def _errored(decision: Any) -> bool:
    """Whether the authorizer failed to answer: minik's authorizer always answers."""
    _expect(decision, "decision")
    return False


def _error(decision: Any) -> str:
    _expect(decision, "decision")
    return ""


def runtime() -> Any:
    """The library for evaluation: every value a map, declared dyn so that whatever passed the type check
    compiles here too (see the module docstring)."""
    m, s, d = T.Map(T.STRING, T.DYN), T.STRING, T.DYN

    def member(name: str, result: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(f"minik_authz_{name}", result, [m, *params], is_member=True,
                                                    impl=impl)])

    return cel.CelExtension("minik.authz", [
        member("path", d, [s], _path),
        member("group", d, [s], _group),
        member("serviceAccount", d, [s, s], _service_account),
        member("resource", d, [s], _resource),
        *(member(key, d, [s], _setter(key)) for key in ("subresource", "namespace", "name")),
        member("check", d, [s], _check),
        member("allowed", T.BOOL, [], lambda d: bool(_expect(d, "decision")["allowed"])),
        member("reason", s, [], lambda d: str(_expect(d, "decision")["reason"])),
        member("errored", T.BOOL, [], _errored),
        member("error", s, [], _error),
    ])


# -- the declarations, for the type check -----------------------------------------------------------------------
AUTHORIZER = "kubernetes.authorization.Authorizer"
RESOURCE_CHECK = "kubernetes.authorization.ResourceCheck"


def declarations() -> Any:
    """The library's signatures with Kubernetes' types (no implementations: these programs are never run)."""
    authorizer, path, group = T(AUTHORIZER), T("kubernetes.authorization.PathCheck"), \
        T("kubernetes.authorization.GroupCheck")
    resource, decision, s = T(RESOURCE_CHECK), T("kubernetes.authorization.Decision"), T.STRING

    def member(name: str, *overloads: tuple[str, Any, list[Any]]) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(oid, result, params, is_member=True)
                                       for oid, result, params in overloads])

    return cel.CelExtension("kubernetes.authz", [
        member("path", ("authorizer_path", path, [authorizer, s])),
        member("group", ("authorizer_group", group, [authorizer, s])),
        member("serviceAccount", ("authorizer_serviceaccount", authorizer, [authorizer, s, s])),
        member("resource", ("groupcheck_resource", resource, [group, s])),
        member("subresource", ("resourcecheck_subresource", resource, [resource, s])),
        member("namespace", ("resourcecheck_namespace", resource, [resource, s])),
        member("name", ("resourcecheck_name", resource, [resource, s])),
        member("check", ("pathcheck_check", decision, [path, s]), ("resourcecheck_check", decision, [resource, s])),
        member("allowed", ("decision_allowed", T.BOOL, [decision])),
        member("reason", ("decision_reason", s, [decision])),
        member("errored", ("decision_errored", T.BOOL, [decision])),
        member("error", ("decision_error", s, [decision])),
    ])
