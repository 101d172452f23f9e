"""Whether a CRD version's ``openAPIV3Schema`` may be served: structural, within what apiextensions allows, with
defaults that validate and CEL rules that compile (Kubernetes' ValidateCustomResourceDefinitionOpenAPISchema,
ValidateStructural and ValidateDefaults, in their order).

Paths are ``field.Path``'s: ``<path>.properties[spec].type``, ``<path>.items.x-kubernetes-list-type``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, replace
from typing import Any

from minik.api.crdschema.compiled import META_FIELDS, CompiledSchema, Node
from minik.api.crdschema.gofmt import (
    NIL_PATH,
    Raw,
    child,
    forbidden,
    go_quote,
    invalid,
    key,
    not_supported,
    required,
)
from minik.api.crdschema.rules import normalize_field_path
from minik.api.errors import Cause

Obj = dict[str, Any]
Causes = list[Cause]

OPENAPI_TYPES = ["array", "boolean", "integer", "number", "object", "string"]
REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"]
ROOT_FIELDS_WITH_STATUS = ["Description", "Type", "Format", "Title", "Maximum", "ExclusiveMaximum", "Minimum",
                           "ExclusiveMinimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems",
                           "UniqueItems", "MultipleOf", "Required", "Items", "Properties", "ExternalDocs", "Example",
                           "XPreserveUnknownFields", "XValidations"]
_ROOT_KEYS_WITH_STATUS = {"description", "type", "format", "title", "maximum", "exclusiveMaximum", "minimum",
                          "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
                          "uniqueItems", "multipleOf", "required", "items", "properties", "externalDocs", "example",
                          "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations"}
_NEWLINES = re.compile(r"[\n\r]+")


def check_structural(schema: Any, path: str = "spec.validation.openAPIV3Schema",
                     status_subresource: bool = False) -> Causes:
    """Everything Kubernetes refuses in a CRD version's schema, in its order; empty when the schema is fine.
    ``path`` is where the schema sits in the CRD; ``status_subresource`` says the version has a status
    subresource (which restricts the root)."""
    if not isinstance(schema, dict):
        return []
    errs: Causes = []
    parent = path.rsplit(".", 1)[0] if "." in path else ""
    if status_subresource:
        if "type" in schema and schema.get("type") != "object":
            errs.append(invalid(child(parent, "openAPIV3Schema.type"), schema.get("type"),
                                'only "object" is allowed as the type at the root of the schema if the status '
                                "subresource is enabled"))
        elif any(k not in _ROOT_KEYS_WITH_STATUS for k in schema if schema[k] not in (None, False, "", [], {})):
            errs.append(invalid(path, Raw("apiextensions.JSONSchemaProps{...}"),
                                f"only [{' '.join(ROOT_FIELDS_WITH_STATUS)}] fields are allowed at the root of the "
                                "schema if the status subresource is enabled"))
    if schema.get("nullable") is True:
        errs.append(forbidden(child(parent, "openAPIV3Schema.nullable"), "nullable cannot be true at the root"))

    compiled: CompiledSchema | None = None
    structural = _structural(schema, path)
    if structural:
        errs.extend(structural)
    else:
        compiled = CompiledSchema.from_openapi(schema)
        defaults = _defaults(schema, compiled.root, path)
        errs.extend(defaults)
        if defaults:
            compiled = None
    schema_errs, cel_errs = _openapi(schema, path, _Context(is_root=True), compiled.root if compiled else None)
    errs.extend(schema_errs)
    errs.extend(cel_errs)
    return errs


# -- structural (k8s.io/apiextensions-apiserver/pkg/apiserver/schema/validation.go) ---------------------------
ROOT, ITEM, FIELD = "root", "item", "field"
_EMPTY_TYPE = {ROOT: "must not be empty at the root", ITEM: "must not be empty for specified array items",
               FIELD: "must not be empty for specified object fields"}


def _d(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _props(s: Obj) -> dict[str, Obj]:
    props = s.get("properties")
    return {k: v for k, v in props.items() if isinstance(v, dict)} if isinstance(props, dict) else {}


def _structural(schema: Obj, path: str) -> Causes:
    errs = _invariants(schema, ROOT, path) + _completeness(schema, path)
    errs.sort(key=lambda c: f"{c.field}: {c.message}")
    return errs


def _is_int_or_string_any_of(any_of: Any) -> bool:
    return isinstance(any_of, list) and len(any_of) == 2 and \
        any_of[0] == {"type": "integer"} and any_of[1] == {"type": "string"}


def _invariants(s: Obj, level: str, path: str) -> Causes:
    errs: Causes = []
    t = s.get("type") if isinstance(s.get("type"), str) else ""
    items = s.get("items")
    if t == "array" and items is None:
        errs.append(required(child(path, "items"), "must be specified"))
    if isinstance(items, dict):
        errs += _invariants(items, ITEM, child(path, "items"))
    for k, v in _props(s).items():
        errs += _invariants(v, FIELD, key(child(path, "properties"), k))
    additional = s.get("additionalProperties")
    if additional is not None and additional is not True:
        if level == ROOT:
            errs.append(forbidden(child(path, "additionalProperties"), "must not be used at the root"))
        if isinstance(additional, dict):
            errs += _invariants(additional, FIELD, child(path, "additionalProperties"))
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = s.get("x-kubernetes-embedded-resource") is True
    if int_or_string and preserve:
        errs.append(invalid(child(path, "x-kubernetes-preserve-unknown-fields"), True,
                            "must be false if x-kubernetes-int-or-string is true"))
    if int_or_string and embedded:
        errs.append(invalid(child(path, "x-kubernetes-embedded-resource"), True,
                            "must be false if x-kubernetes-int-or-string is true"))
    skip_any_of = _is_int_or_string_any_of(s.get("anyOf"))
    all_of = s.get("allOf")
    skip_first_all_of = isinstance(all_of, list) and bool(all_of) and \
        _is_int_or_string_any_of(_d(all_of[0]).get("anyOf"))
    errs += _value_validation(s, skip_any_of, skip_first_all_of, path)
    check_metadata = level == ROOT or embedded
    if embedded and t != "object":
        if not t:
            errs.append(required(child(path, "type"), "must be object if x-kubernetes-embedded-resource is true"))
        else:
            errs.append(invalid(child(path, "type"), t, "must be object if x-kubernetes-embedded-resource is true"))
    elif not t and not int_or_string and not preserve:
        errs.append(required(child(path, "type"), _EMPTY_TYPE[level]))
    if embedded and additional is not None:
        errs.append(forbidden(child(path, "additionalProperties"),
                              "must not be used if x-kubernetes-embedded-resource is set"))
    if level == ROOT and t and t != "object":
        errs.append(invalid(child(path, "type"), t, "must be object at the root"))
    props = _props(s)
    for name in ("kind", "apiVersion"):
        if name in props and check_metadata and props[name].get("type") != "string":
            errs.append(invalid(child(key(child(path, "properties"), name), "type"), props[name].get("type") or "",
                                "must be string"))
    if "metadata" in props:
        errs += _metadata_invariants(props["metadata"], check_metadata, level,
                                     key(child(path, "properties"), "metadata"))
    if embedded and not preserve and not props:
        errs.append(required(child(path, "properties"), "must not be empty if x-kubernetes-embedded-resource is true "
                                                        "without x-kubernetes-preserve-unknown-fields"))
    return errs


def _metadata_invariants(s: Obj, check_metadata: bool, level: str, path: str) -> Causes:
    errs: Causes = []
    if check_metadata and s.get("type") != "object":
        errs.append(invalid(child(path, "type"), s.get("type") or "", "must be object"))
    if level == ROOT:
        props = _props(s)
        only_names = bool(props) and set(props) <= {"name", "generateName"}
        rest = {k for k, v in s.items() if k not in ("type", "default") and v not in (None, False, "", [], {})}
        if only_names:
            rest.discard("properties")
        if rest:
            errs.append(forbidden(path, "must not specify anything other than name and generateName, but metadata "
                                        "is implicitly specified"))
    return errs


_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
)
_NESTED_FORBIDDEN_FLAGS = (
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
)


def _value_validation(s: Obj, skip_any_of: bool, skip_first_all_of_any_of: bool, path: str) -> Causes:
    errs: Causes = []
    any_of = s.get("anyOf")
    if not skip_any_of and isinstance(any_of, list):
        for i, v in enumerate(any_of):
            errs += _nested(_d(v), False, key(child(path, "anyOf"), str(i)))
    all_of = s.get("allOf")
    if isinstance(all_of, list):
        for i, v in enumerate(all_of):
            errs += _nested(_d(v), skip_first_all_of_any_of and i == 0, key(child(path, "allOf"), str(i)))
    one_of = s.get("oneOf")
    if isinstance(one_of, list):
        for i, v in enumerate(one_of):
            errs += _nested(_d(v), False, key(child(path, "oneOf"), str(i)))
    if isinstance(s.get("not"), dict):
        errs += _nested(s["not"], False, child(path, "not"))
    pattern = s.get("pattern")
    if isinstance(pattern, str) and pattern:
        try:
            re.compile(pattern)
        except re.error as exc:
            errs.append(invalid(child(path, "pattern"), pattern,
                                f"must be a valid regular expression, but isn't: error parsing regexp: {exc}"))
    return errs


def _nested(v: Obj, skip_any_of: bool, path: str) -> Causes:
    errs = _value_validation(v, skip_any_of, False, path)
    if isinstance(v.get("items"), dict):
        errs += _nested(v["items"], False, child(path, "items"))
    for k, p in _props(v).items():
        errs += _nested(p, False, key(child(path, "properties"), k))
    for name, detail in _NESTED_FORBIDDEN:
        if v.get(name) not in (None, ""):
            errs.append(forbidden(child(path, name), detail))
    if v.get("additionalProperties") is not None:
        errs.append(forbidden(child(path, "additionalProperties"), "must be undefined to be structural"))
    for name, detail in _NESTED_FORBIDDEN_FLAGS:
        if v.get(name) is True:
            errs.append(forbidden(child(path, name), detail))
    if v.get("x-kubernetes-list-map-keys"):
        errs.append(forbidden(child(path, "x-kubernetes-list-map-keys"), "must be empty to be structural"))
    if v.get("x-kubernetes-list-type") is not None:
        errs.append(forbidden(child(path, "x-kubernetes-list-type"), "must be undefined to be structural"))
    if v.get("x-kubernetes-map-type") is not None:
        errs.append(forbidden(child(path, "x-kubernetes-map-type"), "must be undefined to be structural"))
    if v.get("x-kubernetes-validations"):
        errs.append(forbidden(child(path, "x-kubernetes-validations"), "must be empty to be structural"))
    if "metadata" in _props(v):
        errs.append(forbidden(key(child(path, "properties"), "metadata"), "must not be specified in a nested context"))
    return errs


def _completeness(s: Obj, path: str) -> Causes:
    return _value_completeness(s, s, path, path)


def _value_completeness(v: Obj, s: Obj | None, s_path: str, v_path: str) -> Causes:
    errs: Causes = []
    for name in ("allOf", "anyOf", "oneOf"):
        branches = v.get(name)
        if isinstance(branches, list):
            for i, branch in enumerate(branches):
                errs += _nested_completeness(_d(branch), s, s_path, key(child(v_path, name), str(i)))
    if isinstance(v.get("not"), dict):
        errs += _nested_completeness(v["not"], s, s_path, child(v_path, "not"))
    return errs


def _nested_completeness(v: Obj, s: Obj | None, s_path: str, v_path: str) -> Causes:
    if s is None:
        return [required(s_path, f"because it is defined in {v_path}")]
    errs = _value_completeness(v, s, s_path, v_path)
    if isinstance(v.get("items"), dict):
        items = s.get("items")
        errs += _nested_completeness(v["items"], items if isinstance(items, dict) else None, child(s_path, "items"),
                                     child(v_path, "items"))
    s_props = _props(s)
    for k, p in _props(v).items():
        s_path_k = key(child(s_path, "properties"), k)
        v_path_k = key(child(v_path, "properties"), k)
        if k not in s_props:
            errs.append(required(s_path_k, f"because it is defined in {v_path_k}"))
        else:
            errs += _nested_completeness(p, s_props[k], s_path_k, v_path_k)
    return errs


# -- defaults (k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting/validation.go) ------------------
def _rebase(cause: Cause, base: str) -> Cause:
    """A cause found in a default value, moved under ``<base>`` (``<nil>`` is the value itself)."""
    if cause.field in ("", NIL_PATH):
        return replace(cause, field=base)
    return replace(cause, field=base + cause.field if cause.field.startswith("[") else f"{base}.{cause.field}")


def _defaults(s: Obj, node: Node, path: str, inside_meta: bool = False, root: bool = True) -> Causes:
    errs: Causes = []
    if node.embedded:
        inside_meta = False
    if "default" in s and not inside_meta:
        value = s["default"]
        where = child(path, "default")
        if isinstance(value, (dict, list)):
            removed: list[str] = []
            node.prune(copy.deepcopy(value), "", removed)
            if removed:
                errs.append(invalid(where, value, "must not have unknown fields"))
        found: Causes = []
        node.check(value, "", found)
        if not found and (node.embedded or node.embedded_below):
            node.check_embedded(value, "", found)
        if not found and node.rules_below:
            node.check_rules(value, value, "", found)
        errs.extend(_rebase(c, where) for c in found)
    if node.items is not None and isinstance(s.get("items"), dict):
        errs += _defaults(s["items"], node.items, child(path, "items"), inside_meta, False)
    props = _props(s)
    for k, p in props.items():
        sub = node.props.get(k) if node.props else None
        if sub is None:
            continue
        sub_meta = inside_meta or ((root or node.embedded) and k in META_FIELDS)
        errs += _defaults(p, sub, key(child(path, "properties"), k), sub_meta, False)
    return errs


# -- what apiextensions allows (ValidateCustomResourceDefinitionOpenAPISchema) ----------------------------------
@dataclass(frozen=True)
class _Context:
    is_root: bool = False
    allow_defaults: bool = True
    defaults_reason: str = ""
    inside_meta: bool = False
    #: the first ancestor whose old and new values cannot be correlated (oldSelf is refused below it)
    uncorrelatable: str | None = None

    def without_defaults(self, reason: str) -> _Context:
        return replace(self, allow_defaults=False, defaults_reason=reason)

    def uncorrelated(self, path: str) -> _Context:
        return self if self.uncorrelatable is not None else replace(self, uncorrelatable=path)


def _openapi(s: Obj, path: str, ctx: _Context, node: Node | None) -> tuple[Causes, Causes]:
    schema_errs: Causes = _standard(s, path, ctx)
    cel_errs: Causes = []

    def add(result: tuple[Causes, Causes]) -> None:
        schema_errs.extend(result[0])
        cel_errs.extend(result[1])

    if s.get("uniqueItems") is True:
        schema_errs.append(forbidden(child(path, "uniqueItems"),
                                     "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
    additional = s.get("additionalProperties")
    props = _props(s)
    t = s.get("type") if isinstance(s.get("type"), str) else ""
    if additional is not None:
        if props and (additional is False or isinstance(additional, dict)):
            schema_errs.append(forbidden(child(path, "additionalProperties"),
                                         "additionalProperties and properties are mutual exclusive"))
        if isinstance(additional, dict):
            sub = ctx.without_defaults("inside additionalProperties applying to object metadata") \
                if ctx.inside_meta else ctx
            add(_openapi(additional, child(path, "additionalProperties"), replace(sub, is_root=False),
                         node.additional if node is not None else None))
    map_type = s.get("x-kubernetes-map-type")
    for k, p in props.items():
        sub = replace(ctx, is_root=False)
        if map_type not in (None, "granular", "atomic"):
            sub = sub.uncorrelated(path)
        if (ctx.is_root or s.get("x-kubernetes-embedded-resource") is True) and k in META_FIELDS:
            sub = replace(sub, inside_meta=True)
            if ctx.is_root:
                sub = sub.without_defaults(f"in top-level {k}")
        add(_openapi(p, key(child(path, "properties"), k), sub,
                     node.props.get(k) if node is not None and node.props else None))
    plain = replace(ctx, is_root=False)
    if isinstance(s.get("not"), dict):
        add(_openapi(s["not"], child(path, "not"), plain, None))
    for name in ("allOf", "oneOf", "anyOf"):
        branches = s.get(name)
        if isinstance(branches, list):
            for i, b in enumerate(branches):
                if isinstance(b, dict):
                    add(_openapi(b, key(child(path, name), str(i)), plain, None))
    definitions = s.get("definitions")
    if isinstance(definitions, dict):
        for k, d in definitions.items():
            if isinstance(d, dict):
                add(_openapi(d, key(child(path, "definitions"), k), plain, None))
    items = s.get("items")
    list_type = s.get("x-kubernetes-list-type")
    if items is not None:
        sub = plain if list_type == "map" else plain.uncorrelated(path)
        if isinstance(items, dict):
            add(_openapi(items, child(path, "items"), sub, node.items if node is not None else None))
        elif isinstance(items, list):
            for i, item in enumerate(items):
                if isinstance(item, dict):
                    add(_openapi(item, key(child(path, "items"), str(i)), sub, None))
    dependencies = s.get("dependencies")
    if isinstance(dependencies, dict):
        for k, d in dependencies.items():
            if isinstance(d, dict):
                add(_openapi(d, key(child(path, "dependencies"), k), plain, None))

    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        schema_errs.append(invalid(child(path, "x-kubernetes-preserve-unknown-fields"), False,
                                   "must be true or undefined"))
    if map_type is not None and t != "object":
        if not t:
            schema_errs.append(required(child(path, "type"), "must be object if x-kubernetes-map-type is specified"))
        else:
            schema_errs.append(invalid(child(path, "type"), t, "must be object if x-kubernetes-map-type is specified"))
    if map_type is not None and map_type not in ("atomic", "granular"):
        schema_errs.append(not_supported(child(path, "x-kubernetes-map-type"), map_type, ["atomic", "granular"]))
    item_schema = items if isinstance(items, dict) else None
    if list_type is not None and t != "array":
        if not t:
            schema_errs.append(required(child(path, "type"), "must be array if x-kubernetes-list-type is specified"))
        else:
            schema_errs.append(invalid(child(path, "type"), t, "must be array if x-kubernetes-list-type is specified"))
    elif list_type == "set" and item_schema is not None:
        if item_schema.get("type") == "array" and item_schema.get("x-kubernetes-list-type") not in (None, "atomic"):
            schema_errs.append(invalid(child(path, "items.x-kubernetes-list-type"),
                                       item_schema.get("x-kubernetes-list-type"),
                                       "must be atomic as item of a list with x-kubernetes-list-type=set"))
        if item_schema.get("type") == "object" and item_schema.get("x-kubernetes-map-type") != "atomic":
            schema_errs.append(invalid(child(path, "items.x-kubernetes-map-type"),
                                       item_schema.get("x-kubernetes-list-type"),
                                       "must be atomic as item of a list with x-kubernetes-list-type=set"))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        schema_errs.append(not_supported(child(path, "x-kubernetes-list-type"), list_type, ["atomic", "set", "map"]))
    map_keys = s.get("x-kubernetes-list-map-keys")
    map_keys = [k for k in map_keys if isinstance(k, str)] if isinstance(map_keys, list) else []
    if map_keys:
        if list_type is None:
            schema_errs.append(required(child(path, "x-kubernetes-list-type"),
                                        "must be map if x-kubernetes-list-map-keys is non-empty"))
        elif list_type != "map":
            schema_errs.append(invalid(child(path, "x-kubernetes-list-type"), list_type,
                                       "must be map if x-kubernetes-list-map-keys is non-empty"))
    if list_type == "map":
        if not map_keys:
            schema_errs.append(required(child(path, "x-kubernetes-list-map-keys"),
                                        "must not be empty if x-kubernetes-list-type is map"))
        if items is None:
            schema_errs.append(required(child(path, "items"), "must have a schema if x-kubernetes-list-type is map"))
        if isinstance(items, list):
            schema_errs.append(invalid(child(path, "items"), items,
                                       "must only have a single schema if x-kubernetes-list-type is map"))
        if item_schema is not None and item_schema.get("type") != "object":
            schema_errs.append(invalid(child(path, "items.type"), item_schema.get("type") or "",
                                       "must be object if parent array's x-kubernetes-list-type is map"))
        if item_schema is not None and item_schema.get("type") == "object":
            item_props = _props(item_schema)
            seen: set[str] = set()
            shown_keys = Raw("[]string{" + ", ".join(go_quote(k) for k in map_keys) + "}")
            for k in map_keys:
                if k in item_props:
                    if item_props[k].get("type") in ("array", "object"):
                        schema_errs.append(invalid(child(key(child(path, "items.properties"), k), "type"), "object",
                                                   "must be a scalar type if parent array's x-kubernetes-list-type "
                                                   "is map"))
                else:
                    schema_errs.append(invalid(child(path, "x-kubernetes-list-map-keys"), shown_keys,
                                               "entries must all be names of item properties"))
                if k in seen:
                    schema_errs.append(invalid(child(path, "x-kubernetes-list-map-keys"), shown_keys,
                                               "must not contain duplicate entries"))
                seen.add(k)
    schema_errs.extend(_map_list_keys_map_set(s, path))
    rules = s.get("x-kubernetes-validations")
    if isinstance(rules, list) and rules:
        schema_errs.extend(_rule_fields(rules, s, path))
        if not schema_errs and node is not None:
            cel_errs.extend(_rule_compilation(rules, node, path, ctx))
    return schema_errs, cel_errs


def _map_list_keys_map_set(s: Obj, path: str) -> Causes:
    items, list_type = s.get("items"), s.get("x-kubernetes-list-type")
    if not isinstance(items, dict) or list_type not in ("set", "map"):
        return []
    errs: Causes = []
    if items.get("nullable") is True:
        errs.append(forbidden(child(path, "items.nullable"), f"cannot be nullable when x-kubernetes-list-type is "
                                                             f"{list_type}"))
    if list_type == "map":
        req = set(items.get("required") or []) if isinstance(items.get("required"), list) else set()
        props = _props(items)
        keys = s.get("x-kubernetes-list-map-keys")
        for k in keys if isinstance(keys, list) else []:
            if not isinstance(k, str) or k not in props:
                continue
            if k not in req and "default" not in props[k]:
                errs.append(required(child(key(child(path, "items.properties"), k), "default"),
                                     "this property is in x-kubernetes-list-map-keys, so it must have a default or be "
                                     "a required property"))
            if props[k].get("nullable") is True:
                errs.append(forbidden(child(key(child(path, "items.properties"), k), "nullable"),
                                      "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
    return errs


def _standard(s: Obj, path: str, ctx: _Context) -> Causes:
    """specStandardValidatorV3: what OpenAPI v3 allows that apiextensions does not."""
    errs: Causes = []
    t = s.get("type")
    if isinstance(t, str) and t and t not in OPENAPI_TYPES:
        errs.append(not_supported(child(path, "type"), t, OPENAPI_TYPES))
    if "default" in s and not ctx.allow_defaults:
        detail = "must not be set" + (f" {ctx.defaults_reason}" if ctx.defaults_reason else "")
        errs.append(forbidden(child(path, "default"), detail))
    if s.get("id"):
        errs.append(forbidden(child(path, "id"), "id is not supported"))
    if s.get("additionalItems") is not None:
        errs.append(forbidden(child(path, "additionalItems"), "additionalItems is not supported"))
    if s.get("patternProperties"):
        errs.append(forbidden(child(path, "patternProperties"), "patternProperties is not supported"))
    if s.get("definitions"):
        errs.append(forbidden(child(path, "definitions"), "definitions is not supported"))
    if s.get("dependencies") is not None:
        errs.append(forbidden(child(path, "dependencies"), "dependencies is not supported"))
    if s.get("$ref") is not None:
        errs.append(forbidden(child(path, "$ref"), "$ref is not supported"))
    if t == "null":
        errs.append(forbidden(child(path, "type"), "type cannot be set to null, use nullable as an alternative"))
    if isinstance(s.get("items"), list) and s["items"]:
        errs.append(forbidden(child(path, "items"), "items must be a schema object and not an array"))
    if ctx.inside_meta and s.get("x-kubernetes-embedded-resource") is True:
        errs.append(forbidden(child(path, "x-kubernetes-embedded-resource"), "must not be used inside of resource meta"))
    return errs


def _rule_fields(rules: list[Any], s: Obj, path: str) -> Causes:
    errs: Causes = []
    for i, rule in enumerate(rules):
        rule = _d(rule)
        at = key(child(path, "x-kubernetes-validations"), str(i))
        text, message = str(rule.get("rule") or ""), rule.get("message")
        message = message if isinstance(message, str) else ""
        expression = rule.get("messageExpression")
        expression = expression if isinstance(expression, str) else ""
        if not text.strip():
            errs.append(required(child(at, "rule"), "rule is not specified"))
        elif message and not message.strip():
            errs.append(invalid(child(at, "message"), message, "message must be non-empty if specified"))
        elif _NEWLINES.search(message.strip()):
            errs.append(invalid(child(at, "message"), message, "message must not contain line breaks"))
        elif _NEWLINES.search(text.strip()) and not message.strip():
            errs.append(required(child(at, "message"), "message must be specified if rule contains line breaks"))
        if expression and not expression.strip():
            errs.append(required(child(at, "messageExpression"), "messageExpression must be non-empty if specified"))
        reason = rule.get("reason")
        if reason is not None and reason not in REASONS:
            errs.append(not_supported(child(at, "reason"), reason, REASONS))
        field_path = rule.get("fieldPath")
        if isinstance(field_path, str) and field_path:
            if not field_path.strip():
                errs.append(invalid(child(at, "fieldPath"), field_path, "fieldPath must be non-empty if specified"))
            if _NEWLINES.search(field_path):
                errs.append(invalid(child(at, "fieldPath"), field_path, "fieldPath must not contain line breaks"))
            if not _field_path_valid(s, field_path):
                errs.append(invalid(child(at, "fieldPath"), field_path, "fieldPath must be a valid path"))
    return errs


_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\['((?:\\.|[^'\\])*)'\]")


def _field_path_valid(s: Obj, text: str) -> bool:
    """Kubernetes' ValidFieldPath: field and map accessors, each naming a property (or any key of a map)."""
    if normalize_field_path(text) is None:
        return False
    node, pos = s, 0
    text = text.strip()
    while pos < len(text):
        m = _PATH_TOKEN.match(text, pos)
        if m is None:
            return False
        name = m.group(1) if m.group(1) is not None else m.group(2)
        props = _props(node)
        if props:
            if name not in props:
                return False
            node = props[name]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return False
        pos = m.end()
    return True


