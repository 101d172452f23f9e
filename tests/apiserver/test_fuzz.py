"""Hypothesis sends malformed and hostile requests to every route of the API's own /openapi/v3 (over HTTPS with
the admin token, some with none or a forged one): no answer is a 5xx, a rejected request stores nothing, and the
server keeps serving. scripts/fuzz_api.py runs the same with 100,000 requests."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import HealthCheck, given, settings

from minik.cluster import Cluster
from minik.testing.fuzz import ClusterThread, Fuzzer, FuzzRequest, fuzz_requests, routes

if TYPE_CHECKING:
    from conftest import ApiHttp


def test_fuzzed_requests_to_every_route_never_get_a_5xx_and_rejected_ones_store_nothing() -> None:
    with ClusterThread() as target:
        fuzzer = Fuzzer(target)
        every = routes(target.openapi())
        assert {"/api/v1/namespaces/{namespace}/pods", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"} \
            <= {r.path for r in every}
        try:
            @settings(max_examples=400, deadline=None, database=None, suppress_health_check=list(HealthCheck))
            @given(fuzz_requests(every, target.token))
            def one(request: FuzzRequest) -> None:
                assert fuzzer.check(request) is None

            one()
            assert fuzzer.still_serving()
        finally:
            fuzzer.close()


async def test_a_lone_surrogate_in_a_yaml_body_is_replaced_not_a_500(http: ApiHttp) -> None:
    body = b'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "\\ud800"}\n'
    status, answer = await http.call("POST", "/api/v1/namespaces/default/configmaps", data=body,
                                     content_type="application/yaml")
    assert (status, answer["reason"]) == (422, "Invalid")
    assert '"\ufffd"' in answer["message"]
    body = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, annotations: {a: "\\ud83d\\ude00 \\udc00"}}\n'
    status, answer = await http.call("POST", "/api/v1/namespaces/default/configmaps", data=body.encode(),
                                     content_type="application/yaml")
    assert status == 201
    assert answer["metadata"]["annotations"]["a"] == "\U0001f600 \ufffd"


async def test_server_side_apply_of_a_configuration_without_fields_creates_the_object(http: ApiHttp) -> None:
    status, answer = await http.call("PATCH", "/api/v1/namespaces/default/configmaps/bare",
                                     data=b'{"apiVersion": "v1", "kind": "ConfigMap"}',
                                     content_type="application/apply-patch+yaml", params={"fieldManager": "m"})
    assert (status, answer["metadata"]["name"]) == (201, "bare")


async def test_an_unknown_field_named_with_control_characters_is_warned_about_safely(http: ApiHttp) -> None:
    body = b'{"metadata": {"name": "ctl"}, "data": {}, "\\u0005x\\r\\nSet-Cookie: a": 1}'
    async with http.session.post("/api/v1/namespaces/default/configmaps", data=body,
                                 headers={"Content-Type": "application/json"}) as response:
        assert response.status == 201
        assert response.headers["Warning"] == '299 - "unknown field \\"\\x05x\\r\\nSet-Cookie: a\\""'
        assert "Set-Cookie" not in {k.title() for k in response.headers}


async def test_a_refused_deletecollection_deletes_nothing(cluster: Cluster, http: ApiHttp) -> None:
    assert cluster.store is not None
    assert (await http.post("/api/v1/namespaces", {"metadata": {"name": "aaa"}}))[0] == 201  # listed first
    before = cluster.store.revision
    status, answer = await http.delete("/api/v1/namespaces")
    assert (status, answer["message"]) == (403, 'namespaces "default" is forbidden: this namespace may not be '
                                                'deleted')
    assert cluster.store.revision == before
    status, aaa = await http.get("/api/v1/namespaces/aaa")
    assert (status, aaa["status"]["phase"]) == (200, "Active")
