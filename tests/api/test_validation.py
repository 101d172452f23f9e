"""The string rules and ObjectMeta validation, with Kubernetes' field paths, reasons and messages."""

from __future__ import annotations

import pytest

from minik.api import validation as v
from minik.api.errors import Cause, invalid

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 r"validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
NAME_PART_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                 "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def meta(**fields: object) -> dict:
    return {"name": "web", "namespace": "default", **fields}


# -- string rules ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["a", "example.com", "a-b.c-d", "0", "a" * 253, "1.2.3"])
def test_valid_dns_subdomains_pass(name: str) -> None:
    assert v.is_dns1123_subdomain(name) == []


def test_an_invalid_subdomain_gets_kubernetes_message() -> None:
    assert v.is_dns1123_subdomain("Web_1") == [SUBDOMAIN_MSG]
    assert v.is_dns1123_subdomain("-a") == [SUBDOMAIN_MSG]
    assert v.is_dns1123_subdomain("a..b") == [SUBDOMAIN_MSG]


def test_a_subdomain_longer_than_253_characters_is_too_long() -> None:
    assert v.is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]


def test_a_dns_label_allows_no_dots_and_at_most_63_characters() -> None:
    assert v.is_dns1123_label("my-name") == []
    assert v.is_dns1123_label("a" * 63) == []
    assert v.is_dns1123_label("a.b") == [LABEL_MSG]
    assert v.is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]


