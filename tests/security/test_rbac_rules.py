"""RBAC's rule matching and coverage, as Kubernetes' RBAC evaluates them, in tables."""

from __future__ import annotations

import pytest

from minik.apiserver.auth.rbac.rules import Rule, compile_rules, describe, uncovered
from minik.apiserver.authorization import AuthzAttributes


def rule(verbs: list[str], groups: list[str] | None = None, resources: list[str] | None = None,
         names: list[str] | None = None, urls: list[str] | None = None) -> Rule:
    raw: dict[str, list[str]] = {"verbs": verbs}
    for key, value in (("apiGroups", groups), ("resources", resources), ("resourceNames", names),
                       ("nonResourceURLs", urls)):
        if value is not None:
            raw[key] = value
    return Rule.parse(raw)


def ask(verb: str, resource: str, group: str = "", sub: str = "", name: str = "", ns: str = "ns") -> AuthzAttributes:
    return AuthzAttributes(verb, group, resource, sub, ns, name)


READ_PODS = rule(["get", "list", "watch"], [""], ["pods"])


@pytest.mark.parametrize(("granted", "asked", "allowed"), [
    (READ_PODS, ask("get", "pods"), True),
    (READ_PODS, ask("delete", "pods"), False),
    (READ_PODS, ask("get", "pods", "apps"), False),
    (READ_PODS, ask("get", "pods", sub="exec"), False),  # a subresource is never granted by its parent
    (READ_PODS, ask("get", "pods", sub="log"), False),
    (rule(["get"], [""], ["pods/log"]), ask("get", "pods", sub="log"), True),
    (rule(["get"], [""], ["pods/log"]), ask("get", "pods"), False),
    (rule(["create"], [""], ["*/exec"]), ask("create", "pods", sub="exec"), True),
    (rule(["create"], [""], ["pods/*"]), ask("create", "pods", sub="attach"), True),
    (rule(["create"], [""], ["pods/*"]), ask("create", "pods"), False),
    (rule(["*"], ["*"], ["*"]), ask("impersonate", "users", "", name="bob", ns=""), True),
    (rule(["get"], [""], ["configmaps"], ["cluster-info"]), ask("get", "configmaps", name="cluster-info"), True),
    (rule(["get"], [""], ["configmaps"], ["cluster-info"]), ask("get", "configmaps", name="other"), False),
    (rule(["get"], [""], ["configmaps"], ["cluster-info"]), ask("list", "configmaps"), False),
    (rule(["get"], urls=["/healthz"]), AuthzAttributes.for_path("GET", "/healthz"), True),
    (rule(["get"], urls=["/apis/*"]), AuthzAttributes.for_path("GET", "/apis/apps/v1"), True),
    (rule(["get"], urls=["/apis/*"]), AuthzAttributes.for_path("GET", "/api"), False),
    (rule(["get"], urls=["/apis/*"]), AuthzAttributes.for_path("POST", "/apis/apps/v1"), False),
    (rule(["get"], urls=["*"]), AuthzAttributes.for_path("HEAD", "/anything"), True),
    (READ_PODS, AuthzAttributes.for_path("GET", "/api/v1/pods"), False),  # a resource rule never grants a path
])
def test_a_rule_grants_exactly_its_verbs_groups_resources_and_names(granted: Rule, asked: AuthzAttributes,
                                                                    allowed: bool) -> None:
    assert granted.allows(asked) is allowed


def test_rules_that_are_not_lists_of_objects_compile_to_nothing() -> None:
    assert compile_rules(None) == ()
    assert compile_rules({"verbs": ["*"]}) == ()
    assert compile_rules(["junk"])[0].allows(ask("get", "pods")) is False


@pytest.mark.parametrize(("owner", "requested", "covered"), [
    ([READ_PODS], [rule(["get"], [""], ["pods"])], True),
    ([READ_PODS], [rule(["get", "delete"], [""], ["pods"])], False),
    ([rule(["*"], ["*"], ["*"])], [rule(["escalate"], ["rbac.authorization.k8s.io"], ["roles"])], True),
    ([rule(["get"], [""], ["pods/*"])], [rule(["get"], [""], ["pods/log", "pods/exec"])], True),
    ([rule(["get"], [""], ["*/log"])], [rule(["get"], [""], ["pods/log"])], True),
    ([rule(["get"], [""], ["pods/log"])], [rule(["get"], [""], ["pods/*"])], False),
    ([rule(["get"], [""], ["secrets"])], [rule(["get"], [""], ["secrets"], ["one"])], True),
    ([rule(["get"], [""], ["secrets"], ["one"])], [rule(["get"], [""], ["secrets"])], False),
    ([rule(["get"], [""], ["secrets"], ["one", "two"])], [rule(["get"], [""], ["secrets"], ["two"])], True),
    ([rule(["get"], urls=["/logs/*"])], [rule(["get"], urls=["/logs/kube"])], True),
    ([rule(["get"], urls=["/logs/kube"])], [rule(["get"], urls=["/logs/*"])], False),
    ([rule(["get"], ["apps"], ["deployments"]), rule(["list"], ["apps"], ["deployments"])],
     [rule(["get", "list"], ["apps"], ["deployments"])], True),  # covered by two rules together
])
def test_coverage_breaks_a_rule_down_and_finds_each_part_granted(owner: list[Rule], requested: list[Rule],
                                                                 covered: bool) -> None:
    assert (not uncovered(owner, requested)) is covered


def test_a_missing_permission_is_described_as_kubernetes_prints_it() -> None:
    missing = uncovered([READ_PODS], [rule(["create"], ["apps"], ["deployments"], ["web"])])
    assert [describe(r) for r in missing] == [
        '{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["web"], Verbs:["create"]}']
    assert describe(rule(["get"], urls=["/metrics"])) == '{NonResourceURLs:["/metrics"], Verbs:["get"]}'
