"""MutatingWebhookConfiguration and ValidatingWebhookConfiguration as the API serves them: Kubernetes' defaults,
its validation messages, and the columns kubectl prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hooks import MUTATING, VALIDATING, hook

if TYPE_CHECKING:
    from conftest import ApiHttp

URL = {"url": "https://hooks.example.com/check"}


def causes(body: dict) -> dict[str, str]:
    return {c["field"]: c["message"] for c in body["details"]["causes"]}


async def test_a_mutating_webhook_gets_kubernetes_defaults(http: ApiHttp) -> None:
    minimal = {"name": "m.example.com", "clientConfig": {"service": {"namespace": "hooks", "name": "svc"}},
               "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
               "sideEffects": "None", "admissionReviewVersions": ["v1"]}
    status, created = await http.post(MUTATING, {"metadata": {"name": "m"}, "webhooks": [minimal]})
    assert status == 201, created
    [webhook] = created["webhooks"]
    assert webhook["failurePolicy"] == "Fail" and webhook["matchPolicy"] == "Equivalent"
    assert webhook["namespaceSelector"] == {} and webhook["objectSelector"] == {}
    assert webhook["timeoutSeconds"] == 10 and webhook["reinvocationPolicy"] == "Never"
    assert webhook["rules"][0]["scope"] == "*"
    assert webhook["clientConfig"]["service"]["port"] == 443
    assert created["metadata"]["generation"] == 1


async def test_a_validating_webhook_has_no_reinvocation_policy(http: ApiHttp) -> None:
    status, created = await http.post(VALIDATING, {"metadata": {"name": "v"}, "webhooks": [hook("v.example.com", URL)]})
    assert status == 201
    assert "reinvocationPolicy" not in created["webhooks"][0]
    assert created["webhooks"][0]["timeoutSeconds"] == 10


async def test_side_effects_and_review_versions_are_required(http: ApiHttp) -> None:
    bare = {"name": "v.example.com", "clientConfig": URL}
    status, body = await http.post(VALIDATING, {"metadata": {"name": "v"}, "webhooks": [bare]})
    assert (status, body["reason"]) == (422, "Invalid")
    assert causes(body) == {
        "webhooks[0].sideEffects": "Required value: must specify one of None, NoneOnDryRun",
        "webhooks[0].admissionReviewVersions": "Required value: must specify one of v1, v1beta1"}
    assert body["message"].startswith('ValidatingWebhookConfiguration.admissionregistration.k8s.io "v" is invalid: ')


async def test_invalid_webhooks_are_refused_with_kubernetes_messages(http: ApiHttp) -> None:
    bad = {"name": "short.name", "clientConfig": {"url": "http://user@host/x?q=1#f"},
           "rules": [{"operations": ["CREATE", "*"], "apiGroups": [], "apiVersions": ["v1"],
                      "resources": ["*/*", "pods"], "scope": "Everywhere"}],
           "failurePolicy": "Maybe", "sideEffects": "Some", "timeoutSeconds": 31,
           "admissionReviewVersions": ["v2"], "reinvocationPolicy": "Always",
           "matchConditions": [{"name": "c", "expression": "1 +"}, {"name": "c", "expression": "true"}]}
    status, body = await http.post(MUTATING, {"metadata": {"name": "m"}, "webhooks": [bad]})
    assert status == 422
    found = causes(body)
    assert found["webhooks[0].name"] == ('Invalid value: "short.name": should be a domain with at least three '
                                         "segments separated by dots")
    assert found["webhooks[0].rules[0].operations"] == ('Invalid value: []string{"CREATE", "*"}: if \'*\' is present, '
                                                        "must not specify other operations")
    assert found["webhooks[0].rules[0].apiGroups"] == "Required value"
    assert found["webhooks[0].rules[0].resources"] == ('Invalid value: []string{"*/*", "pods"}: if \'*/*\' is '
                                                       "present, must not specify other resources")
    assert found["webhooks[0].rules[0].scope"] == ('Unsupported value: "Everywhere": supported values: "*", '
                                                   '"Cluster", "Namespaced"')
    assert found["webhooks[0].failurePolicy"] == 'Unsupported value: "Maybe": supported values: "Fail", "Ignore"'
    assert found["webhooks[0].sideEffects"] == ('Unsupported value: "Some": supported values: "None", '
                                                '"NoneOnDryRun"')
    assert found["webhooks[0].timeoutSeconds"] == "Invalid value: 31: the timeout value must be between 1 and 30 " \
                                                  "seconds"
    assert found["webhooks[0].reinvocationPolicy"] == ('Unsupported value: "Always": supported values: "IfNeeded", '
                                                       '"Never"')
    assert found["webhooks[0].admissionReviewVersions"] == ('Invalid value: []string{"v2"}: must include at least '
                                                            "one of v1, v1beta1")
    assert found["webhooks[0].matchConditions[0].expression"].startswith(
        'Invalid value: "1 +": compilation failed: ERROR: <input>:1:4: Syntax error:')
    assert found["webhooks[0].matchConditions[1].name"] == 'Duplicate value: "c"'
    url_messages = [c["message"] for c in body["details"]["causes"] if c["field"] == "webhooks[0].clientConfig.url"]
    assert url_messages == [
        "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        'Invalid value: "user": user information is not permitted in the URL',
        'Invalid value: "f": fragments are not permitted in the URL',
        'Invalid value: "q=1": query parameters are not permitted in the URL']


async def test_a_client_config_names_exactly_one_of_url_and_service(http: ApiHttp) -> None:
    both = hook("v.example.com", {**URL, "service": {"namespace": "a", "name": "b"}})
    status, body = await http.post(VALIDATING, {"metadata": {"name": "v"}, "webhooks": [both]})
    assert causes(body) == {"webhooks[0].clientConfig": "Required value: exactly one of url or service is required"}
    service = hook("v.example.com", {"service": {"namespace": "", "name": "", "port": 0, "path": "no-slash"}})
    status, body = await http.post(VALIDATING, {"metadata": {"name": "v"}, "webhooks": [service]})
    messages = [(c["field"], c["message"]) for c in body["details"]["causes"]]
    assert messages == [
        ("webhooks[0].clientConfig.service.name", "Required value: service name is required"),
        ("webhooks[0].clientConfig.service.namespace", "Required value: service namespace is required"),
        ("webhooks[0].clientConfig.service.port", "Invalid value: 0: port is not valid: must be between 1 and 65535, "
                                                  "inclusive"),
        ("webhooks[0].clientConfig.service.path", "Invalid value: \"no-slash\": must start with a '/'")]


async def test_webhook_names_are_unique_within_a_configuration(http: ApiHttp) -> None:
    twice = [hook("same.example.com", URL), hook("same.example.com", URL)]
    status, body = await http.post(VALIDATING, {"metadata": {"name": "v"}, "webhooks": twice})
    assert causes(body) == {"webhooks[1].name": 'Duplicate value: "same.example.com"'}


async def test_a_change_of_webhooks_bumps_the_generation(http: ApiHttp) -> None:
    status, created = await http.post(VALIDATING, {"metadata": {"name": "v"}, "webhooks": [hook("v.example.com", URL)]})
    status, updated = await http.patch(f"{VALIDATING}/v", {"metadata": {"labels": {"a": "b"}}})
    assert updated["metadata"]["generation"] == 1
    created["webhooks"][0]["timeoutSeconds"] = 5
    status, updated = await http.put(f"{VALIDATING}/v", {**created, "metadata": updated["metadata"]})
    assert (status, updated["metadata"]["generation"]) == (200, 2)


async def test_the_table_shows_name_webhooks_and_age(http: ApiHttp) -> None:
    await http.post(MUTATING, {"metadata": {"name": "two"}, "webhooks": [hook("a.example.com", URL),
                                                                       hook("b.example.com", URL)]})
    async with http.session.get(MUTATING, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}) as r:
        table = await r.json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Webhooks", "Age"]
    [row] = table["rows"]
    assert row["cells"][:2] == ["two", 2]


async def test_discovery_lists_both_kinds_cluster_scoped(http: ApiHttp) -> None:
    status, resources = await http.get("/apis/admissionregistration.k8s.io/v1")
    found = {r["name"]: r for r in resources["resources"]}
    for plural, kind in (("mutatingwebhookconfigurations", "MutatingWebhookConfiguration"),
                         ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration")):
        assert found[plural]["kind"] == kind and found[plural]["namespaced"] is False
        assert found[plural]["categories"] == ["api-extensions"]
