"""Bad input gets the right 4xx Status, never a 5xx, and nothing is stored."""

from __future__ import annotations

import pytest

PODS = "/api/v1/namespaces/default/pods"
GOOD = (b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ok"},'
        b'"spec":{"containers":[{"name":"c","image":"busybox:1"}]}}')


@pytest.mark.parametrize(("data", "content_type", "code", "reason"), [
    (b"{not json", "application/json", 400, "BadRequest"),
    (b"[1, 2]", "application/json", 400, "BadRequest"),
    (b"\xff\xfe", "application/json", 400, "BadRequest"),
    (b"a: [b", "application/yaml", 400, "BadRequest"),
    (b"a: &x [1]\nb: *x\n", "application/yaml", 400, "BadRequest"),
    (b"x" * 10, "text/plain", 415, "UnsupportedMediaType"),
    (b'{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}', "application/json", 400, "BadRequest"),
    (b'{"metadata":{"name":"Not_A_Name"},"spec":{"containers":[{"name":"c","image":"b"}]}}', "application/json",
     422, "Invalid"),
    (b'{"metadata":{"name":"ok","labels":{"bad key!":"v"}},"spec":{"containers":[{"name":"c","image":"b"}]}}',
     "application/json", 422, "Invalid"),
    (b'{"metadata":{"name":"ok"},"spec":{"containers":[]}}', "application/json", 422, "Invalid"),
    (b'{"metadata":"nope"}', "application/json", 400, "BadRequest"),
    (b'{"metadata":{"name":"ok","namespace":"other"},"spec":{"containers":[{"name":"c","image":"b"}]}}',
     "application/json", 400, "BadRequest"),
])
async def test_bad_create_bodies_are_refused_and_nothing_is_stored(cluster, http, data: bytes, content_type: str,
                                                                   code: int, reason: str) -> None:
    before = cluster.store.revision
    status, body = await http.call("POST", PODS, data=data, content_type=content_type)
    assert (status, body.get("reason")) == (code, reason), body
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == code
    assert cluster.store.revision == before


async def test_an_invalid_object_names_each_field_in_the_causes(http) -> None:
    data = b'{"metadata":{"name":"UPPER","labels":{"-bad":"v"}},"spec":{"containers":[{"name":"c"}]}}'
    status, body = await http.call("POST", PODS, data=data)
    assert status == 422
    fields = {c["field"] for c in body["details"]["causes"]}
    assert {"metadata.name", "metadata.labels", "spec.containers[0].image"} <= fields
    assert body["message"].startswith('Pod "UPPER" is invalid: ')


async def test_a_body_over_3_mib_is_refused_before_it_is_parsed(cluster, http) -> None:
    before = cluster.store.revision
    status, body = await http.call("POST", PODS, data=b"{" + b" " * (3 * 1024 * 1024) + b"}")
    assert status == 413 and body["reason"] == "RequestEntityTooLarge"
    assert cluster.store.revision == before
    assert (await http.get("/healthz"))[0] == 200  # and the server carries on


async def test_yaml_bodies_are_accepted(http) -> None:
    data = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  when: 2024-01-01\n"
    status, body = await http.call("POST", "/api/v1/namespaces/default/configmaps", data=data,
                                   content_type="application/yaml")
    assert status == 201, body
    assert body["data"] == {"when": "2024-01-01"}


@pytest.mark.parametrize(("method", "path", "code"), [
    ("GET", "/api/v1/namespaces/default/widgets", 404),
    ("GET", "/apis/nope.example.com/v1/things", 404),
    ("GET", "/api/v1/namespaces/default/pods/a/b/c/d", 404),
    ("PUT", "/api/v1/namespaces/default/pods", 405),
    ("POST", "/api/v1/namespaces/default/pods/web", 405),
    ("GET", "/api/v1/namespaces/default/configmaps/x/status", 404),
    ("GET", "/nonsense", 404),
])
async def test_unknown_paths_and_verbs_get_a_status(http, method: str, path: str, code: int) -> None:
    status, body = await http.call(method, path)
    assert status == code and body["kind"] == "Status"


async def test_bad_query_parameters_are_bad_requests(http) -> None:
    for params in ({"limit": "-1"}, {"limit": "lots"}, {"timeoutSeconds": "x", "watch": "true"},
                   {"resourceVersion": "abc"}, {"resourceVersionMatch": "Sometimes", "resourceVersion": "1"}):
        status, body = await http.get(PODS, **params)
        assert status == 400, (params, body)


