"""CEL for ``x-kubernetes-validations``: the environment, compilation and evaluation of one rule.

The CEL implementation is cel-expr-python, Google's CEL C++ runtime with its type checker, so compile errors read
as cel-go's do (``undeclared reference to 'foo' (in container '')``, ``found no matching overload for '_>_'
applied to '(int, uint)'``). ``self`` (and ``oldSelf``) get the CEL type of their schema node as far as this
runtime can declare it: strings, booleans, bytes, durations and timestamps exactly; objects as ``map(string,
dyn)`` (so a misspelt field is an evaluation error, ``no such key``, rather than Kubernetes' compile error); maps
and lists with their element types; integers and numbers as ``dyn`` (so comparing an integer with a double
compiles, as Kubernetes' cross-type numeric comparisons allow).

Kubernetes' extension libraries, beyond the standard library and the strings (version 2), optional and
bindings extensions, are here in part (see ``_k8s_library``): lists (isSorted, sum, min, max, indexOf,
lastIndexOf), regex (find, findAll), sets (contains, equivalent, intersects) and the checks isURL, isIP, isCIDR,
isQuantity, and quantity() with its methods (isLessThan, isGreaterThan, compareTo, add, sub, sign, isInteger,
asInteger, asApproximateFloat), where a quantity is carried as the string of its exact value (so two quantities
of equal value are equal), and ip(), cidr() and url() with their methods (see celnet). Not there: format.named()
and the format library, the authorizer library (no use in CRD rules), and two-variable comprehensions (Kubernetes
1.32's ``all(i, v, ...)``), which this runtime's parser lacks.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_encoders, ext_math, ext_optional, ext_strings

from minik.api.crdschema import celnet
from minik.api.quantity import parse_quantity

T = cel.Type

#: messages of the runtime's errors, in cel-go's words (which Kubernetes' messages carry)
_RUNTIME_ERRORS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r'Key not found in map ?: ?"?(.*?)"?$'), lambda m: f"no such key: {m.group(1)}"),
    (re.compile(r"Index error: index=(-?\d+)"), lambda m: f"index out of bounds: {m.group(1)}"),
    (re.compile(r"divide by zero|division by zero"), lambda m: "division by zero"),
    (re.compile(r"modulus by zero|modulo by zero"), lambda m: "modulus by zero"),
    (re.compile(r"[Nn]o matching overloads? (?:found)?\s*:?\s*(.*)"), lambda m: f"no such overload: {m.group(1)}".strip()),
    (re.compile(r"No such field|no_such_field", re.I), lambda m: "no such key"),
)
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_ERROR_HEAD = re.compile(r"ERROR: <input>:(\d+):(\d+): (.*)")


def runtime_message(raw: str) -> str:
    """A runtime error of the C++ runtime as cel-go words it."""
    text = _STATUS_PREFIX.sub("", raw.strip())
    for pattern, render in _RUNTIME_ERRORS:
        m = pattern.search(text)
        if m:
            return render(m)
    return text


def compile_message(raw: str, source: str, line_offset: int = 0) -> str:
    """The checker's issues as cel-go's ``issues.String()``: ``ERROR: <input>:L:C: message`` and the source line
    with a caret, one issue after another. ``line_offset`` undoes lines a wrapper added before the source."""
    body = _STATUS_PREFIX.sub("", raw.strip())
    body = re.sub(r"\s*\[[A-Z_]+\]$", "", body)
    lines = source.split("\n")
    issues: list[str] = []
    for text in body.split("\n"):
        m = _ERROR_HEAD.match(text.strip())
        if not m:
            continue
        line, col = int(m.group(1)) - line_offset, int(m.group(2))
        if line < 1 or line > len(lines):
            line, col = 1, 1
        snippet = lines[line - 1]
        issues.append(f"ERROR: <input>:{line}:{col}: {m.group(3)}\n | {snippet}\n | {'.' * (col - 1)}^")
    return "\n".join(issues) if issues else body


# -- Kubernetes' libraries (k8s.io/apiserver/pkg/cel/library), the part that needs no opaque type -----------
def _is_sorted(items: list[Any]) -> bool:
    return all(items[i] <= items[i + 1] for i in range(len(items) - 1))


def _sum(items: list[Any]) -> Any:
    return sum(items) if items else 0


def _min(items: list[Any]) -> Any:
    if not items:
        raise ValueError("min called on empty list")
    return min(items)


def _max(items: list[Any]) -> Any:
    if not items:
        raise ValueError("max called on empty list")
    return max(items)


def _index_of(items: list[Any], value: Any) -> int:
    for i, item in enumerate(items):
        if item == value and type(item) is type(value):
            return i
    return -1


def _last_index_of(items: list[Any], value: Any) -> int:
    for i in range(len(items) - 1, -1, -1):
        if items[i] == value and type(items[i]) is type(value):
            return i
    return -1


_REGEX_CACHE: dict[str, re.Pattern[str]] = {}


def _regex(pattern: str) -> re.Pattern[str]:
    found = _REGEX_CACHE.get(pattern)
    if found is None:
        if len(_REGEX_CACHE) > 1024:
            _REGEX_CACHE.clear()
        found = _REGEX_CACHE[pattern] = re.compile(pattern)
    return found


def _find(text: str, pattern: str) -> str:
    m = _regex(pattern).search(text)
    return m.group(0) if m else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


def _sets_contains(a: list[Any], b: list[Any]) -> bool:
    return all(any(x == y for y in a) for x in b)


def _sets_equivalent(a: list[Any], b: list[Any]) -> bool:
    return _sets_contains(a, b) and _sets_contains(b, a)


def _sets_intersects(a: list[Any], b: list[Any]) -> bool:
    return any(any(x == y for y in a) for x in b)


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except (ValueError, TypeError):
        return False
    return True


def _quantity(text: str) -> str:
    """A quantity as this library carries it: the string of its exact value (``1Gi`` -> ``1073741824``)."""
    value = parse_quantity(text)
    return _q_str(value)


def _q_str(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text


def _q(text: str) -> Decimal:
    return Decimal(text)


def _q_compare(a: str, b: str) -> int:
    x, y = _q(a), _q(b)
    return -1 if x < y else (1 if x > y else 0)


def _q_as_integer(a: str) -> int:
    value = _q(a)
    if value != value.to_integral_value() or not -(2 ** 63) <= value < 2 ** 63:
        raise ValueError("cannot convert value to integer")
    return int(value)


def _q_add(a: str, b: Any) -> str:
    return _q_str(_q(a) + (_q(b) if isinstance(b, str) else Decimal(b)))


def _q_sub(a: str, b: Any) -> str:
    return _q_str(_q(a) - (_q(b) if isinstance(b, str) else Decimal(b)))


def _quantity_functions() -> list[Any]:
    q = T.STRING

    def member(name: str, overloads: list[tuple[str, Any, list[Any], Callable[..., Any]]]) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(oid, result, params, is_member=True, impl=impl)
                                       for oid, result, params, impl in overloads])

    return [
        cel.FunctionDecl("quantity", [cel.Overload("k8s_quantity", q, [T.STRING], impl=_quantity)]),
        member("isLessThan", [("k8s_q_is_less_than", T.BOOL, [q, q], lambda a, b: _q_compare(a, b) < 0)]),
        member("isGreaterThan", [("k8s_q_is_greater_than", T.BOOL, [q, q], lambda a, b: _q_compare(a, b) > 0)]),
        member("compareTo", [("k8s_q_compare_to", T.INT, [q, q], _q_compare)]),
        member("add", [("k8s_q_add", q, [q, q], _q_add), ("k8s_q_add_int", q, [q, T.INT], _q_add)]),
        member("sub", [("k8s_q_sub", q, [q, q], _q_sub), ("k8s_q_sub_int", q, [q, T.INT], _q_sub)]),
        member("sign", [("k8s_q_sign", T.INT, [q], lambda a: _q_compare(a, "0"))]),
        member("isInteger", [("k8s_q_is_integer", T.BOOL, [q], lambda a: _q(a) == _q(a).to_integral_value())]),
        member("asInteger", [("k8s_q_as_integer", T.INT, [q], _q_as_integer)]),
        member("asApproximateFloat", [("k8s_q_as_float", T.DOUBLE, [q], lambda a: float(_q(a)))]),
    ]


def _k8s_library() -> Any:
    ld = T.List(T.DYN)
    ls = T.List(T.STRING)

    def member(name: str, overload: str, result: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(overload, result, params, is_member=True, impl=impl)])

    def function(name: str, overload: str, result: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(overload, result, params, impl=impl)])

    return cel.CelExtension("kubernetes", [
        member("isSorted", "k8s_list_is_sorted", T.BOOL, [ld], _is_sorted),
        member("sum", "k8s_list_sum", T.DYN, [ld], _sum),
        member("min", "k8s_list_min", T.DYN, [ld], _min),
        member("max", "k8s_list_max", T.DYN, [ld], _max),
        member("indexOf", "k8s_list_index_of", T.INT, [ld, T.DYN], _index_of),
        member("lastIndexOf", "k8s_list_last_index_of", T.INT, [ld, T.DYN], _last_index_of),
        member("find", "k8s_string_find", T.STRING, [T.STRING, T.STRING], _find),
        cel.FunctionDecl("findAll", [
            cel.Overload("k8s_string_find_all", ls, [T.STRING, T.STRING], is_member=True, impl=_find_all),
            cel.Overload("k8s_string_find_all_n", ls, [T.STRING, T.STRING, T.INT], is_member=True, impl=_find_all),
        ]),
        function("sets.contains", "k8s_sets_contains", T.BOOL, [ld, ld], _sets_contains),
        function("sets.equivalent", "k8s_sets_equivalent", T.BOOL, [ld, ld], _sets_equivalent),
        function("sets.intersects", "k8s_sets_intersects", T.BOOL, [ld, ld], _sets_intersects),
        function("isURL", "k8s_is_url", T.BOOL, [T.STRING], celnet.is_url),
        function("isIP", "k8s_is_ip", T.BOOL, [T.STRING], celnet.is_ip),
        function("isCIDR", "k8s_is_cidr", T.BOOL, [T.STRING], celnet.is_cidr),
        function("isQuantity", "k8s_is_quantity", T.BOOL, [T.STRING], _is_quantity),
        *_quantity_functions(),
        *celnet.functions(),
    ])


_LIBRARY: list[Any] = []


def _extensions() -> list[Any]:
    if not _LIBRARY:
        _LIBRARY.extend([ext_strings.ExtStrings(2), ext_optional.ExtOptional(), ext_bindings.ExtBindings(),
                         ext_math.ExtMath(), ext_encoders.ExtEncoders(), _k8s_library()])
    return _LIBRARY


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
        env = _ENVS[key] = cel.NewEnv(variables=variables, extensions=_extensions())
    return env


class CompileError(Exception):
    """A rule or messageExpression that does not compile; ``str`` is Kubernetes' detail."""


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


