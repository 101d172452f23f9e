"""The environment of admission expressions: webhooks' matchConditions and ValidatingAdmissionPolicy's
matchConditions, variables, validations and messageExpressions.

Declared as Kubernetes declares them (k8s.io/apiserver/pkg/admission/plugin/cel): ``object``, ``oldObject`` and
``params`` dyn, ``request`` a kubernetes.AdmissionRequest, ``namespaceObject`` a kubernetes.Namespace,
``authorizer`` (and ``authorizer.requestResource``) the authorizer library's types; ``params`` only where a
policy has a paramKind, ``authorizer`` everywhere but in messageExpressions, ``variables`` only in a policy that
has variables, typed by the variables compiled so far (a field per variable, of its expression's type).

An expression is compiled twice: against those declarations, for the type check and Kubernetes' errors, then in
one environment where every variable is dyn, for evaluation over the JSON values (Kubernetes evaluates them as
unstructured maps too, whatever their declared type).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from minik.api.cel import authz, types
from minik.api.cel.env import CompileError, T, compile_program, new_env, output_type

#: every variable an admission expression may read
VARIABLES = ("object", "oldObject", "request", "params", "namespaceObject", "variables", "authorizer")


@dataclass(frozen=True)
class Declarations:
    """Which of the optional variables an expression sees (Kubernetes' OptionalVariableDeclarations), and, in
    a policy with variables, the variables' (name, type) so far (None: no ``variables``)."""

    params: bool = False
    authorizer: bool = True
    variables: tuple[tuple[str, str], ...] | None = None

    def with_variable(self, name: str, spec: str) -> Declarations:
        """These declarations with one more variable (a later one of the same name replaces it)."""
        kept = tuple((n, s) for n, s in self.variables or () if n != name)
        return replace(self, variables=(*kept, (name, spec)))

    def for_messages(self) -> Declarations:
        """What a messageExpression sees: the same but the authorizer (as Kubernetes compiles them)."""
        return replace(self, authorizer=False)


_CHECK_ENVS: dict[Declarations, Any] = {}
_RUNTIME_ENV: list[Any] = []


def _check_env(decls: Declarations) -> Any:
    env = _CHECK_ENVS.get(decls)
    if env is None:
        declared: dict[str, Any] = {"object": T.DYN, "oldObject": T.DYN, "request": T(types.REQUEST),
                                    "namespaceObject": T(types.NAMESPACE)}
        files = []
        if decls.params:
            declared["params"] = T.DYN
        if decls.authorizer:
            declared["authorizer"] = T(authz.AUTHORIZER)
            declared["authorizer.requestResource"] = T(authz.RESOURCE_CHECK)
        if decls.variables is not None:
            declared["variables"] = T(types.VARIABLES)
            files.append(types.variables_file(decls.variables))
        if len(_CHECK_ENVS) >= 256:
            _CHECK_ENVS.clear()
        env = _CHECK_ENVS[decls] = new_env(declared, [authz.declarations()], types.pool(*files))
    return env


def runtime_env() -> Any:
    """The environment the programs run in (one for all): every variable dyn."""
    if not _RUNTIME_ENV:
        _RUNTIME_ENV.append(new_env(dict.fromkeys(VARIABLES, T.DYN), [authz.runtime()]))
    return _RUNTIME_ENV[0]


@dataclass(frozen=True)
class Compiled:
    program: Any
    #: the type of its value, as a field of ``variables`` declares it (types.spec_of)
    output: str
    #: the variables it reads (the others need not be given to it)
    reads: frozenset[str]


_LITERALS = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"", re.S)
_NAMES = {name: re.compile(rf"(?<!\w){name}(?!\w)") for name in VARIABLES}


def reads(source: str) -> frozenset[str]:
    """The variables ``source`` may read: those it names outside string literals."""
    text = _LITERALS.sub("''", source)
    return frozenset(name for name, pattern in _NAMES.items() if pattern.search(text))


def compile_expression(source: str, decls: Declarations, returns: str | None = "bool") -> Compiled:
    """``source`` compiled for evaluation; CompileError with Kubernetes' detail (``compilation failed: ERROR:
    ...``, ``must evaluate to bool``) when it does not compile or its type is not ``returns`` (None: any)."""
    try:
        checked = compile_program(_check_env(decls), source)
        program = compile_program(runtime_env(), source)
    except CompileError as exc:
        raise CompileError(f"compilation failed: {exc}") from None
    output = types.spec_of(output_type(checked))
    if returns is not None and output != returns:
        raise CompileError(f"must evaluate to {returns}")
    return Compiled(program, output, reads(source))


def activation(data: Mapping[str, Any]) -> Any:
    """An activation of the runtime environment over ``data`` (variable -> JSON value), for any number of
    programs: its values are converted as the programs read them."""
    return runtime_env().Activation(data=dict(data))
