"""fieldValidation: unknown fields are always dropped; Strict refuses them (and duplicates), Warn (the default)
answers with Warning headers, Ignore says nothing. Free-form fields are never pruned."""

from __future__ import annotations

from typing import Any

import orjson

from minik.api.resources import REGISTRY
from minik.apiserver import fieldvalidation

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def pod(name: str = "web", **container: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox", **container}]}}


async def send(http, method: str, path: str, body: Any, validation: str | None = None,
               content_type: str = "application/json") -> tuple[int, dict[str, Any], list[str]]:
    params = {"fieldValidation": validation} if validation else None
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    async with http.session.request(method, path, data=data, params=params,
                                    headers={"Content-Type": content_type}) as response:
        return response.status, orjson.loads(await response.read()), response.headers.getall("Warning", [])


async def test_strict_refuses_unknown_fields_with_their_paths(http) -> None:
    body = pod(imagee="nginx")
    body["spec"]["foo"] = 1
    status, answer, _ = await send(http, "POST", PODS, body, "Strict")
    assert status == 400 and answer["reason"] == "BadRequest"
    assert answer["message"] == ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
                                 'unknown field "spec.containers[0].imagee", unknown field "spec.foo"')
    status, _ = await http.get(f"{PODS}/web")
    assert status == 404


async def test_strict_refuses_duplicate_fields_in_json_and_yaml(http) -> None:
    raw = (b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","name":"web"},'
           b'"spec":{"containers":[{"name":"c","image":"a","image":"b"}]}}')
    status, answer, _ = await send(http, "POST", PODS, raw, "Strict")
    assert status == 400
    assert answer["message"].endswith('strict decoding error: duplicate field "metadata.name", '
                                      'duplicate field "spec.containers[0].image"')
    yaml_body = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers: []\nspec: {}\n"
    status, answer, _ = await send(http, "POST", PODS, yaml_body, "Strict", "application/yaml")
    assert status == 400 and 'duplicate field "spec"' in answer["message"]


async def test_warn_is_the_default_and_drops_the_unknown_fields(http) -> None:
    body = pod(imagee="nginx")
    body["bogus"] = True
    status, created, warnings = await send(http, "POST", PODS, body)
    assert status == 201, created
    assert warnings == ['299 - "unknown field \\"spec.containers[0].imagee\\"", 299 - "unknown field \\"bogus\\""']
    assert "bogus" not in created and "imagee" not in created["spec"]["containers"][0]
    _, stored = await http.get(f"{PODS}/web")
    assert "imagee" not in stored["spec"]["containers"][0]
    status, _, warnings = await send(http, "POST", PODS, pod("other"), "Warn")
    assert status == 201 and warnings == []


async def test_ignore_drops_unknown_fields_silently(http) -> None:
    status, created, warnings = await send(http, "POST", PODS, pod(imagee="nginx"), "Ignore")
    assert status == 201 and warnings == [] and "imagee" not in created["spec"]["containers"][0]