def _go_rule(rule: Obj) -> Raw:
    """A ValidationRule as Go's ``%#v`` prints it in Kubernetes' messages."""
    def pointer(name: str, go_type: str) -> str:
        return f"(*{go_type})(nil)" if rule.get(name) is None else f"(*{go_type})(0xc000000000)"

    return Raw(f"apiextensions.ValidationRule{{Rule:{go_quote(str(rule.get('rule') or ''))}, "
               f"Message:{go_quote(str(rule.get('message') or ''))}, "
               f"MessageExpression:{go_quote(str(rule.get('messageExpression') or ''))}, "
               f"Reason:{pointer('reason', 'apiextensions.FieldValueErrorReason')}, "
               f"FieldPath:{go_quote(str(rule.get('fieldPath') or ''))}, "
               f"OptionalOldSelf:{pointer('optionalOldSelf', 'bool')}}}")


def _rule_compilation(rules: list[Any], node: Node, path: str, ctx: _Context) -> Causes:
    errs: Causes = []
    for i, (raw, compiled) in enumerate(zip(rules, node.rules)):
        raw = _d(raw)
        at = key(child(path, "x-kubernetes-validations"), str(i))
        if compiled.error is not None:
            errs.append(invalid(child(at, "rule"), _go_rule(raw), compiled.error))
        if compiled.message_error is not None:
            errs.append(invalid(child(at, "messageExpression"), _go_rule(raw), compiled.message_error))
        if compiled.uses_old_self:
            if ctx.uncorrelatable is not None:
                errs.append(invalid(child(at, "rule"), compiled.source, "oldSelf cannot be used on the uncorrelatable "
                                                                        f"portion of the schema within "
                                                                        f"{ctx.uncorrelatable}"))
        elif raw.get("optionalOldSelf") is not None:
            errs.append(invalid(child(at, "optionalOldSelf"), raw.get("optionalOldSelf"),
                                "may not be set if oldSelf is not used in rule"))
    return errs
