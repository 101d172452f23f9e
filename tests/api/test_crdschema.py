"""The CRD structural-schema engine: refusals of non-structural schemas, pruning, defaulting, OpenAPI validation
and CEL rules, with Kubernetes 1.32's messages and field paths."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minik.api.crdschema import CompiledSchema, check_structural

P = "spec.versions[0].schema.openAPIV3Schema"


def obj_schema(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}


def lines(causes: list[Any]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def cr(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


def validate(schema: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return lines(CompiledSchema.from_openapi(schema).validate(obj, old))


# -- refusals --------------------------------------------------------------------------------------------------
def test_a_field_without_type_is_not_structural() -> None:
    schema = {"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}
    assert lines(check_structural(schema, P)) == [
        f"{P}.properties[spec].type: Required value: must not be empty for specified object fields"]


def test_ref_and_additional_properties_beside_properties_are_forbidden() -> None:
    schema = obj_schema(a={"type": "object", "$ref": "#/definitions/x", "properties": {"b": {"type": "string"}},
                           "additionalProperties": {"type": "string"}})
    assert lines(check_structural(schema, P)) == [
        f"{P}.properties[spec].properties[a].$ref: Forbidden: $ref is not supported",
        f"{P}.properties[spec].properties[a].additionalProperties: Forbidden: additionalProperties and properties are "
        "mutual exclusive"]


def test_metadata_may_only_restrict_name_and_generate_name() -> None:
    ok = {"type": "object", "properties": {"metadata": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 10}}}}}
    assert check_structural(ok, P) == []
    bad = {"type": "object", "properties": {"metadata": {"type": "object", "properties": {
        "labels": {"type": "object"}}}}}
    assert lines(check_structural(bad, P)) == [
        f"{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but "
        "metadata is implicitly specified"]


def test_int_or_string_must_not_preserve_unknown_fields() -> None:
    schema = obj_schema(port={"x-kubernetes-int-or-string": True, "x-kubernetes-preserve-unknown-fields": True})
    assert f"{P}.properties[spec].properties[port].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be " \
           "false if x-kubernetes-int-or-string is true" in lines(check_structural(schema, P))


def test_an_int_or_string_any_of_is_structural() -> None:
    schema = obj_schema(port={"x-kubernetes-int-or-string": True,
                              "anyOf": [{"type": "integer"}, {"type": "string"}]})
    assert check_structural(schema, P) == []


def test_types_inside_value_validations_are_not_structural() -> None:
    schema = obj_schema(a={"type": "string", "anyOf": [{"type": "string", "minLength": 1}]})
    assert lines(check_structural(schema, P)) == [
        f"{P}.properties[spec].properties[a].anyOf[0].type: Forbidden: must be empty to be structural"]


def test_list_map_keys_must_name_item_properties_with_defaults_or_required() -> None:
    schema = obj_schema(ports={"type": "array", "x-kubernetes-list-type": "map",
                               "x-kubernetes-list-map-keys": ["name", "zone"],
                               "items": {"type": "object", "properties": {"name": {"type": "string"}}}})
    assert lines(check_structural(schema, P)) == [
        f"{P}.properties[spec].properties[ports].x-kubernetes-list-map-keys: Invalid value: []string{{\"name\", "
        "\"zone\"}: entries must all be names of item properties",
        f"{P}.properties[spec].properties[ports].items.properties[name].default: Required value: this property is in "
        "x-kubernetes-list-map-keys, so it must have a default or be a required property"]


def test_an_unknown_list_type_is_unsupported() -> None:
    schema = obj_schema(tags={"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"})
    assert lines(check_structural(schema, P)) == [
        f'{P}.properties[spec].properties[tags].x-kubernetes-list-type: Unsupported value: "bag": supported values: '
        '"atomic", "set", "map"']


def test_unique_items_is_refused() -> None:
    schema = obj_schema(tags={"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    assert lines(check_structural(schema, P)) == [
        f"{P}.properties[spec].properties[tags].uniqueItems: Forbidden: uniqueItems cannot be set to true since the "
        "runtime complexity becomes quadratic"]


def test_a_default_that_does_not_validate_is_refused() -> None:
    schema = obj_schema(replicas={"type": "integer", "maximum": 5, "default": 7})
    assert lines(check_structural(schema, P)) == [
        f"{P}.properties[spec].properties[replicas].default: Invalid value: 7:  in body should be less than or equal "
        "to 5"]


def test_a_default_with_unknown_fields_is_refused() -> None:
    schema = obj_schema(a={"type": "object", "properties": {"b": {"type": "string"}}, "default": {"c": "x"}})
    assert lines(check_structural(schema, P)) == [
        f'{P}.properties[spec].properties[a].default: Invalid value: map[string]interface {{}}{{"c":"x"}}: must not '
        "have unknown fields"]


def test_defaults_in_top_level_metadata_are_forbidden() -> None:
    schema = {"type": "object", "properties": {"metadata": {"type": "object", "default": {"name": "x"}}}}
    assert f"{P}.properties[metadata].default: Forbidden: must not be set in top-level metadata" in \
        lines(check_structural(schema, P))


def test_cel_rules_that_do_not_compile_are_refused_with_the_compiler_message() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}},
                                                        "x-kubernetes-validations": [{"rule": "self.a +"},
                                                                                     {"rule": "foo == 1"},
                                                                                     {"rule": "1 + 1"}]}}}
    found = lines(check_structural(schema, P))
    rule = (f"{P}.properties[spec].x-kubernetes-validations[%d].rule: Invalid value: apiextensions.ValidationRule"
            '{Rule:"%s", Message:"", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), '
            'FieldPath:"", OptionalOldSelf:(*bool)(nil)}: ')
    assert found[0].startswith(rule % (0, "self.a +") + "compilation failed: ERROR: <input>:1:9: Syntax error:")
    assert found[0].endswith("\n | self.a +\n | ........^")
    assert found[1] == rule % (1, "foo == 1") + ("compilation failed: ERROR: <input>:1:1: undeclared reference to "
                                                 "'foo' (in container '')\n | foo == 1\n | ^")
    assert found[2] == rule % (2, "1 + 1") + "cel expression must evaluate to a bool"


def test_old_self_on_items_of_an_atomic_list_is_refused() -> None:
    schema = obj_schema(items={"type": "array", "items": {"type": "object", "x-kubernetes-validations": [
        {"rule": "self == oldSelf"}]}})
    assert lines(check_structural(schema, P)) == [
        f'{P}.properties[spec].properties[items].items.x-kubernetes-validations[0].rule: Invalid value: "self == '
        f'oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within '
        f"{P}.properties[spec].properties[items]"]


def test_a_rule_reason_must_be_a_known_one() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "true", "reason": "Nope"}]}
    assert lines(check_structural(schema, P)) == [
        f'{P}.x-kubernetes-validations[0].reason: Unsupported value: "Nope": supported values: "FieldValueDuplicate", '
        '"FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"']


# -- pruning -----------------------------------------------------------------------------------------------------
SCHEMA = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
    "size": {"type": "string", "enum": ["a", "b"]},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
              "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
    "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                 "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
}}}}


def test_pruning_removes_unknown_fields_and_reports_their_paths_sorted() -> None:
    obj = cr(replicas=2, foo=1, ports=[{"port": 80, "bar": 1}], labels={"a": "b"},
             extra={"anything": {"goes": 1}, "known": {"a": "x", "nope": 1}},
             template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "y", "z": 1}})
    obj["status"] = {"x": 1}
    assert CompiledSchema.from_openapi(SCHEMA).prune(obj) == [
        "spec.extra.known.nope", "spec.foo", "spec.ports[0].bar", "spec.template.spec.z", "status"]
    assert obj["spec"]["extra"]["anything"] == {"goes": 1}
    assert obj["spec"]["template"]["metadata"] == {"name": "p"}
    assert obj["apiVersion"] == "example.com/v1" and obj["metadata"] == {"name": "w"}


# -- defaulting --------------------------------------------------------------------------------------------------
def test_defaults_fill_missing_fields_and_non_nullable_nulls() -> None:
    compiled = CompiledSchema.from_openapi(SCHEMA)
    obj = cr(size="a")
    compiled.default(obj)
    assert obj["spec"]["replicas"] == 1
    obj = cr(replicas=None)
    compiled.default(obj)
    assert obj["spec"]["replicas"] == 1


def test_nulls_without_default_are_dropped_unless_nullable() -> None:
    schema = obj_schema(a={"type": "string"}, b={"type": "string", "nullable": True})
    obj = cr(a=None, b=None)
    CompiledSchema.from_openapi(schema).default(obj)
    assert obj["spec"] == {"b": None}


def test_defaults_apply_inside_array_items_and_are_copies() -> None:
    schema = obj_schema(ports={"type": "array", "items": {"type": "object", "properties": {
        "protocol": {"type": "string", "default": "TCP"}, "tags": {"type": "array", "items": {"type": "string"},
                                                             "default": ["x"]}}}})
    obj = cr(ports=[{}, {"protocol": "UDP"}])
    CompiledSchema.from_openapi(schema).default(obj)
    assert obj["spec"]["ports"] == [{"protocol": "TCP", "tags": ["x"]}, {"protocol": "UDP", "tags": ["x"]}]
    obj["spec"]["ports"][0]["tags"].append("y")
    assert obj["spec"]["ports"][1]["tags"] == ["x"]


# -- OpenAPI validation ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, expected", [
    ({"replicas": 11}, "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"),
    ({"replicas": -1}, "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"),
    ({"replicas": "x"}, 'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: '
                        '"string"'),
    ({"replicas": 1.5}, 'spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: '
                        '"number"'),
    ({"size": "x"}, 'spec.size: Unsupported value: "x": supported values: "a", "b"'),
    ({"labels": {"k": 1}}, 'spec.labels.k: Invalid value: "integer": spec.labels.k in body must be of type string: '
                           '"integer"'),
    ({"ports": [{"port": "80"}]}, 'spec.ports[0].port: Invalid value: "string": spec.ports[0].port in body must be '
                                  'of type integer: "string"'),
    ({"size": None}, 'spec.size: Invalid value: "null": spec.size in body must be of type string: "null"'),
])
def test_values_against_the_schema_get_kubernetes_messages(spec: dict[str, Any], expected: str) -> None:
    assert expected in validate(SCHEMA, cr(**spec))


def test_a_whole_number_written_as_a_float_is_an_integer() -> None:
    assert validate(SCHEMA, cr(replicas=3.0)) == []


@pytest.mark.parametrize("field, value, expected", [
    ({"type": "string", "maxLength": 3}, "abcd", "spec.f: Too long: may not be more than 3 bytes"),
    ({"type": "string", "minLength": 3}, "ab", 'spec.f: Invalid value: "ab": spec.f in body should be at least 3 chars '
                                              "long"),
    ({"type": "string", "pattern": "^[a-z]+$"}, "A1", "spec.f: Invalid value: \"A1\": spec.f in body should match "
                                                     "'^[a-z]+$'"),
    ({"type": "number", "exclusiveMaximum": True, "maximum": 1.5}, 1.5,
     "spec.f: Invalid value: 1.5: spec.f in body should be less than 1.5"),
    ({"type": "number", "exclusiveMinimum": True, "minimum": 0}, 0,
     "spec.f: Invalid value: 0: spec.f in body should be greater than 0"),
    ({"type": "integer", "multipleOf": 5}, 7, "spec.f: Invalid value: 7: spec.f in body should be a multiple of 5"),
    ({"type": "array", "items": {"type": "string"}, "minItems": 2}, ["a"],
     "spec.f: Invalid value: 1: spec.f in body should have at least 2 items"),
    ({"type": "array", "items": {"type": "string"}, "maxItems": 1}, ["a", "b"],
     "spec.f: Too many: 2: must have at most 1 items"),
    ({"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1}, {},
     "spec.f: Invalid value: 0: spec.f in body should have at least 1 properties"),
    ({"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 1}, {"a": "1", "b": "2"},
     "spec.f: Too many: 2: must have at most 1 items"),
    ({"type": "boolean"}, "yes", 'spec.f: Invalid value: "string": spec.f in body must be of type boolean: "string"'),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, {}, "spec.f.a: Required value"),
    ({"x-kubernetes-int-or-string": True}, [1], 'spec.f: Invalid value: "array": spec.f in body must be of type '
                                                'integer,string: "array"'),
])
def test_value_validations_give_kubernetes_messages(field: dict[str, Any], value: Any, expected: str) -> None:
    assert validate(obj_schema(f=field), cr(f=value)) == [expected]


@pytest.mark.parametrize("fmt, good, bad", [
    ("date-time", "2024-01-02T03:04:05Z", "yesterday"),
    ("date", "2024-01-02", "2024-13-02"),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000", "not-a-uuid"),
    ("email", "a@example.com", "nobody"),
    ("hostname", "example.com", "-bad-"),
    ("ipv4", "10.0.0.1", "10.0.0.300"),
    ("ipv6", "::1", "10.0.0.1"),
    ("cidr", "10.0.0.0/8", "10.0.0.0"),
    ("byte", "aGVsbG8=", "not base64!"),
])
def test_formats_kubernetes_checks(fmt: str, good: str, bad: str) -> None:
    schema = obj_schema(f={"type": "string", "format": fmt})
    assert validate(schema, cr(f=good)) == []
    assert validate(schema, cr(f=bad)) == [
        f'spec.f: Invalid value: "{bad}": spec.f in body must be of type {fmt}: "{bad}"']


def test_int32_and_unknown_formats_are_not_checked_as_kubernetes_drops_them() -> None:
    schema = obj_schema(a={"type": "integer", "format": "int32"}, b={"type": "string", "format": "whatever"})
    assert validate(schema, cr(a=2 ** 40, b="x")) == []


def test_int_or_string_takes_either() -> None:
    schema = obj_schema(port={"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]})
    assert validate(schema, cr(port=80)) == validate(schema, cr(port="http")) == []


def test_an_embedded_resource_needs_api_version_and_kind() -> None:
    assert validate(SCHEMA, cr(template={"spec": {"x": "y"}})) == [
        "spec.template.apiVersion: Required value: must not be empty",
        "spec.template.kind: Required value: must not be empty"]


def test_a_set_list_refuses_duplicates() -> None:
    schema = obj_schema(tags={"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"})
    assert validate(schema, cr(tags=["a", "b", "a"])) == ['spec.tags[2]: Duplicate value: "a"']


def test_a_map_list_refuses_duplicate_keys() -> None:
    schema = obj_schema(ports={"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                               "items": {"type": "object", "required": ["port"],
                                         "properties": {"port": {"type": "integer"}}}})
    assert validate(schema, cr(ports=[{"port": 80}, {"port": 80}])) == [
        'spec.ports[1]: Duplicate value: map[string]interface {}{"port":80}']


def test_additional_properties_false_forbids_every_key() -> None:
    schema = obj_schema(m={"type": "object", "additionalProperties": False})
    assert validate(schema, cr(m={"a": 1})) == ['spec.m: Invalid value: "a": spec.m.a in body is a forbidden property']


# -- CEL -----------------------------------------------------------------------------------------------------------
CEL = {"type": "object", "properties": {"spec": {
    "type": "object",
    "x-kubernetes-validations": [
        {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"},
        {"rule": "self.name.startsWith('web')", "messageExpression": "'name ' + self.name + ' must start with web'"},
        {"rule": "self.replicas >= oldSelf.replicas", "message": "no scaling down", "reason": "FieldValueForbidden",
         "fieldPath": ".replicas"},
    ],
    "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}, "name": {"type": "string"},
                   "ratio": {"type": "number", "x-kubernetes-validations": [{"rule": "self < 1.5"}]},
                   "tags": {"type": "array", "items": {"type": "string"},
                            "x-kubernetes-validations": [{"rule": "self.all(t, t.size() < 4)",
                                                          "message": "short tags only"}]}},
}}}


def test_cel_rules_pass_and_fail_with_their_message() -> None:
    assert validate(CEL, cr(replicas=1, maxReplicas=2, name="web-1")) == []
    assert validate(CEL, cr(replicas=3, maxReplicas=2, name="web-1")) == [
        'spec: Invalid value: "object": replicas must not exceed maxReplicas']


def test_a_message_expression_words_the_failure() -> None:
    assert validate(CEL, cr(replicas=1, maxReplicas=2, name="db")) == [
        'spec: Invalid value: "object": name db must start with web']


def test_a_failed_rule_without_message_names_the_rule() -> None:
    assert sorted(validate(CEL, cr(replicas=1, maxReplicas=2, name="web", tags=["long-tag"], ratio=2))) == [
        'spec.ratio: Invalid value: "number": failed rule: self < 1.5',
        'spec.tags: Invalid value: "array": short tags only']


def test_json_integers_in_number_fields_are_cel_doubles() -> None:
    assert validate(CEL, cr(replicas=1, maxReplicas=2, name="web", ratio=1)) == []


def test_transition_rules_run_only_on_update_with_their_reason_and_field_path() -> None:
    new = cr(replicas=1, maxReplicas=5, name="web")
    assert validate(CEL, new) == []
    assert validate(CEL, new, cr(replicas=3, maxReplicas=5, name="web")) == [
        "spec.replicas: Forbidden: no scaling down"]
    assert validate(CEL, new, cr(replicas=1, maxReplicas=5, name="web")) == []


def test_optional_old_self_rules_run_on_create_too() -> None:
    schema = obj_schema(name={"type": "string", "x-kubernetes-validations": [{
        "rule": "!oldSelf.hasValue() || self == oldSelf.value()", "optionalOldSelf": True,
        "message": "name is immutable"}, {"rule": "oldSelf.hasValue() || self != 'forbidden'", "optionalOldSelf": True,
                                          "message": "not on create"}]})
    assert check_structural(schema, P) == []
    assert validate(schema, cr(name="forbidden")) == ['spec.name: Invalid value: "string": not on create']
    assert validate(schema, cr(name="b"), cr(name="a")) == ['spec.name: Invalid value: "string": name is immutable']


def test_a_runtime_error_in_a_rule_is_a_cause_not_an_exception() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.a / self.b > 0"}, {"rule": "self.missing == 1"}]}}}
    assert validate(schema, cr(a=1, b=0)) == [
        'spec: Invalid value: "object": division by zero evaluating rule: self.a / self.b > 0',
        'spec: Invalid value: "object": no such key: missing evaluating rule: self.missing == 1']


def test_rules_on_map_values_and_map_list_items_see_their_old_values() -> None:
    schema = obj_schema(
        limits={"type": "object", "additionalProperties": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "self >= oldSelf", "message": "may only grow"}]}},
        ports={"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
               "items": {"type": "object", "required": ["name"], "properties": {
                   "name": {"type": "string"}, "port": {"type": "integer"}},
                   "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is fixed"}]}})
    old = cr(limits={"cpu": 2}, ports=[{"name": "http", "port": 80}])
    new = cr(limits={"cpu": 1, "mem": 1}, ports=[{"name": "dns", "port": 53}, {"name": "http", "port": 81}])
    assert validate(schema, new, old) == [
        'spec.limits[cpu]: Invalid value: "integer": may only grow',
        'spec.ports[1]: Invalid value: "object": port is fixed']


def test_cel_rules_are_skipped_when_the_object_has_blocking_errors() -> None:
    assert validate(CEL, cr(replicas="x", maxReplicas=2, name="web")) == [
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct '
        "the existing errors to complete validation"]


def test_kubernetes_list_and_string_functions_are_available() -> None:
    schema = obj_schema(xs={"type": "array", "items": {"type": "integer"}, "x-kubernetes-validations": [
        {"rule": "self.isSorted() && self.sum() == 6 && self.max() == 3 && self.indexOf(2) == 1"},
        {"rule": "sets.contains(self, [1, 2])"}]},
        s={"type": "string", "x-kubernetes-validations": [
            {"rule": "self.find('[0-9]+') == '42' && self.lowerAscii() == 'ab42' && self.split('4').size() == 2"},
            {"rule": "isQuantity('500m') && !isQuantity('x') && isIP('10.0.0.1') && isCIDR('10.0.0.0/8')"},
            {"rule": "self.matches('^[A-Za-z]+[0-9]+$')"}]})
    assert check_structural(schema, P) == []
    assert validate(schema, cr(xs=[1, 2, 3], s="AB42")) == []


def test_a_rule_at_the_root_sees_only_name_and_generate_name_of_metadata() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [
        {"rule": "self.metadata.name.size() < 5 && !has(self.metadata.labels)"}],
        "properties": {"spec": {"type": "object"}}}
    obj = cr()
    obj["metadata"]["labels"] = {"a": "b"}
    assert validate(schema, obj) == []
    obj["metadata"]["name"] = "toolong"
    assert validate(schema, obj) == [
        '<nil>: Invalid value: "object": failed rule: self.metadata.name.size() < 5 && !has(self.metadata.labels)']


def test_compiling_once_then_validating_many_objects_does_not_mutate_them() -> None:
    compiled = CompiledSchema.from_openapi(CEL)
    obj = cr(replicas=1, maxReplicas=2, name="web", ratio=1)
    before = copy.deepcopy(obj)
    for _ in range(3):
        assert compiled.validate(obj, obj) == []
    assert obj == before


# -- ratcheting (CRDValidationRatcheting, on by default in 1.32) -----------------------------------------------------
def test_an_update_may_keep_a_value_that_a_tightened_schema_refuses_but_not_change_it() -> None:
    schema = obj_schema(size={"type": "string", "maxLength": 3}, replicas={"type": "integer"})
    old = cr(size="large", replicas=1)
    assert validate(schema, cr(size="large", replicas=2), old) == []
    assert validate(schema, cr(size="larger", replicas=2), old) == ["spec.size: Too long: may not be more than 3 bytes"]
    assert validate(schema, cr(size="large", replicas=2)) == ["spec.size: Too long: may not be more than 3 bytes"]


def test_a_failing_rule_on_an_unchanged_value_is_let_pass_on_update() -> None:
    schema = obj_schema(name={"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 4"}]},
                        tags={"type": "array", "items": {"type": "string",
                                                         "x-kubernetes-validations": [{"rule": "self != 'bad'"}]}},
                        other={"type": "integer"})
    old = cr(name="toolong", tags=["bad"], other=1)
    assert validate(schema, cr(name="toolong", tags=["bad"], other=2), old) == []
    assert validate(schema, cr(name="toolonger", tags=["bad", "bad"], other=2), old) == [
        'spec.name: Invalid value: "string": failed rule: self.size() < 4',
        "spec.tags[0]: Invalid value: \"string\": failed rule: self != 'bad'",
        "spec.tags[1]: Invalid value: \"string\": failed rule: self != 'bad'"]


def test_unknown_fields_under_maps_are_spelt_with_dots_as_kubernetes_reports_them() -> None:
    schema = obj_schema(byZone={"type": "object", "additionalProperties": {
        "type": "object", "properties": {"replicas": {"type": "integer"}}}})
    obj = cr(byZone={"eu-1": {"replicas": 1, "typo": 2}})
    assert CompiledSchema.from_openapi(schema).prune(obj) == ["spec.byZone.eu-1.typo"]
    assert obj["spec"]["byZone"] == {"eu-1": {"replicas": 1}}


def test_metadata_declared_in_the_schema_is_not_pruned() -> None:
    schema = {"type": "object", "properties": {"metadata": {"type": "object"}, "spec": {"type": "object"}}}
    obj = cr()
    obj["metadata"] = {"name": "w", "labels": {"a": "b"}, "annotations": {"c": "d"}}
    assert CompiledSchema.from_openapi(schema).prune(obj) == []
    assert obj["metadata"] == {"name": "w", "labels": {"a": "b"}, "annotations": {"c": "d"}}


def test_a_schema_that_preserves_unknown_fields_at_the_root_prunes_nothing() -> None:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    obj = cr(anything={"at": ["all"]})
    assert CompiledSchema.from_openapi(schema).prune(obj) == []
    assert obj["spec"] == {"anything": {"at": ["all"]}}


def test_with_the_status_subresource_the_root_is_restricted() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "string"}}
    found = lines(check_structural(schema, P, status_subresource=True))
    assert found[0].startswith(f"{P}: Invalid value: ")
    assert "fields are allowed at the root of the schema if the status subresource is enabled" in found[0]


def test_nullable_is_forbidden_at_the_root() -> None:
    assert lines(check_structural({"type": "object", "nullable": True}, P)) == [
        "spec.versions[0].schema.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root"]


def test_a_valid_operator_style_schema_passes() -> None:
    schema = {"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "required": ["image"], "properties": {
            "image": {"type": "string"}, "replicas": {"type": "integer", "default": 1, "minimum": 0},
            "resources": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {
                          "name": {"type": "string"}, "port": {"x-kubernetes-int-or-string": True}}}}},
            "x-kubernetes-validations": [{"rule": "self.replicas < 100", "message": "too many"},
                                         {"rule": "self.image == oldSelf.image", "message": "image is immutable"}]},
        "status": {"type": "object", "properties": {"conditions": {"type": "array", "items": {
            "type": "object", "x-kubernetes-map-type": "atomic", "properties": {"type": {"type": "string"}}}}}}}}
    assert check_structural(schema, P, status_subresource=True) == []


def test_list_duplicates_are_refused_on_update_unless_the_old_object_had_them_too() -> None:
    schema = obj_schema(tags={"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                        n={"type": "integer"})
    assert validate(schema, cr(tags=["a", "a"], n=2), cr(tags=["a"], n=1)) == ['spec.tags[1]: Duplicate value: "a"']
    assert validate(schema, cr(tags=["a", "a"], n=2), cr(tags=["b", "b"], n=1)) == []


def test_quantities_compare_by_value_in_rules() -> None:
    schema = obj_schema(memory={"type": "string", "x-kubernetes-validations": [
        {"rule": "quantity(self).isLessThan(quantity('1Gi'))", "message": "at most 1Gi"},
        {"rule": "quantity('1Gi') == quantity('1024Mi') && quantity('2k').asInteger() == 2000"}]})
    assert check_structural(schema, P) == []
    assert validate(schema, cr(memory="512Mi")) == []
    assert validate(schema, cr(memory="2Gi")) == ['spec.memory: Invalid value: "string": at most 1Gi']


def test_ip_cidr_and_url_functions_answer_as_kubernetes_does() -> None:
    schema = obj_schema(
        net={"type": "string", "x-kubernetes-validations": [
            {"rule": "isCIDR(self) && cidr(self).containsIP(ip('10.1.2.3'))", "message": "must contain 10.1.2.3"},
            {"rule": "cidr(self).prefixLength() >= 8 && cidr(self).ip().family() == 4"}]},
        endpoint={"type": "string", "x-kubernetes-validations": [
            {"rule": "isURL(self) && url(self).getScheme() == 'https'", "message": "must be an https URL"}]})
    assert check_structural(schema, P) == []
    assert validate(schema, cr(net="10.0.0.0/8", endpoint="https://example.com:8443/x")) == []
    assert validate(schema, cr(net="192.168.0.0/16", endpoint="http://example.com")) == [
        'spec.net: Invalid value: "string": must contain 10.1.2.3',
        'spec.endpoint: Invalid value: "string": must be an https URL']