async def test_free_form_fields_are_never_pruned(http) -> None:
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"any.example.com/key": "v"}, "annotations": {"note": "x"}},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
                 "strategy": {"rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 1}},
                 "template": {"metadata": {"labels": {"app": "d"}, "annotations": {"a/b": "c"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {
                                  "limits": {"cpu": "1", "example.com/gpu": "2"}},
                                  "ports": [{"containerPort": 80}]}],
                                  "nodeSelector": {"disk": "ssd"}}}}}
    status, created, warnings = await send(http, "POST", DEPLOYMENTS, deployment, "Strict")
    assert status == 201 and warnings == [], created
    assert created["metadata"]["labels"] == {"any.example.com/key": "v"}
    assert created["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "50%", "maxUnavailable": 1}
    template = created["spec"]["template"]
    assert template["metadata"]["annotations"] == {"a/b": "c"} and template["spec"]["nodeSelector"] == {"disk": "ssd"}
    assert template["spec"]["containers"][0]["resources"]["limits"]["example.com/gpu"] == "2"
    status, cm, _ = await send(http, "POST", "/api/v1/namespaces/default/configmaps",
                               {"metadata": {"name": "cm"}, "data": {"spec.foo": "1", "under_score": "2"}}, "Strict")
    assert status == 201 and cm["data"] == {"spec.foo": "1", "under_score": "2"}


async def test_updates_and_patches_are_validated_too(http) -> None:
    _, created, _ = await send(http, "POST", PODS, pod())
    changed = {**created, "spec": {**created["spec"], "bogus": 1}}
    status, answer, _ = await send(http, "PUT", f"{PODS}/web", changed, "Strict")
    assert status == 400 and answer["message"].startswith('Pod in version "v1" cannot be handled as a Pod')
    patch = {"metadata": {"labels": {"a": "b"}}, "spec": {"nodeNam": "n1"}}
    status, answer, _ = await send(http, "PATCH", f"{PODS}/web", patch, "Strict", "application/merge-patch+json")
    assert status == 400 and answer["message"] == 'strict decoding error: unknown field "spec.nodeNam"'
    status, patched, warnings = await send(http, "PATCH", f"{PODS}/web", patch, None,
                                           "application/strategic-merge-patch+json")
    assert status == 200 and warnings == ['299 - "unknown field \\"spec.nodeNam\\""']
    assert patched["metadata"]["labels"] == {"a": "b"} and "nodeNam" not in patched["spec"]
    ops = [{"op": "add", "path": "/spec/extra", "value": 1}]
    status, patched, warnings = await send(http, "PATCH", f"{PODS}/web", ops, "Ignore", "application/json-patch+json")
    assert status == 200 and warnings == [] and "extra" not in patched["spec"]
    status, _, warnings = await send(http, "PATCH", f"{PODS}/web", b'{"metadata":{"labels":{"a":"1","a":"2"}}}',
                                     "Warn", "application/merge-patch+json")
    assert status == 200 and warnings == ['299 - "duplicate field \\"metadata.labels.a\\""']


async def test_status_writes_drop_unknown_status_fields(http) -> None:
    _, created, _ = await send(http, "POST", PODS, pod())
    created["status"] = {"phase": "Running", "mood": "happy"}
    status, updated, warnings = await send(http, "PUT", f"{PODS}/web/status", created)
    assert status == 200 and updated["status"]["phase"] == "Running" and "mood" not in updated["status"]
    assert warnings == ['299 - "unknown field \\"status.mood\\""']


async def test_an_unknown_directive_is_invalid(http) -> None:
    status, answer, _ = await send(http, "POST", PODS, pod(), "Loud")
    assert status == 422 and answer["reason"] == "Invalid"
    assert answer["message"] == ('CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: '
                                 '"Loud": supported values: "", "Ignore", "Strict", "Warn"')


def test_prune_reports_paths_in_document_order() -> None:
    obj = {"kind": "Service", "spec": {"ports": [{"port": 80, "x": 1}, {"port": 81, "targetPort": "http"}],
                                       "selector": {"free": "form"}, "y": 2}, "z": 3}
    assert fieldvalidation.prune(obj, "io.k8s.api.core.v1.Service") == ["spec.ports[0].x", "spec.y", "z"]
    assert obj == {"kind": "Service", "spec": {"ports": [{"port": 80}, {"port": 81, "targetPort": "http"}],
                                               "selector": {"free": "form"}}}


def test_warning_values_quote_like_rfc_7234() -> None:
    assert fieldvalidation.warning_value('unknown field "a\\b"') == '299 - "unknown field \\"a\\\\b\\""'
    resource = REGISTRY.resolve("pods")
    checker = fieldvalidation.FieldValidation(resource, {}, "create")
    checker.object({"kind": "Pod", "a": 1, "b": 2})
    assert checker.headers == {"Warning": '299 - "unknown field \\"a\\"", 299 - "unknown field \\"b\\""'}


def test_pruning_a_patch_result_finds_the_unknown_fields_the_patch_brought_in_their_order() -> None:
    from minik.api import schema
    from minik.apiserver.patch import strategic_merge_patch

    pod_type = schema.load().type_of_kind("v1", "Pod")
    stored = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"a": "b"}},
              "spec": {"containers": [{"name": "c", "image": "busybox"}]},
              "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    patch = {"status": {"conditions": [{"type": "Ready", "status": "False", "bogus": 1}], "phaze": "x"},
             "spec": {"nodeNam": "n1"}, "metadata": {"labels": {"c": "d"}}}
    merged = strategic_merge_patch(orjson.loads(orjson.dumps(stored)), patch, "Pod")
    whole = orjson.loads(orjson.dumps(merged))
    assert fieldvalidation.prune_patched(merged, patch, pod_type) == fieldvalidation.prune(whole, pod_type) == \
        ["spec.nodeNam", "status.conditions[0].bogus", "status.phaze"]
    assert merged == whole


def test_the_quick_duplicate_check_never_misses_a_field_given_twice() -> None:
    """The create path skips the exact search when the body has no more colons than its decoding written back:
    colons in strings (escaped quotes around them included) count the same on both sides, a colon written as a
    \\u escape makes it search, and every duplicate, however deep, is found."""
    same = [b'{"a":1,"b":{"c":"x:y\\":"}}', b'{ "a" : [ {"k":"v"}, {"k":"\\\\"} ], "t": "12:00" }',
            b'{"metadata":{"annotations":{"a:b":"c:d"}}}']
    twice = [b'{"a":1,"a":2}', b'{"a":{"b":1,"b":1}}', b'{"a":[{"k":"v:\\"","k":"w"}]}',
             b'{"spec":{"containers":[{"name":"c","image":"x","image":"y"}]}}',
             b'{"a":"x","a":"\\u003a"}']
    for body in same:
        assert not fieldvalidation.maybe_duplicates(body, orjson.loads(body)), body
    for body in twice:
        assert fieldvalidation.maybe_duplicates(body, orjson.loads(body)), body
        assert fieldvalidation.duplicate_fields(body, "application/json"), body