async def test_update_of_a_name_other_than_the_urls_is_refused(http) -> None:
    await http.call("POST", PODS, data=GOOD)
    status, body = await http.put(f"{PODS}/ok", {"metadata": {"name": "other"}, "spec": {}})
    assert status == 400 and "does not match the name on the URL" in body["message"]


async def test_pod_spec_fields_are_immutable(http) -> None:
    _, created = await http.call("POST", PODS, data=GOOD)
    created["spec"]["restartPolicy"] = "Never"
    status, body = await http.put(f"{PODS}/ok", created)
    assert status == 422 and body["reason"] == "Invalid"
    # strategic merge keeps the container's service account volume mount (a merge patch would drop it: 422)
    status, body = await http.patch(f"{PODS}/ok", {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}},
                                    "application/strategic-merge-patch+json")
    assert status == 200 and body["spec"]["containers"][0]["image"] == "busybox:2"


async def test_a_future_resource_version_times_out_rather_than_hangs(http) -> None:
    status, body = await http.get(PODS, resourceVersion="99999999")
    assert status == 504 and body["reason"] == "Timeout"
    assert body["message"].startswith("Timeout: Too large resource version: 99999999, current: ")
    # client-go's reflector recognises it by this cause, and lists again from the latest
    assert body["details"] == {"causes": [{"reason": "ResourceVersionTooLarge",
                                           "message": "Too large resource version"}], "retryAfterSeconds": 1}


@pytest.mark.parametrize(("data", "content_type"), [
    (b"[" * 100_000 + b"]" * 100_000, "application/json"),
    (b'{"metadata":' * 5000 + b"{}" + b"}" * 5000, "application/json"),
    (b"a:\n" + b"".join(b" " * i + b"- \n" for i in range(1, 3000)), "application/yaml"),
    (b"[" * 50_000, "application/yaml"),
    (b'{"metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"b","x":1e999999}]}}', "application/json"),
    (b'{"metadata":{"name":"\\ud800"}}', "application/json"),
])
async def test_hostile_bodies_are_4xx_and_the_server_keeps_serving(cluster, http, data: bytes, content_type: str
                                                                   ) -> None:
    before = cluster.store.revision
    status, body = await http.call("POST", PODS, data=data, content_type=content_type)
    assert 400 <= status < 500, body
    assert cluster.store.revision == before
    assert (await http.get("/readyz"))[0] == 200


async def test_a_namespace_named_kube_system_with_a_trailing_newline_is_refused(cluster, http) -> None:
    before = cluster.store.revision
    status, body = await http.post("/api/v1/namespaces", {"metadata": {"name": "kube-system\n"}})
    assert (status, body["reason"]) == (422, "Invalid"), body
    assert "metadata.name" in {c["field"] for c in body["details"]["causes"]}
    assert cluster.store.revision == before
    _, listed = await http.get("/api/v1/namespaces")
    assert [ns["metadata"]["name"] for ns in listed["items"]].count("kube-system") == 1
    assert all("\n" not in ns["metadata"]["name"] for ns in listed["items"])


@pytest.mark.parametrize(("path", "body", "field"), [
    (PODS, {"metadata": {"name": "ok", "labels": {"app\n": "web"}}}, "metadata.labels"),
    (PODS, {"metadata": {"name": "ok", "labels": {"app": "web\n"}}}, "metadata.labels"),
    (PODS, {"metadata": {"name": "ok", "annotations": {"example.com/note\n": "x"}}}, "metadata.annotations"),
    (PODS, {"metadata": {"name": "ok", "finalizers": ["example.com/cleanup\n"]}}, "metadata.finalizers"),
    (PODS, {"metadata": {"name": "ok\n"}}, "metadata.name"),
    ("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "ok"}, "data": {"key\n": "v"}}, "data[key\n]"),
    ("/api/v1/namespaces/default/secrets", {"metadata": {"name": "ok"}, "stringData": {"key\n": "v"}},
     "data[key\n]"),
])
async def test_keys_and_values_with_a_trailing_newline_are_refused(cluster, http, path: str, body: dict,
                                                                   field: str) -> None:
    if path == PODS:
        body = {**body, "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}
    before = cluster.store.revision
    status, answer = await http.post(path, body)
    assert (status, answer["reason"]) == (422, "Invalid"), answer
    assert field in {c["field"] for c in answer["details"]["causes"]}
    assert cluster.store.revision == before


async def test_a_resource_version_with_a_trailing_newline_is_a_bad_request(http) -> None:
    for value in ("5\n", " 5", "1_0", "\u0665", "9" * 5000):
        status, body = await http.get(PODS, resourceVersion=value)
        assert (status, body["reason"]) == (400, "BadRequest"), (value, body)
