"""The value checks of compiled schema nodes: small closures built once per node (string, format, number,
enum, logical junctors), and the list-type, map-key and embedded-resource checks, with kube-openapi's and
apiextensions' messages."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from minik.api import validation as metavalidation
from minik.api.crdschema import formats
from minik.api.crdschema.gofmt import (
    NIL_PATH,
    child,
    duplicate,
    go_float,
    go_number,
    go_quote,
    invalid,
    key,
    not_supported,
    required,
    shown,
    too_long,
    type_invalid,
)
from minik.api.errors import Cause

if TYPE_CHECKING:
    from minik.api.crdschema.compiled import Node

Obj = dict[str, Any]
Causes = list[Cause]
Check = Callable[[Any, str, Causes], None]


def in_body(path: str, text: str) -> str:
    return f"{path} in body {text}"


def is_int(value: Any) -> bool:
    t = type(value)
    return t is int or (t is float and value.is_integer())


def int_or_none(value: Any) -> int | None:
    return int(value) if is_int(value) else None


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON value (several times faster than copy.deepcopy for these)."""
    t = type(value)
    if t is dict:
        return {k: json_copy(v) for k, v in value.items()}
    if t is list:
        return [json_copy(v) for v in value]
    return value


def canonical(value: Any) -> Any:
    """A hashable stand-in for a JSON value, equal where Go's DeepEqual of decoded JSON says equal (booleans are
    not numbers; 1 equals 1.0)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value)
    if isinstance(value, dict):
        return ("o", tuple(sorted((k, canonical(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("a", tuple(canonical(v) for v in value))
    return ("s", value)


# -- value checks (closures built once per node) -------------------------------------------------------------
def string_check(max_len: int | None, min_len: int | None, pattern: Any, regex: re.Pattern[str] | None) -> Check:
    def check(value: Any, path: str, errs: Causes) -> None:
        n = len(value)
        if max_len is not None and n > max_len:
            errs.append(too_long(shown(path), max_len))
        elif min_len is not None and n < min_len:
            errs.append(invalid(shown(path), value, in_body(path, f"should be at least {min_len} chars long")))
        elif regex is not None and regex.search(value) is None:
            errs.append(invalid(shown(path), value, in_body(path, f"should match '{pattern}'")))

    return check


def format_check(name: str) -> Check:
    test = formats.check_for(name)
    assert test is not None

    def check(value: Any, path: str, errs: Causes) -> None:
        if not test(value):
            errs.append(type_invalid(shown(path), value, in_body(path, f"must be of type {name}: {go_quote(value)}")))

    return check


def _bound(limit: Any, value: Any) -> str:
    """A bound as kube-openapi prints it: an int64 for an integer value, a float64 for a number."""
    return str(int(limit)) if type(value) is int else go_float(float(limit))


def number_check(multiple: Any, minimum: Any, exclusive_min: bool, maximum: Any, exclusive_max: bool) -> Check:
    def number(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    multiple = multiple if number(multiple) else None
    minimum = minimum if number(minimum) else None
    maximum = maximum if number(maximum) else None

    def check(value: Any, path: str, errs: Causes) -> None:
        where = shown(path)
        if multiple is not None:
            if multiple <= 0:
                errs.append(invalid(where, value, f"factor MultipleOf declared for {path} must be positive: "
                                                  f"{go_number(multiple)}"))
            elif type(value) is int and int(multiple) > 0:
                if value % int(multiple):
                    errs.append(invalid(where, value, in_body(path, f"should be a multiple of {int(multiple)}")))
            else:
                quotient = (1 / multiple * value) if multiple < 1 else (value / multiple)
                if not float(quotient).is_integer():
                    errs.append(invalid(where, value,
                                        in_body(path, f"should be a multiple of {go_float(float(multiple))}")))
        if minimum is not None:
            low = int(minimum) if type(value) is int else minimum
            if value < low or (exclusive_min and value <= low):
                text = "greater than" if exclusive_min else "greater than or equal to"
                errs.append(invalid(where, value, in_body(path, f"should be {text} {_bound(minimum, value)}")))
        if maximum is not None:
            high = int(maximum) if type(value) is int else maximum
            if value > high or (exclusive_max and value >= high):
                text = "less than" if exclusive_max else "less than or equal to"
                errs.append(invalid(where, value, in_body(path, f"should be {text} {_bound(maximum, value)}")))

    return check


def enum_check(enum: list[Any]) -> Check:
    allowed = {canonical(v) for v in enum}
    strings = frozenset(v for v in enum if type(v) is str)
    values = [v if isinstance(v, str) else _json(v) for v in enum]

    def check(value: Any, path: str, errs: Causes) -> None:
        if type(value) is str and value in strings:
            return
        if value is None or canonical(value) not in allowed:
            errs.append(not_supported(shown(path), value, values))

    return check


def _json(value: Any) -> str:
    if isinstance(value, float):
        return go_float(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _fewest(results: list[Causes]) -> Causes:
    """The failures of the branch that came closest (kube-openapi keeps its best match's errors)."""
    best = results[0]
    for r in results[1:]:
        if len(r) < len(best):
            best = r
    return best


def junctor_check(node: Node) -> Check:
    """allOf, anyOf, oneOf and not: value validations in logical junctors (their errors carry no field)."""
    def failures(branch: Node, value: Any, path: str) -> Causes:
        found: Causes = []
        branch.check(value, path, found)
        return found

    def check(value: Any, path: str, errs: Causes) -> None:
        quoted = go_quote(path)
        if node.any_of:
            results = [failures(b, value, path) for b in node.any_of]
            if all(results):
                errs.append(invalid(NIL_PATH, "", f"{quoted} must validate at least one schema (anyOf)"))
                errs.extend(_fewest(results))
        if node.one_of:
            results = [failures(b, value, path) for b in node.one_of]
            valid = sum(1 for r in results if not r)
            if valid != 1:
                more = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
                errs.append(invalid(NIL_PATH, "", f"{quoted} must validate one and only one schema (oneOf). {more}"))
                if valid == 0:
                    errs.extend(_fewest(results))
        if node.all_of:
            results = [failures(b, value, path) for b in node.all_of]
            for r in results:
                errs.extend(r)
            valid = sum(1 for r in results if not r)
            if valid != len(results):
                more = ". None validated" if valid == 0 else ""
                errs.append(invalid(NIL_PATH, "", f"{quoted} must validate all the schemas (allOf){more}"))
        if node.not_ is not None and not failures(node.not_, value, path):
            errs.append(invalid(NIL_PATH, "", f"{quoted} must not validate the schema (not)"))

    return check


# -- list types ---------------------------------------------------------------------------------------------
def duplicates(keys: list[Any]) -> list[int]:
    """The indexes where a key is seen the second time (each duplicated key once), as Kubernetes reports them."""
    seen: dict[Any, int] = {}
    found: list[int] = []
    for i, k in enumerate(keys):
        times = seen.get(k, 0)
        if times == 1:
            found.append(i)
        seen[k] = times + 1
    return found


_NO_KEY = ("unspecified",)


def check_list_map(keys: tuple[str, ...], value: list[Any], path: str) -> Causes:
    for i, item in enumerate(value):
        if item is not None and type(item) is not dict:
            return [invalid(key(path, str(i)), item, "must be an object for an array of list-type map")]
    if len(value) <= 1:
        return []
    errs: Causes = []
    if len(keys) == 1:
        name = keys[0]
        found = [_NO_KEY if item is None or name not in item else canonical(item[name]) for item in value]
        for i in duplicates(found):
            item = value[i]
            shown_key = {} if found[i] is _NO_KEY else {name: item[name]}
            errs.append(duplicate(key(path, str(i)), shown_key))
        return errs
    entries = [{k: item[k] for k in keys if k in item} if item is not None else {} for item in value]
    for i in duplicates([canonical(e) for e in entries]):
        errs.append(duplicate(key(path, str(i)), entries[i]))
    return errs


def map_list_correlation(node: Node, old: Any) -> Callable[[Any], Any]:
    """The old item of a ``x-kubernetes-list-type: map`` list with the same keys as a new item (other lists do
    not correlate items, so their rules see no oldSelf)."""
    if node.list_type != "map" or not node.map_keys or type(old) is not list:
        return lambda item: None
    keys = node.map_keys
    index: dict[Any, Any] = {}
    for item in old:
        if type(item) is dict:
            index.setdefault(tuple(canonical(item.get(k)) for k in keys), item)

    def correlate(item: Any) -> Any:
        if type(item) is not dict:
            return None
        return index.get(tuple(canonical(item.get(k)) for k in keys))

    return correlate


# -- embedded resources ------------------------------------------------------------------------------------
_GROUP_VERSION = re.compile(r"[^/]+(/[^/]+)?")


def check_embedded_resource(value: Obj, path: str) -> Causes:
    errs: Causes = []
    if "apiVersion" not in value:
        errs.append(required(child(path, "apiVersion"), "must not be empty"))
    if "kind" not in value:
        errs.append(required(child(path, "kind"), "must not be empty"))
    for k, v in value.items():
        if k == "apiVersion":
            if type(v) is not str:
                errs.append(invalid(child(path, k), v, "must be a string"))
            elif not v:
                errs.append(invalid(child(path, k), v, "must not be empty"))
            elif not _GROUP_VERSION.fullmatch(v):
                errs.append(invalid(child(path, k), v, f"unexpected GroupVersion string: {v}"))
        elif k == "kind":
            if type(v) is not str:
                errs.append(invalid(child(path, k), v, "must be a string"))
            elif not v:
                errs.append(invalid(child(path, k), v, "must not be empty"))
            else:
                problems = metavalidation.is_dns1035_label(v.lower())
                if problems:
                    errs.append(invalid(child(path, k), v,
                                        "may have mixed case, but should otherwise match: " + ",".join(problems)))
        elif k == "metadata" and type(v) is dict:
            meta = dict(v)
            if not meta.get("name"):
                meta["name"] = "fakename"
            for cause in metavalidation.validate_object_meta(meta, "path", bool(meta.get("namespace"))):
                errs.append(Cause(child(path, cause.field), cause.reason, cause.message))
        elif k == "metadata":
            errs.append(invalid(child(path, k), v, "must be an object"))
    return errs


