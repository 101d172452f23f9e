"""Kubernetes' CEL libraries (k8s.io/apiserver/pkg/cel/library) beside CEL's own extensions.

Here: lists (isSorted, sum, min, max, indexOf, lastIndexOf), regex (find, findAll), sets (contains, equivalent,
intersects), the checks isURL, isIP, isCIDR and isQuantity, quantity() with its methods (isLessThan,
isGreaterThan, compareTo, add, sub, sign, isInteger, asInteger, asApproximateFloat), and ip(), cidr() and url()
with theirs (see net). A quantity is carried as the string of its exact value (so two quantities of equal value
are equal): this runtime's Python functions return plain CEL values, not Kubernetes' opaque types. The
authorizer library is authz's, declared only where Kubernetes declares it (admission). Not there: format.named()
and the format library, and two-variable comprehensions (Kubernetes 1.32's ``all(i, v, ...)``), which this
runtime's parser lacks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_encoders, ext_math, ext_optional, ext_strings

from minik.api.cel import net
from minik.api.quantity import parse_quantity

T = cel.Type


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
        function("isURL", "k8s_is_url", T.BOOL, [T.STRING], net.is_url),
        function("isIP", "k8s_is_ip", T.BOOL, [T.STRING], net.is_ip),
        function("isCIDR", "k8s_is_cidr", T.BOOL, [T.STRING], net.is_cidr),
        function("isQuantity", "k8s_is_quantity", T.BOOL, [T.STRING], _is_quantity),
        *_quantity_functions(),
        *net.functions(),
    ])


_LIBRARY: list[Any] = []


def extensions() -> list[Any]:
    """The libraries of every environment: CEL's strings (version 2), optional, bindings, math and encoders
    extensions, and Kubernetes' library above (built once)."""
    if not _LIBRARY:
        _LIBRARY.extend([ext_strings.ExtStrings(2), ext_optional.ExtOptional(), ext_bindings.ExtBindings(),
                         ext_math.ExtMath(), ext_encoders.ExtEncoders(), _k8s_library()])
    return _LIBRARY
