"""A CRD version's schema compiled once into a tree of nodes that prune, default and validate objects.

Each ``Node`` holds what its schema says, digested at construction: the Python types its ``type`` accepts, the
checks that apply to each kind of value (a tuple of small closures, empty for most nodes), compiled patterns and
CEL programs, and flags that let a walk skip subtrees with nothing to do (no rules below, no list types, no
defaults). The walks never read the schema dict again.

Paths come in Kubernetes' two spellings: the OpenAPI validator's (``spec.items[0].name``, map entries as
``spec.labels.key``, messages ``spec.replicas in body should be ...``) and ``field.Path``'s, used by the list-type,
embedded-resource and CEL checks (``spec.labels[key]``). An error at the root of the object has the path
``<nil>``, as Kubernetes prints a nil path.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minik.api.cel import T, run, values
from minik.api.crdschema import celrules, formats
from minik.api.crdschema.checks import (
    canonical,
    check_embedded_resource,
    check_list_map,
    duplicates,
    enum_check,
    format_check,
    in_body,
    int_or_none,
    is_int,
    json_copy,
    junctor_check,
    map_list_correlation,
    number_check,
    string_check,
)
from minik.api.crdschema.gofmt import (
    NIL_PATH,
    child,
    duplicate,
    go_quote,
    invalid,
    key,
    required,
    shown,
    too_many,
    type_invalid,
)
from minik.api.crdschema.rules import Rule, cel_escape, compile_rules, rule_error
from minik.api.errors import Cause

Obj = dict[str, Any]
Causes = list[Cause]
Check = Callable[[Any, str, Causes], None]

_MISSING = object()
#: the item key of a map list item that lacks it
NO_KEY = ("<none>",)
#: a marker the OpenAPI walk leaves when a set or map list has duplicates, for the list-type walk to word
LIST_PROBLEM = Cause("", "", "")
#: no old value to ratchet against (a create, or a part of an update that does not correlate with the old object)
NO_OLD: Any = object()
META_FIELDS = frozenset(("apiVersion", "kind", "metadata"))
_KIND_NAMES = {bool: "boolean", str: "string", int: "integer", float: "number", list: "array", dict: "object"}
#: the Go format name of a value's type, as kube-openapi's type check reports it for a string format
_GO_FORMATS = {int: "int64", float: "float64"}
#: the cause types after which Kubernetes does not run the CEL rules
_BLOCKING = frozenset(("FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany",
                       "FieldValueTypeInvalid"))
BLOCKED = invalid(NIL_PATH, None, "some validation rules were not checked because the object was invalid; correct "
                  "the existing errors to complete validation")


# -- the nodes --------------------------------------------------------------------------------------------
class Node:
    """One schema node, compiled. ``resource_root`` marks the root of a resource (the object itself or an
    ``x-kubernetes-embedded-resource``), where apiVersion, kind and metadata are never pruned."""

    def __init__(self, s: Obj, resource_root: bool = False, value_only: bool = False) -> None:
        self.schema = s
        t = s.get("type")
        self.type: str = t if isinstance(t, str) else ""
        self.int_or_string = s.get("x-kubernetes-int-or-string") is True
        self.preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded = s.get("x-kubernetes-embedded-resource") is True
        self.resource_root = resource_root or self.embedded
        self.nullable = s.get("nullable") is True
        self.default: Any = copy.deepcopy(s["default"]) if "default" in s else _MISSING
        list_type = s.get("x-kubernetes-list-type")
        self.list_type: str | None = list_type if isinstance(list_type, str) else None
        keys = s.get("x-kubernetes-list-map-keys")
        self.map_keys: tuple[str, ...] = tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
        map_type = s.get("x-kubernetes-map-type")
        self.map_type: str | None = map_type if isinstance(map_type, str) else None
        required_ = s.get("required")
        self.required: tuple[str, ...] = tuple(r for r in required_ if isinstance(r, str)) \
            if isinstance(required_, list) else ()

        props = s.get("properties")
        self.props: dict[str, Node] | None = None
        if isinstance(props, dict):
            self.props = {k: Node(v, value_only=value_only) for k, v in props.items() if isinstance(v, dict)}
        additional = s.get("additionalProperties")
        #: additionalProperties given: True (any value, pruned as if schemaless), False, or a schema's node
        self.has_additional = additional is not None
        self.additional_false = additional is False
        self.additional: Node | None = Node(additional, value_only=value_only) if isinstance(additional, dict) else None
        items = s.get("items")
        self.items: Node | None = Node(items, value_only=value_only) if isinstance(items, dict) else None

        self.all_of = self._nested(s.get("allOf"))
        self.any_of = self._nested(s.get("anyOf"))
        self.one_of = self._nested(s.get("oneOf"))
        self.not_: Node | None = Node(s["not"], value_only=True) if isinstance(s.get("not"), dict) else None
        if self.int_or_string and self.any_of and _is_int_or_string_any_of(s.get("anyOf")):
            self.any_of = []  # the two branches say no more than the type check of int-or-string does

        self._build_type_check()
        self._build_value_checks()
        self._build_shortcuts()
        self.rules: list[Rule] = [] if value_only else compile_rules(s.get("x-kubernetes-validations"), self.cel_type())
        #: the fields of an object the rules select (self.x, oldSelf.x), when they select nothing else
        self.rule_fields: frozenset[str] | None = None
        if self.rules and self.type == "object":
            sources = [r.source for r in self.rules] + [str(e.get("messageExpression") or "") for e in
                                                         s.get("x-kubernetes-validations") or [] if isinstance(e, dict)]
            self.rule_fields = celrules.self_fields(*(x.replace("oldSelf", "self") for x in sources))
        #: the rules that need only ``self``, as one program that is true when all of them are (one evaluation
        #: for the common case that every rule holds; the rules are then run one by one only to word a failure)
        self.together: list[Rule] = [r for r in self.rules if r.program is not None and not r.uses_old_self]
        self.together_program: Any = None
        if len(self.together) > 1:
            self.together_program = celrules.compile_all([r.source for r in self.together], self.cel_type())
        self._build_flags()

    @staticmethod
    def _nested(raw: Any) -> list[Node]:
        return [Node(x, value_only=True) for x in raw if isinstance(x, dict)] if isinstance(raw, list) else []

    # -- construction --
    def _build_type_check(self) -> None:
        fmt = self.schema.get("format")
        self.format: str = fmt if isinstance(fmt, str) and formats.check_for(fmt) is not None else ""
        if self.int_or_string:
            self.types_label, self.accepts = "integer,string", frozenset((int, str))
        elif self.type:
            self.types_label = self.type
            self.accepts = frozenset({"object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
                                      "integer": (int,), "number": (int, float)}.get(self.type, ()))
        else:
            self.types_label, self.accepts = "", frozenset(_KIND_NAMES)
        self.checks_types = bool(self.type or self.int_or_string or self.format)

    def _type_error(self, value: Any, path: str) -> Cause | None:
        """kube-openapi's type check of a non-null value whose Python type the node does not take outright."""
        t = type(value)
        if not self.checks_types:
            return None
        label = self.types_label.split(",")
        kind = _KIND_NAMES.get(t, "object")
        if t is float and value.is_integer() and "integer" in label:
            return None
        if self.format and t not in (str, list) and kind not in label:
            shown_format = _GO_FORMATS.get(t, "")
            return type_invalid(shown(path), shown_format,
                                in_body(path, f"must be of type {self.format}: {go_quote(shown_format)}"))
        if self.format and t in (str, list) and "number" not in label and "integer" not in label:
            return None
        if not self.types_label or kind in label:
            return None
        return type_invalid(shown(path), kind, in_body(path, f"must be of type {self.types_label}: {go_quote(kind)}"))

    def _build_value_checks(self) -> None:
        s = self.schema
        string_checks: list[Check] = []
        number_checks: list[Check] = []
        common: list[Check] = []
        max_len, min_len, pattern = s.get("maxLength"), s.get("minLength"), s.get("pattern")
        regex = None
        if isinstance(pattern, str) and pattern:
            try:
                regex = re.compile(pattern)
            except re.error:
                regex = None
        if is_int(max_len) or is_int(min_len) or regex is not None:
            string_checks.append(string_check(int_or_none(max_len), int_or_none(min_len), pattern, regex))
        if self.format:
            string_checks.append(format_check(self.format))
        multiple, minimum, maximum = s.get("multipleOf"), s.get("minimum"), s.get("maximum")
        if any(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (multiple, minimum, maximum)):
            number_checks.append(number_check(multiple, minimum, s.get("exclusiveMinimum") is True,
                                               maximum, s.get("exclusiveMaximum") is True))
        enum = s.get("enum")
        if isinstance(enum, list):
            common.append(enum_check(enum))
        if self.all_of or self.any_of or self.one_of or self.not_ is not None:
            common.insert(0, junctor_check(self))
        self.common: tuple[Check, ...] = tuple(common)
        self.scalar_checks: dict[type, tuple[Check, ...]] = {
            str: tuple(string_checks) + self.common,
            int: tuple(number_checks) + self.common,
            float: tuple(number_checks) + self.common,
            bool: self.common,
            type(None): self.common,
        }
        mi, ma = s.get("minItems"), s.get("maxItems")
        self.min_items = int_or_none(mi)
        self.max_items = int_or_none(ma)
        self.unique = s.get("uniqueItems") is True
        mi, ma = s.get("minProperties"), s.get("maxProperties")
        self.min_props = int_or_none(mi)
        self.max_props = int_or_none(ma)

    def _build_shortcuts(self) -> None:
        #: a scalar node with nothing to check beyond its type: a value of an accepted type needs no visit
        self.trivial = self.type not in ("object", "array", "") and not self.common and \
            not any(self.scalar_checks.values())
        self.prop_keys = frozenset(self.props or ())
        self.object_rules = self.min_props is not None or self.max_props is not None or bool(self.common) or \
            self.additional_false

    def _children(self) -> list[Node]:
        found = list(self.props.values()) if self.props else []
        if self.additional is not None:
            found.append(self.additional)
        if self.items is not None:
            found.append(self.items)
        return found

    def _build_flags(self) -> None:
        children = self._children()
        self.rules_below: bool = bool(self.rules) or any(c.rules_below for c in children)
        self.lists_below: bool = self.list_type in ("set", "map") or any(c.lists_below for c in children)
        self.embedded_below: bool = any(c.embedded or c.embedded_below for c in children)
        self.defaults_below: bool = any(c.default is not _MISSING or c.defaults_below for c in children)
        #: the props that have a default, for defaulting without looking at the others
        self.defaulted = tuple((k, c) for k, c in (self.props or {}).items() if c.default is not _MISSING)
        self.convert = self._build_converter()

    # -- CEL typing and values --
    def cel_type(self) -> Any:
        if self.int_or_string or not self.type or self.type in ("integer", "number"):
            return T.DYN
        if self.type == "string":
            fmt = self.schema.get("format")
            return {"byte": T.BYTES, "duration": T.DURATION, "date": T.TIMESTAMP,
                    "date-time": T.TIMESTAMP}.get(fmt if isinstance(fmt, str) else "", T.STRING)
        if self.type == "boolean":
            return T.BOOL
        if self.type == "array":
            return T.List(self.items.cel_type() if self.items is not None else T.DYN)
        if self.type == "object" and self.additional is not None and not self.props:
            return T.Map(T.STRING, self.additional.cel_type())
        return T.Map(T.STRING, T.DYN)

    def _build_converter(self) -> Callable[[Any], Any] | None:
        """How a JSON value of this node becomes the CEL value Kubernetes gives rules (numbers as doubles, string
        formats as bytes, durations and timestamps, escaped property names, metadata reduced to name and
        generateName at a resource's root); None when the JSON value serves as it is."""
        if self.int_or_string:
            return None
        if self.type == "number":
            return lambda v: float(v) if type(v) is int else v
        if self.type == "string":
            fmt = self.schema.get("format")
            parse: Callable[[str], Any] | None = {"byte": values.decode_bytes,
                                                  "duration": values.parse_go_duration,
                                                  "date": values.parse_timestamp,
                                                  "date-time": values.parse_timestamp}.get(
                fmt if isinstance(fmt, str) else "")
            if parse is None:
                return None
            convert_string = parse

            def string_value(v: Any) -> Any:
                if type(v) is not str:
                    return v
                try:
                    return convert_string(v)
                except (ValueError, OverflowError):
                    return v

            return string_value
        if self.items is not None and self.items.convert is not None:
            item = self.items.convert
            return lambda v: [item(x) for x in v] if type(v) is list else v
        if self.props is None and self.additional is not None and self.additional.convert is not None:
            entry = self.additional.convert
            return lambda v: {k: entry(x) for k, x in v.items()} if type(v) is dict else v
        fields = [(k, c.convert) for k, c in (self.props or {}).items() if c.convert is not None]
        renames = [(k, escaped) for k in (self.props or {}) if (escaped := cel_escape(k)) not in (k, None)]
        meta_root = self.resource_root and self.props is not None
        if not fields and not renames and not meta_root:
            return None

        def object_value(v: Any) -> Any:
            if type(v) is not dict:
                return v
            out = dict(v)
            for k, convert in fields:
                if k in out:
                    out[k] = convert(out[k])
            for k, escaped in renames:
                if k in out:
                    out[escaped] = out.pop(k)
            if meta_root and type(out.get("metadata")) is dict:
                meta = out["metadata"]
                out["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
            return out

        return object_value

    # -- validation (kube-openapi) --
    def check(self, value: Any, path: str, errs: Causes, old: Any = NO_OLD) -> None:
        """kube-openapi's validation of ``value``; with ``old`` (the correlated old value, on the ratcheting pass
        of an update) a value equal to its old one is not checked, as Kubernetes ratchets unchanged values."""
        if old is not NO_OLD and old == value:
            return
        t = type(value)
        if t is dict:
            if t not in self.accepts:
                self._add_type_error(value, path, errs)
            self._check_object(value, path, errs, old)
        elif t is list:
            if t not in self.accepts:
                self._add_type_error(value, path, errs)
            self._check_array(value, path, errs, old)
        elif value is None:
            if self.checks_types and self.types_label and not self.nullable:
                errs.append(type_invalid(shown(path), "null",
                                         in_body(path, f"must be of type {self.types_label}: \"null\"")))
            for check in self.common:
                check(value, path, errs)
        else:
            if t not in self.accepts:
                self._add_type_error(value, path, errs)
            for check in self.scalar_checks.get(t, self.common):
                check(value, path, errs)

    def _add_type_error(self, value: Any, path: str, errs: Causes) -> None:
        error = self._type_error(value, path)
        if error is not None:
            errs.append(error)

    def _check_array(self, value: list[Any], path: str, errs: Causes, old: Any = NO_OLD) -> None:
        items = self.items
        if items is not None:
            if old is NO_OLD:
                for i, item in enumerate(value):
                    items.check(item, f"{path}[{i}]", errs)
            else:
                correlate = map_list_correlation(self, old)
                for i, item in enumerate(value):
                    before = correlate(item)
                    items.check(item, f"{path}[{i}]", errs, NO_OLD if before is None else before)
        size = len(value)
        if self.min_items is not None and size < self.min_items:
            errs.append(invalid(shown(path), size, in_body(path, f"should have at least {self.min_items} items")))
        if self.max_items is not None and size > self.max_items:
            errs.append(too_many(shown(path), size, self.max_items))
        if self.unique and len({canonical(v) for v in value}) != size:
            errs.append(invalid(shown(path), "", in_body(path, "shouldn't contain duplicates")))
        if self.list_type in ("set", "map") and size > 1 and not self._list_ok(value):
            errs.append(LIST_PROBLEM)  # the list-type walk words it, with field.Path's spelling
        for check in self.common:
            check(value, path, errs)

    def _list_ok(self, value: list[Any]) -> bool:
        """No duplicate in a set list, no duplicate key (nor non-object item) in a map list."""
        if self.list_type == "set":
            return len({canonical(v) for v in value}) == len(value)
        keys = self.map_keys
        seen = set()
        for item in value:
            if type(item) is not dict:
                return False
            seen.add(tuple(canonical(item[k]) if k in item else NO_KEY for k in keys))
        return len(seen) == len(value)

    def _check_object(self, value: Obj, path: str, errs: Causes, old: Any = NO_OLD) -> None:
        if self.object_rules:
            self._object_rules(value, path, errs)
        if old is not NO_OLD:
            self._check_fields_ratcheting(value, path, errs, old)
        else:
            self._check_fields(value, path, errs)
        if self.required:
            for k in self.required:
                if k not in value:
                    errs.append(required(f"{path}.{k}".lstrip(".")))

    def _object_rules(self, value: Obj, path: str, errs: Causes) -> None:
        """minProperties, maxProperties, enum and junctors, ``additionalProperties: false``."""
        size = len(value)
        if self.min_props is not None and size < self.min_props:
            errs.append(invalid(shown(path), size,
                                in_body(path, f"should have at least {self.min_props} properties")))
        if self.max_props is not None and size > self.max_props:
            errs.append(too_many(shown(path), size, self.max_props))
        for check in self.common:
            check(value, path, errs)
        props = self.props
        if self.additional_false:
            for k in value:
                if props is None or k not in props:
                    errs.append(invalid(shown(path), k, f"{path}.{k} in body is a forbidden property"))

    def _check_fields(self, value: Obj, path: str, errs: Causes) -> None:
        props = self.props
        if self.additional is not None:
            additional = self.additional
            for k, v in value.items():
                if props is None or k not in props:
                    additional.check(v, f"{path}.{k}", errs)
        if props:
            prefix = f"{path}." if path else ""
            for k, v in value.items():
                node = props.get(k)
                if node is None:
                    continue
                t = type(v)
                if t in node.accepts:  # the common case, without the dispatch of ``check``
                    if node.trivial:
                        continue
                    if t is dict:
                        node._check_object(v, prefix + k, errs)
                        continue
                    if t is list:
                        node._check_array(v, prefix + k, errs)
                        continue
                node.check(v, prefix + k, errs)

    def _check_fields_ratcheting(self, value: Obj, path: str, errs: Causes, old: Any) -> None:
        """The fields on the ratcheting pass of an update: each checked against its old value, if any."""
        olds = old if type(old) is dict else {}
        props, additional = self.props, self.additional
        prefix = f"{path}." if path else ""
        for k, v in value.items():
            node = props.get(k) if props is not None else None
            if node is not None:
                node.check(v, prefix + k, errs, olds.get(k, NO_OLD))
            elif additional is not None:
                additional.check(v, f"{path}.{k}", errs, olds.get(k, NO_OLD))

    # -- pruning --
    def prune(self, value: Any, path: str, removed: list[str]) -> None:
        """Drop the fields the schema does not know, recording their paths (Kubernetes' PruneWithOptions)."""
        if self.preserve:
            self._skip_prune(value, path, removed)
            return
        t = type(value)
        if t is dict:
            props, additional = self.props, self.additional
            prefix = f"{path}." if path else ""
            unknown = value.keys() - self.prop_keys if not self.has_additional else ()
            for k in unknown:
                if self.resource_root and k in META_FIELDS:
                    continue
                removed.append(prefix + k)
                del value[k]
            for k, v in value.items():
                if type(v) is dict or type(v) is list:
                    if self.resource_root and k in META_FIELDS:
                        continue  # a resource's apiVersion, kind and metadata are never pruned here
                    node = props.get(k) if props is not None else None
                    if node is not None:
                        node.prune(v, prefix + k, removed)
                    elif self.has_additional:
                        _prune_with(additional, v, prefix + k, removed)
        elif t is list:
            items = self.items
            for i, v in enumerate(value):
                if type(v) is dict or type(v) is list:
                    _prune_with(items, v, f"{path}[{i}]", removed)

    def _skip_prune(self, value: Any, path: str, removed: list[str]) -> None:
        t = type(value)
        if t is dict:
            props = self.props
            prefix = f"{path}." if path else ""
            for k, v in value.items():
                if self.resource_root and k in META_FIELDS:
                    continue
                if type(v) is not dict and type(v) is not list:
                    continue
                node = props.get(k) if props is not None else None
                if node is not None:
                    node.prune(v, prefix + k, removed)
                elif self.has_additional:
                    _prune_with(self.additional, v, prefix + k, removed)
        elif t is list and self.items is not None:
            for i, v in enumerate(value):
                self.items._skip_prune(v, f"{path}[{i}]", removed)

    # -- defaulting --
    def apply_defaults(self, value: Any) -> None:
        """Kubernetes' PruneNonNullableNullsWithoutDefaults then Default, in one walk."""
        t = type(value)
        if t is dict:
            props, additional = self.props, self.additional
            if None in value.values():
                for k in [k for k, v in value.items() if v is None]:
                    node = props.get(k) if props is not None else None
                    if node is None:
                        node = additional
                    if node is not None and not node.nullable:
                        if node.default is _MISSING:
                            del value[k]
                        elif node is additional:
                            value[k] = json_copy(node.default)
            for k, node in self.defaulted:
                if k not in value or (value[k] is None and not node.nullable):
                    value[k] = json_copy(node.default)
            for k, v in value.items():
                if type(v) is dict or type(v) is list:
                    node = props.get(k) if props is not None else None
                    if node is None:
                        node = additional
                    if node is not None:
                        node.apply_defaults(v)
        elif t is list:
            items = self.items
            if items is None:
                return
            for i, v in enumerate(value):
                if v is None and not items.nullable and items.default is not _MISSING:
                    value[i] = v = json_copy(items.default)
                if type(v) is dict or type(v) is list:
                    items.apply_defaults(v)

    # -- list types and embedded resources (field.Path spelling) --
    def check_lists(self, value: Any, path: str, errs: Causes) -> None:
        t = type(value)
        if t is dict:
            props, additional = self.props, self.additional
            for k, v in value.items():
                node = props.get(k) if props is not None else None
                if node is not None:
                    if node.lists_below or node.list_type in ("set", "map"):
                        node.check_lists(v, child(path, k), errs)
                elif additional is not None and (additional.lists_below or additional.list_type):
                    additional.check_lists(v, key(path, k), errs)
        elif t is list:
            if self.list_type == "set":
                for i in duplicates([canonical(x) for x in value]):
                    errs.append(duplicate(key(path, str(i)), value[i]))
            elif self.list_type == "map":
                errs.extend(check_list_map(self.map_keys, value, path))
            items = self.items
            if items is not None and items.lists_below:
                for i, v in enumerate(value):
                    items.check_lists(v, key(path, str(i)), errs)

    def check_embedded(self, value: Any, path: str, errs: Causes) -> None:
        t = type(value)
        if t is dict:
            if self.embedded:
                errs.extend(check_embedded_resource(value, path))
            props, additional = self.props, self.additional
            for k, v in value.items():
                node = props.get(k) if props is not None else None
                if node is not None:
                    if node.embedded or node.embedded_below:
                        node.check_embedded(v, child(path, k), errs)
                elif additional is not None and (additional.embedded or additional.embedded_below):
                    additional.check_embedded(v, key(path, k), errs)
        elif t is list and self.items is not None and (self.items.embedded or self.items.embedded_below):
            for i, v in enumerate(value):
                self.items.check_embedded(v, key(path, str(i)), errs)

    # -- CEL --
    def check_rules(self, value: Any, old: Any, path: str, errs: Causes, anchor: tuple[Any, Any] | None = None
                    ) -> None:
        """The CEL rules of this node and below. ``old`` is the correlated old value (None when there is none);
        ``anchor`` is the nearest (old, new) pair that did correlate, which decides, as Kubernetes' ratcheting
        does, whether a failing rule that does not use oldSelf is an error (the value changed) or is let pass."""
        if value is None:
            return
        if old is not None:
            anchor = (old, value)
        if self.rules:
            self._run_rules(value, old, path, errs, anchor)
        t = type(value)
        if t is dict:
            props, additional = self.props, self.additional
            old_map = old if type(old) is dict else None
            for k, v in value.items():
                node = props.get(k) if props is not None else None
                if node is not None:
                    if node.rules_below:
                        node.check_rules(v, old_map.get(k) if old_map is not None else None, child(path, k), errs,
                                         anchor)
                elif additional is not None and additional.rules_below:
                    additional.check_rules(v, old_map.get(k) if old_map is not None else None, key(path, k), errs,
                                           anchor)
        elif t is list and self.items is not None and self.items.rules_below:
            items = self.items
            correlate = map_list_correlation(self, old)
            for i, v in enumerate(value):
                items.check_rules(v, correlate(v), key(path, str(i)), errs, anchor)

    def _run_rules(self, value: Any, old: Any, path: str, errs: Causes, anchor: tuple[Any, Any] | None
                   ) -> None:
        shown_type = self.type
        convert = self.convert
        fields = self.rule_fields
        if fields is not None and type(value) is dict:
            value = {k: value[k] for k in fields if k in value}
            if type(old) is dict:
                old = {k: old[k] for k in fields if k in old}
        self_value = convert(value) if convert is not None else value
        old_value: Any = None
        if old is not None:
            old_value = convert(old) if convert is not None else old
        where = shown(path)
        together_passed = self.together_program is not None and \
            run(self.together_program, {"self": self_value}).value is True
        for rule in self.rules:
            if together_passed and rule.program is not None and not rule.uses_old_self:
                continue
            if rule.error is not None:
                errs.append(invalid(where, shown_type, f"rule compile error: {rule.error}"))
                continue
            if rule.program is None:
                continue
            optional = rule.optional_old_self and rule.uses_old_self
            if rule.uses_old_self and old is None and not optional:
                continue
            outcome = run(rule.program, celrules.bindings(self_value, old_value, optional,
                                                                   old is not None))
            if outcome.error is not None:
                if outcome.error.startswith("no such overload"):
                    detail = (f"'{outcome.error}': call arguments did not match a supported operator, function or "
                              f"macro signature for rule: {rule.error_string}")
                else:
                    detail = f"{outcome.error} evaluating rule: {rule.error_string}"
                errs.append(invalid(where, shown_type, detail))
                continue
            if outcome.value is True:
                continue
            if not rule.uses_old_self and anchor is not None and anchor[0] == anchor[1]:
                continue  # unchanged since the old object: Kubernetes ratchets it (a warning, not an error)
            target = child(path, rule.field_path) if rule.field_path else path
            detail = self._rule_message(rule, self_value, old_value, old is not None)
            errs.append(rule_error(shown(target), shown_type, detail, rule.reason))

    @staticmethod
    def _rule_message(rule: Rule, self_value: Any, old_value: Any, has_old: bool) -> str:
        if rule.message_program is not None:
            outcome = run(rule.message_program, celrules.bindings(self_value, old_value, False, has_old))
            text = outcome.value.strip() if isinstance(outcome.value, str) else ""
            if outcome.error is None and text and "\n" not in text and len(text) <= 5 * 1024:
                return text
        return rule.message.strip() if rule.message else f"failed rule: {rule.error_string}"


def _prune_with(node: Node | None, value: Any, path: str, removed: list[str]) -> None:
    """Prune under a schema that may be absent (``additionalProperties: true``, an array without items): without
    one, every field of an object below is unknown."""
    if node is not None:
        node.prune(value, path, removed)
        return
    if type(value) is dict:
        for k in list(value):
            removed.append(f"{path}.{k}")
            del value[k]
    elif type(value) is list:
        for i, v in enumerate(value):
            _prune_with(None, v, f"{path}[{i}]", removed)


def _is_int_or_string_any_of(raw: Any) -> bool:
    return isinstance(raw, list) and len(raw) == 2 and raw[0] == {"type": "integer"} and raw[1] == {"type": "string"}


# -- the whole schema ----------------------------------------------------------------------------------------
@dataclass
class CompiledSchema:
    """A CRD version's ``openAPIV3Schema``, compiled once; see the package docstring for the contract."""

    root: Node

    @classmethod
    def from_openapi(cls, schema: Obj | None) -> CompiledSchema:
        return cls(Node(schema if isinstance(schema, dict) else {}, resource_root=True))

    def prune(self, obj: Obj) -> list[str]:
        """Remove unknown fields in place; their paths, sorted (``spec.foo``, ``spec.items[0].bar``)."""
        removed: list[str] = []
        self.root.prune(obj, "", removed)
        removed.sort()
        return removed

    def default(self, obj: Obj) -> None:
        """Apply the schema's defaults in place (dropping nulls of non-nullable fields without one first)."""
        self.root.apply_defaults(obj)

    def validate(self, obj: Obj, old: Obj | None = None) -> Causes:
        """The schema's verdict: OpenAPI validation, embedded resources, list types, then the CEL rules (run
        only when nothing blocking was found; transition rules only with ``old``)."""
        errs: Causes = []
        root = self.root
        root.check(obj, "", errs)
        list_problem = LIST_PROBLEM in errs
        if errs and old is not None:
            errs = []
            root.check(obj, "", errs, old)
        if list_problem:
            errs = [e for e in errs if e is not LIST_PROBLEM]
        if root.embedded_below:
            root.check_embedded(obj, "", errs)
        if list_problem:
            old_problems: Causes = []
            if old is not None:  # on update, only when the old object had no such problem (as Kubernetes)
                root.check_lists(old, "", old_problems)
            if not old_problems:
                root.check_lists(obj, "", errs)
        if root.rules_below:
            if any(e.reason in _BLOCKING for e in errs):
                errs.append(BLOCKED)
            else:
                root.check_rules(obj, old, "", errs)
        return errs
