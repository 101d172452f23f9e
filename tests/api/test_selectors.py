"""Label and field selectors: the string grammar, metav1.LabelSelector dicts, matching, and parse errors."""

from __future__ import annotations

import pytest

from minik.api.selectors import (
    FieldSelector,
    LabelSelector,
    Requirement,
    escape_field_value,
    parse_field_selector,
    parse_label_selector,
    selector_from_dict,
    selector_from_set,
)

WEB = {"app": "web", "tier": "frontend", "replicas": "3"}


# -- label selector strings -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, labels, expected", [
    ("app=web", WEB, True),
    ("app==web", WEB, True),
    ("app=db", WEB, False),
    ("app!=db", WEB, True),
    ("app!=web", WEB, False),
    ("missing!=x", WEB, True),
    ("app in (web,db)", WEB, True),
    ("app in (db)", WEB, False),
    ("app notin (db, cache)", WEB, True),
    ("app notin (web)", WEB, False),
    ("missing notin (x)", WEB, True),
    ("missing in (x)", WEB, False),
    ("tier", WEB, True),
    ("missing", WEB, False),
    ("!missing", WEB, True),
    ("!tier", WEB, False),
    ("app=web,tier=frontend", WEB, True),
    ("app=web,tier=backend", WEB, False),
    ("replicas>2", WEB, True),
    ("replicas<3", WEB, False),
    ("app>2", WEB, False),
    ("app=", {"app": ""}, True),
    ("app=", WEB, False),
])
def test_label_selector_strings_match_as_in_kubernetes(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


def test_whitespace_around_every_token_is_tolerated() -> None:
    selector = parse_label_selector("  app  =  web ,  tier   in ( frontend ,  backend ) , ! gone  ")
    assert selector.matches(WEB)
    assert str(selector) == "app=web,!gone,tier in (backend,frontend)"


def test_the_empty_string_selects_everything() -> None:
    selector = parse_label_selector("")
    assert selector.empty
    assert selector.matches({}) and selector.matches(WEB)
    assert parse_label_selector("   ").empty


def test_a_selector_with_requirements_is_not_empty() -> None:
    assert not parse_label_selector("app=web").empty


def test_in_and_notin_may_be_label_keys_and_values() -> None:
    assert parse_label_selector("in=notin").matches({"in": "notin"})
    assert parse_label_selector("notin in (in)").matches({"notin": "in"})


def test_empty_parentheses_and_trailing_commas_stand_for_the_empty_value() -> None:
    assert parse_label_selector("app in ()").requirements[0].values == ("",)
    assert parse_label_selector("app in (a,)").requirements[0].values == ("", "a")
    assert parse_label_selector("app in (,a)").requirements[0].values == ("", "a")


def test_requirements_are_kept_sorted_by_key_and_print_back() -> None:
    selector = parse_label_selector("z=1,a notin (y,x),m")
    assert [r.key for r in selector.requirements] == ["a", "m", "z"]
    assert str(selector) == "a notin (x,y),m,z=1"
    assert parse_label_selector(str(selector)) == selector


@pytest.mark.parametrize("text, message", [
    ("app in web", "found 'web' expected: '('"),
    ("app web", "found 'web', expected: in, notin, =, ==, !=, gt, lt"),
    ("app=web,", "found '', expected: identifier after ','"),
    ("app=web tier=x", "found 'tier', expected: ',' or 'end of string'"),
    ("=web", "found '=', expected: !, identifier, or 'end of string'"),
    ("!app=web", "found '=', expected: ',' or 'end of string'"),
    ("app in (a b)", "found 'b', expected: ',', ')' or identifier"),
    ("app in (a", "found '', expected: ',', ')' or identifier"),
    ("app==(", "found '(', expected: identifier"),
])
def test_malformed_label_selectors_say_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_label_selector(text)
    assert str(info.value) == message


def test_an_invalid_label_key_is_rejected_with_the_qualified_name_rule() -> None:
    with pytest.raises(ValueError) as info:
        parse_label_selector("-bad=x")
    assert str(info.value).startswith('key: Invalid value: "-bad": name part must consist of alphanumeric')


def test_an_invalid_label_value_is_rejected_with_its_key_in_the_path() -> None:
    with pytest.raises(ValueError) as info:
        parse_label_selector("app=a_")
    assert str(info.value).startswith('values[0][app]: Invalid value: "a_": a valid label must be an empty string')


def test_gt_and_lt_need_an_integer() -> None:
    with pytest.raises(ValueError, match="for 'Gt', 'Lt' operators, the value must be an integer"):
        parse_label_selector("replicas>x")


@pytest.mark.parametrize("value", ["1_0", "99999999999999999999", "9" * 5000])
def test_gt_and_lt_read_integers_as_go_does(value: str) -> None:
    """strconv.ParseInt: ASCII digits only, 64 bits at most (Python's int() would take "1_0" for 10)."""
    with pytest.raises(ValueError, match="for 'Gt', 'Lt' operators, the value must be an integer"):
        parse_label_selector(f"replicas>{value}")
    assert not parse_label_selector("replicas>5").matches({"replicas": value})
    assert parse_label_selector("replicas>5").matches({"replicas": "10"})


# -- metav1.LabelSelector ---------------------------------------------------------------------------------------

def test_a_selector_dict_combines_match_labels_and_expressions() -> None:
    selector = selector_from_dict({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["frontend", "edge"]},
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "replicas", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist"},
        ],
    })
    assert selector.matches(WEB)
    assert not selector.matches({**WEB, "legacy": "yes"})
    assert not selector.matches({**WEB, "env": "prod"})
    assert not selector.matches({"app": "web", "tier": "frontend"})