def test_a_dns1035_label_must_start_with_a_letter() -> None:
    assert v.is_dns1035_label("web") == []
    [message] = v.is_dns1035_label("1web")
    assert message.startswith("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                              "with an alphabetic character")


@pytest.mark.parametrize("key", ["app", "App_1", "example.com/name", "a.b/c-d.e_f", "k8s.io/" + "a" * 63])
def test_qualified_names_with_and_without_prefix_pass(key: str) -> None:
    assert v.is_qualified_name(key) == []


def test_qualified_name_errors_name_the_part_at_fault() -> None:
    assert v.is_qualified_name("-app") == [NAME_PART_MSG]
    assert v.is_qualified_name("/app") == ["prefix part must be non-empty"]
    assert v.is_qualified_name("Example.com/app") == ["prefix part " + SUBDOMAIN_MSG]
    assert v.is_qualified_name("a/") == ["name part must be non-empty", NAME_PART_MSG]
    assert v.is_qualified_name("a" * 64) == ["name part must be no more than 63 characters"]
    [message] = v.is_qualified_name("a/b/c")
    assert message.startswith("a qualified name must consist of")
    assert message.endswith("with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")


def test_label_values_may_be_empty_but_not_longer_than_63() -> None:
    assert v.is_valid_label_value("") == []
    assert v.is_valid_label_value("v1.2_3-x") == []
    assert v.is_valid_label_value("a" * 64) == ["must be no more than 63 characters"]
    [message] = v.is_valid_label_value("a b")
    assert message.startswith("a valid label must be an empty string or consist of alphanumeric characters")


def test_config_map_keys_allow_dots_and_underscores_but_not_a_leading_double_dot() -> None:
    assert v.is_config_map_key("app.properties") == []
    assert v.is_config_map_key("KEY_NAME") == []
    assert v.is_config_map_key("..data") == ["must not start with '..'"]
    assert v.is_config_map_key(".") == ["must not be '.'"]
    [message] = v.is_config_map_key("a/b")
    assert message.startswith("a valid config key must consist of alphanumeric characters, '-', '_' or '.'")


def test_env_var_names_may_not_start_with_a_digit() -> None:
    assert v.is_env_var_name("MY_VAR.x-1") == []
    [message] = v.is_env_var_name("1VAR")
    assert message.startswith("a valid environment variable name must consist of alphabetic characters, digits, "
                              "'_', '-', or '.', and must not start with a digit")


def test_port_names_follow_iana_service_name_rules() -> None:
    assert v.is_valid_port_name("http") == []
    assert v.is_valid_port_name("a" * 16) == ["must be no more than 15 characters"]
    assert v.is_valid_port_name("80") == ["must contain at least one letter (a-z)"]
    assert v.is_valid_port_name("a--b") == ["must not contain consecutive hyphens"]
    assert v.is_valid_port_name("-ab") == ["must not begin or end with a hyphen"]
    assert v.is_valid_port_name("HTTP") == ["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                                            "must contain at least one letter (a-z)"]


def test_port_numbers_run_from_1_to_65535() -> None:
    assert v.is_valid_port_num(1) == [] and v.is_valid_port_num(65535) == []
    assert v.is_valid_port_num(0) == ["must be between 1 and 65535, inclusive"]
    assert v.is_valid_port_num(65536) == ["must be between 1 and 65535, inclusive"]
    assert v.is_valid_port_num("80") == ["must be between 1 and 65535, inclusive"]


def test_names_are_checked_by_rule_and_generate_name_prefixes_may_end_in_a_dash() -> None:
    assert v.validate_name("web-", "subdomain", prefix=True) == []
    assert v.validate_name("web-", "subdomain") == [SUBDOMAIN_MSG]
    assert v.validate_name("a.b", "label") == [LABEL_MSG]
    assert v.validate_name("Any Name", "path") == []
    assert v.validate_name("..", "path") == ["may not be '..'"]
    assert v.validate_name("a/b%", "path") == ["may not contain '/'", "may not contain '%'"]
    with pytest.raises(ValueError):
        v.validate_name("x", "nonsense")


# -- causes --------------------------------------------------------------------------------------------------------

def test_cause_constructors_render_field_error_bodies() -> None:
    assert v.required("spec.containers") == Cause("spec.containers", "FieldValueRequired", "Required value")
    assert v.invalid("spec.replicas", -1, "must be greater than or equal to 0").message == \
        "Invalid value: -1: must be greater than or equal to 0"
    assert v.not_supported("spec.restartPolicy", "Sometimes", ["Always", "OnFailure", "Never"]).message == \
        'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'
    assert v.forbidden("spec", "no").message == "Forbidden: no"
    assert v.duplicate("spec.containers[1].name", "app").message == 'Duplicate value: "app"'
    assert v.not_found("spec.containers[0].volumeMounts[0].name", "data").reason == "FieldValueNotFound"
    assert v.too_long("metadata.annotations", 262144).message == "Too long: must have at most 262144 bytes"


def test_bad_values_are_printed_as_kubernetes_prints_them() -> None:
    assert v.go_repr("x") == '"x"'
    assert v.go_repr(True) == "true"
    assert v.go_repr(None) == "null"
    assert v.go_repr({"b": "2", "a": "1"}) == 'map[string]string{"a":"1", "b":"2"}'
    assert v.go_repr(["a", "b"]) == '[]string{"a", "b"}'


def test_causes_become_a_422_with_the_kubernetes_summary() -> None:
    error = invalid("Pod", "", "web", v.validate_object_meta(meta(name="Web"), "subdomain", namespaced=True))
    assert error.code == 422
    assert error.message == f'Pod "web" is invalid: metadata.name: Invalid value: "Web": {SUBDOMAIN_MSG}'


# -- ObjectMeta ------------------------------------------------------------------------------------------------------

def test_valid_metadata_has_no_causes() -> None:
    assert v.validate_object_meta(meta(labels={"app": "web"}, annotations={"example.com/note": "x"},
                                       finalizers=["example.com/cleanup"]), "subdomain", namespaced=True) == []


def test_name_or_generate_name_is_required() -> None:
    assert v.validate_object_meta({"namespace": "default"}, "subdomain", namespaced=True) == [
        Cause("metadata.name", "FieldValueRequired", "Required value: name or generateName is required")]
    assert v.validate_object_meta({"namespace": "default", "generateName": "web-"}, "subdomain", True) == []


def test_an_invalid_generate_name_is_reported_on_generate_name() -> None:
    [cause] = v.validate_object_meta({"namespace": "default", "generateName": "Web-"}, "subdomain", True)
    assert cause.field == "metadata.generateName"
    assert cause.reason == "FieldValueInvalid"
    assert cause.message.startswith('Invalid value: "Web-": a lowercase RFC 1123 subdomain')


def test_the_name_rule_decides_which_names_are_valid() -> None:
    assert v.validate_object_meta(meta(name="a.b"), "subdomain", True) == []
    [cause] = v.validate_object_meta(meta(name="a.b"), "label", True)
    assert cause == Cause("metadata.name", "FieldValueInvalid", f'Invalid value: "a.b": {LABEL_MSG}')


def test_namespaced_objects_need_a_valid_namespace_and_cluster_objects_none() -> None:
    assert v.validate_object_meta({"name": "a"}, "subdomain", True) == [
        Cause("metadata.namespace", "FieldValueRequired", "Required value")]
    [cause] = v.validate_object_meta({"name": "a", "namespace": "a.b"}, "subdomain", True)
    assert cause.field == "metadata.namespace" and LABEL_MSG in cause.message
    assert v.validate_object_meta({"name": "a"}, "subdomain", namespaced=False) == []
    assert v.validate_object_meta({"name": "a", "namespace": "x"}, "subdomain", namespaced=False) == [
        Cause("metadata.namespace", "FieldValueForbidden", "Forbidden: not allowed on this type")]


def test_bad_label_keys_and_values_are_reported_on_the_labels_map() -> None:
    causes = v.validate_object_meta(meta(labels={"-key": "ok", "good": "bad value"}), "subdomain", True)
    assert [(c.field, c.reason) for c in causes] == [("metadata.labels", "FieldValueInvalid")] * 2
    assert causes[0].message == f'Invalid value: "-key": {NAME_PART_MSG}'
    assert causes[1].message.startswith('Invalid value: "bad value": a valid label must be an empty string')


def test_labels_must_be_a_string_map() -> None:
    [cause] = v.validate_object_meta(meta(labels={"replicas": 3}), "subdomain", True)
    assert cause.field == "metadata.labels" and cause.reason == "FieldValueTypeInvalid"


def test_annotation_keys_are_qualified_names_and_values_are_free_text() -> None:
    assert v.validate_annotations({"note": "any text at all, even spaces!"}, "metadata.annotations") == []
    [cause] = v.validate_annotations({"bad key": "x"}, "metadata.annotations")
    assert cause.field == "metadata.annotations" and cause.reason == "FieldValueInvalid"


def test_annotations_may_total_at_most_256_kib() -> None:
    at_limit = {"k": "x" * (262144 - 1)}
    assert v.validate_annotations(at_limit, "metadata.annotations") == []
    assert v.validate_annotations({"k": "x" * 262144}, "metadata.annotations") == [
        Cause("metadata.annotations", "FieldValueTooLong", "Too long: must have at most 262144 bytes")]


def test_finalizers_are_qualified_names_and_orphan_excludes_foreground() -> None:
    [cause] = v.validate_object_meta(meta(finalizers=["bad finalizer"]), "subdomain", True)
    assert cause.field == "metadata.finalizers"
    [cause] = v.validate_object_meta(meta(finalizers=["orphan", "foregroundDeletion"]), "subdomain", True)
    assert cause.message.endswith("finalizer orphan and foregroundDeletion cannot be both set")


def test_owner_references_need_api_version_kind_name_and_uid() -> None:
    causes = v.validate_object_meta(meta(ownerReferences=[{"apiVersion": "apps/", "kind": "", "name": ""}]),
                                    "subdomain", True)
    assert [(c.field, c.message) for c in causes] == [
        ("metadata.ownerReferences.apiVersion", 'Invalid value: "apps/": version must not be empty'),
        ("metadata.ownerReferences.kind", 'Invalid value: "": kind must not be empty'),
        ("metadata.ownerReferences.name", 'Invalid value: "": name must not be empty'),
        ("metadata.ownerReferences.uid", 'Invalid value: "": uid must not be empty'),
    ]


def test_only_one_owner_reference_may_be_the_controller() -> None:
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "uid": "1", "controller": True}
    [cause] = v.validate_owner_references([{**ref, "name": "a"}, {**ref, "name": "b"}], "metadata.ownerReferences")
    assert cause.message.endswith('Only one reference can have Controller set to true. Found "true" in references '
                                  'for ReplicaSet/a and ReplicaSet/b')


def test_metadata_that_is_not_an_object_is_a_type_error() -> None:
    assert v.validate_object_meta("web", "subdomain", True)[0].reason == "FieldValueTypeInvalid"


def test_name_uid_and_namespace_never_change() -> None:
    old = {"name": "a", "namespace": "n", "uid": "1", "creationTimestamp": "t"}
    assert v.validate_object_meta_update(dict(old, labels={"x": "y"}), old) == []
    [cause] = v.validate_object_meta_update(dict(old, uid="2"), old)
    assert cause == Cause("metadata.uid", "FieldValueInvalid", 'Invalid value: "2": field is immutable')


# -- label selector dicts ---------------------------------------------------------------------------------------

def test_label_selector_expressions_are_checked_per_operator() -> None:
    causes = v.validate_label_selector({"matchExpressions": [
        {"key": "a", "operator": "In"},
        {"key": "b", "operator": "Exists", "values": ["x"]},
        {"key": "c", "operator": "Equals", "values": ["x"]},
    ]}, "spec.selector")
    assert [(c.field, c.reason, c.message) for c in causes] == [
        ("spec.selector.matchExpressions[0].values", "FieldValueRequired",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        ("spec.selector.matchExpressions[1].values", "FieldValueForbidden",
         "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
        ("spec.selector.matchExpressions[2].operator", "FieldValueInvalid",
         'Invalid value: "Equals": not a valid selector operator'),
    ]


def test_match_labels_are_validated_like_labels() -> None:
    [cause] = v.validate_label_selector({"matchLabels": {"app": "a b"}}, "spec.selector")
    assert cause.field == "spec.selector.matchLabels"


def test_a_remembered_answer_is_the_same_every_time_and_each_caller_gets_its_own_list() -> None:
    first = v.is_qualified_name("Bad Key/x")
    first.append("changed by a caller")
    again = v.is_qualified_name("Bad Key/x")
    assert again == first[:-1] and again and all(m.startswith("prefix part") for m in again)
    key = "node.kubernetes.io/not-ready"
    assert v.is_qualified_name(key) == [] == v.is_qualified_name(key)
    assert v.is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]
    assert v.is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]
    assert v.is_valid_ip("10.0.0.1") == [] == v.is_valid_ip("10.0.0.1")
    assert v.is_valid_ip("10.0.0.256") == v.is_valid_ip("10.0.0.256") != []


# -- whole strings ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("rule", "good"), [
    (v.is_dns1123_label, "kube-system"),
    (v.is_dns1123_subdomain, "example.com"),
    (v.is_dns1035_label, "web"),
    (v.is_qualified_name, "app"),
    (v.is_qualified_name, "example.com/app"),
    (v.is_valid_label_value, "web"),
    (v.is_config_map_key, "app.properties"),
    (v.is_env_var_name, "HOME"),
    (v.is_valid_port_name, "http"),
    (v.is_valid_percent, "25%"),
])
def test_a_trailing_newline_breaks_every_string_rule(rule, good: str) -> None:
    """``$`` matches before a final newline: the rules must match the whole string."""
    assert rule(good) == []
    assert rule(good + "\n") != []
    assert rule(good + "\r\n") != []


def test_a_name_with_a_trailing_newline_is_not_the_name() -> None:
    for value in ("kube-system\n", "web-\n"):
        causes = v.validate_object_meta({"name": value, "namespace": "default"}, "label", True)
        assert [c.field for c in causes] == ["metadata.name"], value
    [cause] = v.validate_object_meta({"generateName": "web-\n", "namespace": "default"}, "label", True)
    assert cause.field == "metadata.generateName"
    [cause] = v.validate_object_meta(meta(namespace="kube-system\n"), "subdomain", True)
    assert cause.field == "metadata.namespace"


def test_labels_annotations_and_finalizers_with_a_trailing_newline_are_invalid() -> None:
    for fields, path in (({"labels": {"app\n": "web"}}, "metadata.labels"),
                         ({"labels": {"app": "web\n"}}, "metadata.labels"),
                         ({"annotations": {"example.com/note\n": "any"}}, "metadata.annotations"),
                         ({"finalizers": ["example.com/cleanup\n"]}, "metadata.finalizers")):
        causes = v.validate_object_meta(meta(**fields), "subdomain", True)
        assert [c.field for c in causes] == [path], fields
