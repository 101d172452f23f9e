"""CEL in admission as Kubernetes compiles it: type-checked against its declarations (a typed ``request``,
``params`` only with a paramKind, ``variables`` typed by their expressions, no ``authorizer`` in a
messageExpression), with Kubernetes' (cel-go's) error messages; and evaluated with typed variables and the
authorizer library."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hooks import CM, GROUP_PATH, VALIDATING, configmap, hook

if TYPE_CHECKING:
    from conftest import ApiHttp

POLICIES = f"{GROUP_PATH}/validatingadmissionpolicies"
BINDINGS = f"{GROUP_PATH}/validatingadmissionpolicybindings"
CONFIGMAP_RULES = {"resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                      "resources": ["configmaps"]}]}
URL = {"url": "https://127.0.0.1:9/v", "caBundle": ""}


def causes(body: dict) -> dict[str, str]:
    return {c["field"]: c["message"] for c in body["details"]["causes"]}


async def test_policy_expressions_are_type_checked_against_kubernetes_declarations(http: ApiHttp) -> None:
    status, body = await http.post(POLICIES, {"metadata": {"name": "typed"}, "spec": {
        "matchConstraints": CONFIGMAP_RULES,
        "matchConditions": [{"name": "no-variables-here", "expression": "variables.count > 0"}],
        "variables": [{"name": "count", "expression": "has(object.data) ? size(object.data) : 0"},
                      {"name": "later", "expression": "variables.after == 1"},
                      {"name": "after", "expression": "1"}],
        "validations": [
            {"expression": "request.foo == 'x'"},
            {"expression": "params.x == 1"},
            {"expression": "object.spec"},
            {"expression": "variables.count == 'a'"},
            {"expression": "variables.count <= 1 && request.userInfo.username != ''",
             "messageExpression": "authorizer.path('/').check('get').reason()"},
            {"expression": "true", "messageExpression": "variables.count"}]}})
    assert status == 422
    found = causes(body)
    assert found["spec.validations[0].expression"] == (
        "Invalid value: \"request.foo == 'x'\": compilation failed: ERROR: <input>:1:8: undefined field 'foo'\n"
        " | request.foo == 'x'\n | .......^")
    assert found["spec.validations[1].expression"] == (
        'Invalid value: "params.x == 1": compilation failed: ERROR: <input>:1:1: undeclared reference to '
        "'params' (in container '')\n | params.x == 1\n | ^")
    assert found["spec.validations[2].expression"] == 'Invalid value: "object.spec": must evaluate to bool'
    assert "found no matching overload for '_==_' applied to '(int, string)'" in \
        found["spec.validations[3].expression"]
    assert "undeclared reference to 'authorizer'" in found["spec.validations[4].messageExpression"]
    assert found["spec.validations[5].messageExpression"] == \
        'Invalid value: "variables.count": must evaluate to string'
    # a variable sees only the variables before it; matchConditions see none
    assert "undefined field 'after'" in found["spec.variables[1].expression"]
    assert "undeclared reference to 'variables'" in found["spec.matchConditions[0].expression"]
    assert len(found) == 8


async def test_webhook_match_conditions_are_type_checked(http: ApiHttp) -> None:
    conditions = [{"name": "a", "expression": "params.x == 1"},
                  {"name": "b", "expression": "request.userInfo.username.first == 'x'"},
                  {"name": "c", "expression": "authorizer.check('get').allowed()"},
                  {"name": "d", "expression": "authorizer.requestResource.check('get').allowed() && "
                                              "'system:masters' in request.userInfo.groups"}]
    status, body = await http.post(VALIDATING, {"metadata": {"name": "typed"},
                                                "webhooks": [hook("typed.example.com", URL, matchConditions=conditions)]})
    assert status == 422
    found = causes(body)
    assert "undeclared reference to 'params'" in found["webhooks[0].matchConditions[0].expression"]
    assert "type 'string' does not support field selection" in found["webhooks[0].matchConditions[1].expression"]
    assert ("found no matching overload for 'check' applied to '(kubernetes.authorization.Authorizer, string)'"
            in found["webhooks[0].matchConditions[2].expression"])
    assert len(found) == 3


async def test_list_variables_build_on_one_another(http: ApiHttp) -> None:
    status, body = await http.post(POLICIES, {"metadata": {"name": "prefixes"}, "spec": {
        "matchConstraints": CONFIGMAP_RULES,
        "variables": [{"name": "keys", "expression": "has(object.data) ? object.data.map(k, k) : []"},
                      {"name": "reserved", "expression": "variables.keys.filter(k, k.startsWith('x-'))"}],
        "validations": [{"expression": "size(variables.reserved) == 0",
                         "messageExpression": "string(size(variables.reserved)) + ' reserved keys, '"
                                              "+ variables.reserved.filter(k, k.endsWith('c')).join(', ')"}]}})
    assert status == 201, body
    status, body = await http.post(BINDINGS, {"metadata": {"name": "prefixes"}, "spec": {
        "policyName": "prefixes", "validationActions": ["Deny"]}})
    assert status == 201, body
    assert (await http.post(CM, configmap("fine", a="1")))[0] == 201
    status, body = await http.post(CM, configmap("bad", **{"x-a": "1", "b": "2", "x-c": "3"}))
    assert status == 422 and body["message"].endswith("denied request: 2 reserved keys, x-c")


async def test_a_policy_asks_the_authorizer_about_a_service_account(http: ApiHttp) -> None:
    status, body = await http.post(POLICIES, {"metadata": {"name": "asks"}, "spec": {
        "matchConstraints": CONFIGMAP_RULES,
        "validations": [
            {"expression": "authorizer.requestResource.check('create').allowed() && "
                           "authorizer.group('').resource('secrets').namespace('default').check('list').allowed()",
             "message": "the requesting user may not"},
            {"expression": "authorizer.serviceAccount('default', 'nobody').group('').resource('secrets')"
                           ".check('list').allowed()",
             "message": "nobody may not list secrets"}]}})
    assert status == 201, body
    status, body = await http.post(BINDINGS, {"metadata": {"name": "asks"}, "spec": {
        "policyName": "asks", "validationActions": ["Deny"]}})
    assert status == 201, body
    status, body = await http.post(CM, configmap("x"))
    assert status == 422
    assert body["message"].endswith("denied request: nobody may not list secrets"), body