def _return_name(program: Any) -> str:
    return str(program.return_type().name())


def compile_rule(source: str, self_type: Any, optional_old_self: bool = False) -> Any:
    """The program of a rule; CompileError with Kubernetes' detail when it does not compile or is no bool."""
    env = environment(self_type, optional_old_self)
    text, offset = (f"{_OPTIONAL_WRAPPER}{source}\n)", 1) if optional_old_self else (source, 0)
    try:
        program = env.compile(text)
    except RuntimeError as exc:
        raise CompileError("compilation failed: " + compile_message(str(exc), source, offset)) from None
    if _return_name(program) not in ("bool", "BOOL", "dyn", "DYN"):
        raise CompileError("cel expression must evaluate to a bool")
    return program


def compile_all(sources: list[str], self_type: Any) -> Any:
    """One program that is true when every rule of ``sources`` (none using oldSelf) is; None if it does not
    compile (then the rules run one by one)."""
    env = environment(self_type)
    text = "[" + ", ".join(f"({source}\n)" for source in sources) + "].all(__minik_rule__, __minik_rule__)"
    try:
        return env.compile(text)
    except RuntimeError:
        return None


def compile_message_expression(source: str, self_type: Any) -> Any:
    env = environment(self_type)
    try:
        program = env.compile(source)
    except RuntimeError as exc:
        raise CompileError("messageExpression compilation failed: " +
                           compile_message(str(exc), source)) from None
    if _return_name(program) not in ("string", "STRING", "dyn", "DYN"):
        raise CompileError("messageExpression must evaluate to a string")
    return program


