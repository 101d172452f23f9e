"""ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1): CEL
validations the API server applies itself, with params, variables, match conditions and validation actions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hooks import CM, GROUP_PATH, configmap

if TYPE_CHECKING:
    from conftest import ApiHttp

POLICIES = f"{GROUP_PATH}/validatingadmissionpolicies"
BINDINGS = f"{GROUP_PATH}/validatingadmissionpolicybindings"
CONFIGMAP_RULES = {"resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                      "resources": ["configmaps"]}]}


async def policy(http: ApiHttp, name: str, *validations: dict, **spec: object) -> dict:
    status, body = await http.post(POLICIES, {"metadata": {"name": name}, "spec": {
        "matchConstraints": CONFIGMAP_RULES, "validations": list(validations), **spec}})
    assert status == 201, body
    return body


async def bind(http: ApiHttp, name: str, policy_name: str, *actions: str, **spec: object) -> None:
    status, body = await http.post(BINDINGS, {"metadata": {"name": name}, "spec": {
        "policyName": policy_name, "validationActions": list(actions) or ["Deny"], **spec}})
    assert status == 201, body


async def test_a_bound_policy_refuses_what_its_validation_rejects(http: ApiHttp) -> None:
    created = await policy(http, "small", {"expression": "!has(object.data) || size(object.data) <= 1"})
    assert created["spec"]["failurePolicy"] == "Fail"
    assert created["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent"
    assert (await http.post(CM, configmap("big", a="1", b="2")))[0] == 201  # not bound yet
    await bind(http, "small-everywhere", "small")
    assert (await http.post(CM, configmap("ok", a="1")))[0] == 201
    status, body = await http.post(CM, configmap("big2", a="1", b="2"))
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"] == ('configmaps "big2" is forbidden: ValidatingAdmissionPolicy \'small\' with binding '
                               "'small-everywhere' denied request: failed expression: !has(object.data) || "
                               "size(object.data) <= 1")


async def test_messages_reasons_and_message_expressions(http: ApiHttp) -> None:
    await policy(http, "named", {"expression": "object.metadata.name.startsWith('app-')",
                                 "messageExpression": "'name ' + object.metadata.name + ' lacks the app- prefix'",
                                 "reason": "Forbidden"},
                 {"expression": "object.metadata.name.size() < 10", "message": "name too long"})
    await bind(http, "named", "named")
    status, body = await http.post(CM, configmap("web"))
    assert (status, body["reason"]) == (403, "Forbidden")
    assert body["message"].endswith("denied request: name web lacks the app- prefix")
    status, body = await http.post(CM, configmap("app-very-long-name"))
    assert (status, body["message"].split("denied request: ")[1]) == (422, "name too long")


async def test_warn_and_audit_actions_let_the_request_through(http: ApiHttp) -> None:
    await policy(http, "labelled", {"expression": "has(object.metadata.labels)", "message": "please label it"})
    await bind(http, "labelled", "labelled", "Warn", "Audit")
    async with http.session.post(CM, json=configmap("x")) as response:
        assert response.status == 201
        assert response.headers["Warning"] == ('299 - "Validation failed for ValidatingAdmissionPolicy \'labelled\' '
                                               "with binding 'labelled': please label it\"")


async def test_params_come_from_the_object_the_binding_names(http: ApiHttp) -> None:
    limits = {"metadata": {"name": "limits", "namespace": "default"}, "data": {"maxKeys": "2"}}
    assert (await http.post(CM, limits))[0] == 201
    await policy(http, "max-keys",
                 {"expression": "!has(object.data) || size(object.data) <= int(params.data.maxKeys)",
                  "messageExpression": "'at most ' + params.data.maxKeys + ' keys'"},
                 paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                 matchConditions=[{"name": "not-the-params", "expression": "object.metadata.name != 'limits'"}])
    await bind(http, "max-keys", "max-keys", paramRef={"name": "limits", "namespace": "default",
                                                       "parameterNotFoundAction": "Deny"})
    assert (await http.post(CM, configmap("two", a="1", b="2")))[0] == 201
    status, body = await http.post(CM, configmap("three", a="1", b="2", c="3"))
    assert status == 422 and body["message"].endswith("denied request: at most 2 keys")
    assert (await http.delete(f"{CM}/limits"))[0] == 200
    status, body = await http.post(CM, configmap("any"))
    assert status == 422 and body["message"].endswith(
        "denied request: no params found for policy binding with `Deny` parameterNotFoundAction")


async def test_variables_and_binding_match_resources(http: ApiHttp) -> None:
    assert (await http.post("/api/v1/namespaces", {"metadata": {"name": "strict", "labels": {"tier": "strict"}}}))[0] \
        == 201
    await policy(http, "keys", {"expression": "variables.count <= 1", "message": "one key only"},
                 variables=[{"name": "count", "expression": "has(object.data) ? size(object.data) : 0"}])
    await bind(http, "keys-in-strict", "keys",
               matchResources={"namespaceSelector": {"matchLabels": {"tier": "strict"}}})
    assert (await http.post(CM, configmap("many", a="1", b="2")))[0] == 201
    status, body = await http.post("/api/v1/namespaces/strict/configmaps", configmap("many", a="1", b="2"))
    assert status == 422 and body["message"].endswith("denied request: one key only")


async def test_an_expression_that_errors_gets_the_failure_policy(http: ApiHttp) -> None:
    await policy(http, "team", {"expression": "object.metadata.labels.team == 'a'"})
    await bind(http, "team", "team")
    status, body = await http.post(CM, configmap("x"))
    assert status == 422 and "resulted in error: no such key" in body["message"]
    status, current = await http.get(f"{POLICIES}/team")
    current["spec"]["failurePolicy"] = "Ignore"
    assert (await http.put(f"{POLICIES}/team", current))[0] == 200
    assert (await http.post(CM, configmap("y")))[0] == 201


async def test_invalid_policies_and_bindings_are_refused_with_kubernetes_messages(http: ApiHttp) -> None:
    status, body = await http.post(POLICIES, {"metadata": {"name": "p"}, "spec": {
        "failurePolicy": "Sometimes", "validations": [{"expression": "1 +"}]}})
    assert status == 422
    found = {c["field"]: c["message"] for c in body["details"]["causes"]}
    assert found["spec.failurePolicy"] == 'Unsupported value: "Sometimes": supported values: "Fail", "Ignore"'
    assert found["spec.matchConstraints"] == "Required value"
    assert found["spec.validations[0].expression"].startswith('Invalid value: "1 +": compilation failed: ')
    status, body = await http.post(BINDINGS, {"metadata": {"name": "b"}, "spec": {
        "validationActions": ["Deny", "Warn"]}})
    found = {c["field"]: c["message"] for c in body["details"]["causes"]}
    assert found["spec.policyName"] == "Required value"
    assert found["spec.validationActions"].startswith("Invalid value: ")
    assert found["spec.validationActions"].endswith("must not contain both Deny and Warn (repeating the same "
                                                    "validation failure information in the API response and headers "
                                                    "serves no purpose)")


async def test_kubectl_columns_of_policies_and_bindings(http: ApiHttp) -> None:
    await policy(http, "p", {"expression": "true"}, {"expression": "true"},
                 paramKind={"apiVersion": "v1", "kind": "ConfigMap"})
    await bind(http, "b", "p", paramRef={"name": "limits", "parameterNotFoundAction": "Allow"})
    table_type = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    async with http.session.get(POLICIES, headers=table_type) as r:
        table = await r.json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Validations", "ParamKind", "Age"]
    assert table["rows"][0]["cells"][:3] == ["p", 2, "v1/ConfigMap"]
    async with http.session.get(BINDINGS, headers=table_type) as r:
        table = await r.json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "PolicyName", "ParamRef", "Age"]
    assert table["rows"][0]["cells"][:3] == ["b", "p", "*/limits"]