def test_an_empty_selector_dict_selects_everything_and_none_selects_nothing() -> None:
    assert selector_from_dict({}).empty and selector_from_dict({}).matches(WEB)
    nothing = selector_from_dict(None)
    assert not nothing.empty
    assert not nothing.matches({}) and not nothing.matches(WEB)
    assert nothing == LabelSelector.nothing()


def test_an_unknown_expression_operator_is_an_error() -> None:
    with pytest.raises(ValueError, match='"Equals" is not a valid label selector operator'):
        selector_from_dict({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]})


def test_in_without_values_is_an_error() -> None:
    with pytest.raises(ValueError, match="values set can't be empty"):
        selector_from_dict({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})


def test_a_malformed_selector_dict_is_an_error_not_a_crash() -> None:
    with pytest.raises(ValueError):
        selector_from_dict({"matchLabels": ["app"]})
    with pytest.raises(ValueError):
        selector_from_dict({"matchExpressions": ["app"]})


def test_a_label_set_selects_objects_carrying_all_its_labels() -> None:
    selector = selector_from_set({"app": "web", "tier": "frontend"})
    assert selector.matches(WEB)
    assert not selector.matches({"app": "web"})
    assert Requirement("app", "=", ("web",)) in selector.requirements


# -- field selectors --------------------------------------------------------------------------------------------

FIELDS = {"metadata.name": "web-1", "spec.nodeName": "node-a", "status.phase": "Running"}


@pytest.mark.parametrize("text, expected", [
    ("metadata.name=web-1", True),
    ("metadata.name==web-1", True),
    ("metadata.name!=web-1", False),
    ("spec.nodeName=node-a,status.phase=Running", True),
    ("spec.nodeName=node-a,status.phase!=Running", False),
    ("spec.nodeName=", False),
    ("spec.schedulerName=", True),
    ("spec.schedulerName!=x", True),
])
def test_field_selectors_compare_fields_as_strings(text: str, expected: bool) -> None:
    assert parse_field_selector(text).matches(FIELDS) is expected


def test_field_selector_requirements_name_each_field_with_its_operator() -> None:
    selector = parse_field_selector("status.phase!=Failed,spec.nodeName==node-a")
    assert selector.requirements == (("spec.nodeName", "=", "node-a"), ("status.phase", "!=", "Failed"))
    assert selector.exact("spec.nodeName") == "node-a"
    assert selector.exact("status.phase") is None


def test_an_empty_field_selector_selects_everything() -> None:
    selector = parse_field_selector("")
    assert selector.empty and selector.matches({})
    assert isinstance(selector, FieldSelector)


def test_escaped_commas_and_equals_belong_to_the_value() -> None:
    selector = parse_field_selector(r"metadata.name=a\,b\=c\\d")
    assert selector.requirements == (("metadata.name", "=", "a,b=c\\d"),)
    assert selector.matches({"metadata.name": "a,b=c\\d"})
    assert escape_field_value("a,b=c\\d") == r"a\,b\=c\\d"
    assert str(selector) == r"metadata.name=a\,b\=c\\d"


def test_a_value_may_contain_an_exclamation_mark_unescaped() -> None:
    assert parse_field_selector("metadata.name=a!b").requirements == (("metadata.name", "=", "a!b"),)


@pytest.mark.parametrize("text, message", [
    ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
    ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
    (r"a=b\x", r"invalid field selector: invalid escape sequence: \x"),
    ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
    ("a=b=c", "invalid field selector: unescaped character in value: ="),
])
def test_malformed_field_selectors_are_value_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_field_selector(text)
    assert str(info.value) == message