@dataclass
class Outcome:
    """What a program gave: a value, or the runtime's error message (in cel-go's words)."""

    value: Any = None
    error: str | None = None


_ERROR = T.ERROR


def run(program: Any, data: dict[str, Any]) -> Outcome:
    """Evaluate; any failure, including a value the runtime cannot take, comes back as an error."""
    try:
        result = program.eval(data=data)
        value = result.value()
        if value is True or value is False:
            return Outcome(value)
        if result.type() == _ERROR:
            return Outcome(error=runtime_message(str(value)))
        return Outcome(value)
    except Exception as exc:  # noqa: BLE001 - the runtime's conversion errors become a rule's error, never a 500
        return Outcome(error=runtime_message(str(exc)))


def bindings(self_value: Any, old_value: Any, optional_old_self: bool, has_old: bool) -> dict[str, Any]:
    if optional_old_self:
        return {"self": self_value, _OLD: old_value, _HAS_OLD: has_old}
    if has_old:
        return {"self": self_value, "oldSelf": old_value}
    return {"self": self_value}


# -- JSON values as CEL values ----------------------------------------------------------------------------
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str) -> dt.timedelta:
    """Go's time.ParseDuration (``1h30m``, ``-1.5s``, ``300ms``)."""
    rest, sign = text, 1
    if rest[:1] in "+-" and rest:
        sign, rest = (-1 if rest[0] == "-" else 1), rest[1:]
    if rest == "0":
        return dt.timedelta(0)
    if not rest:
        raise ValueError(f'time: invalid duration "{text}"')
    seconds, pos = 0.0, 0
    while pos < len(rest):
        m = _DURATION_PART.match(rest, pos)
        if not m:
            raise ValueError(f'time: invalid duration "{text}"')
        seconds += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return dt.timedelta(seconds=sign * seconds)


def parse_timestamp(text: str) -> dt.datetime:
    """An RFC 3339 date-time or full-date as a UTC-aware datetime."""
    if len(text) == 10:
        return dt.datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=dt.UTC)
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def decode_bytes(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return text.encode()
