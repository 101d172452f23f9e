"""CEL for ``x-kubernetes-validations``: the environments of a schema node's rules, compiling a rule (and its
messageExpression), and what a rule is given. The CEL itself (environments with Kubernetes' libraries, cel-go's
error wording, evaluation) is minik.api.cel's.

``self`` (and ``oldSelf``) get the CEL type of their schema node as far as this runtime can declare it (see
Node.cel_type): strings, booleans, bytes, durations and timestamps exactly; objects as ``map(string, dyn)`` (so a
misspelt field is an evaluation error, ``no such key``, rather than Kubernetes' compile error); maps and lists
with their element types; integers and numbers as ``dyn`` (so comparing an integer with a double compiles, as
Kubernetes' cross-type numeric comparisons allow).
"""

from __future__ import annotations

import re
from typing import Any

from minik.api.cel import CompileError, T, compile_program, new_env, output_type

__all__ = ["bindings", "compile_all", "compile_message_expression", "compile_rule", "environment",
           "self_fields", "uses_old_self"]


#: the variables that carry oldSelf into the wrapper of an optionalOldSelf rule
_OLD, _HAS_OLD = "__minik_old__", "__minik_has_old__"
_OPTIONAL_WRAPPER = f"cel.bind(oldSelf, {_HAS_OLD} ? optional.of({_OLD}) : optional.none(),\n"

_ENVS: dict[tuple[str, bool], Any] = {}


def environment(self_type: Any, optional_old_self: bool = False) -> Any:
    """The environment for rules whose ``self`` is of ``self_type`` (one per type, built on first use)."""
    key = (self_type.name(), optional_old_self)
    env = _ENVS.get(key)
    if env is None:
        variables = {"self": self_type}
        if optional_old_self:
            variables[_OLD] = self_type
            variables[_HAS_OLD] = T.BOOL
        else:
            variables["oldSelf"] = self_type
        env = _ENVS[key] = new_env(variables)
    return env


_STRINGS = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"", re.S)
_OLD_SELF = re.compile(r"(?<![\w.])oldSelf(?!\w)")


def uses_old_self(source: str) -> bool:
    """Whether the expression refers to ``oldSelf`` (a transition rule), string literals aside."""
    return bool(_OLD_SELF.search(_STRINGS.sub("''", source)))


_SELF = re.compile(r"(?<![\w.])self(?!\w)")
_SELECT = re.compile(r"\s*\.\??\s*([A-Za-z_]\w*)(?!\w)(?!\s*\()")


def self_fields(*sources: str) -> frozenset[str] | None:
    """The fields of ``self`` the expressions select, when ``self`` appears only as ``self.field`` (or
    ``has(self.field)``, ``self.?field``): the rule then needs only those, and a large object need not be
    converted whole for every evaluation. None when an expression uses ``self`` otherwise."""
    found: set[str] = set()
    for source in sources:
        text = _STRINGS.sub("''", source)
        for m in _SELF.finditer(text):
            select = _SELECT.match(text, m.end())
            if select is None or "__" in select.group(1):
                return None
            found.add(select.group(1))
    return frozenset(found)


def compile_rule(source: str, self_type: Any, optional_old_self: bool = False) -> Any:
    """The program of a rule; CompileError with Kubernetes' detail when it does not compile or is no bool."""
    text, offset = (f"{_OPTIONAL_WRAPPER}{source}\n)", 1) if optional_old_self else (source, 0)
    try:
        program = compile_program(environment(self_type, optional_old_self), source, text, offset)
    except CompileError as exc:
        raise CompileError(f"compilation failed: {exc}") from None
    if output_type(program) not in ("BOOL", "DYN"):
        raise CompileError("cel expression must evaluate to a bool")
    return program


def compile_all(sources: list[str], self_type: Any) -> Any:
    """One program that is true when every rule of ``sources`` (none using oldSelf) is; None if it does not
    compile (then the rules run one by one)."""
    text = "[" + ", ".join(f"({source}\n)" for source in sources) + "].all(__minik_rule__, __minik_rule__)"
    try:
        return compile_program(environment(self_type), text)
    except CompileError:
        return None


def compile_message_expression(source: str, self_type: Any) -> Any:
    try:
        program = compile_program(environment(self_type), source)
    except CompileError as exc:
        raise CompileError(f"messageExpression compilation failed: {exc}") from None
    if output_type(program) not in ("STRING", "DYN"):
        raise CompileError("messageExpression must evaluate to a string")
    return program


def bindings(self_value: Any, old_value: Any, optional_old_self: bool, has_old: bool) -> dict[str, Any]:
    if optional_old_self:
        return {"self": self_value, _OLD: old_value, _HAS_OLD: has_old}
    if has_old:
        return {"self": self_value, "oldSelf": old_value}
    return {"self": self_value}
