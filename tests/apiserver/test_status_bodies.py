"""Status bodies byte for byte as Kubernetes writes them (some clients compare them exactly): the fields in the
order kind, apiVersion, metadata, status, message, reason, details, code; details' own in the order name, group,
kind, uid, causes (each reason, message, field), retryAfterSeconds, the empty ones left out; Go's escapes of
``<``, ``>`` and ``&``; and the newline Go's encoder ends the body with."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from minik.api.errors import Cause, StatusError, internal, invalid

if TYPE_CHECKING:
    from conftest import ApiHttp

PODS = "/api/v1/namespaces/default/pods"
POD = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


async def raw(http: ApiHttp, method: str, path: str, body: object = None) -> tuple[int, bytes]:
    data = orjson.dumps(body) if body is not None else None
    async with http.session.request(method, path, data=data, headers={"Content-Type": "application/json"}) as answer:
        return answer.status, await answer.read()


async def test_a_not_found_body_is_kubernetes_bytes(http: ApiHttp) -> None:
    assert await raw(http, "GET", f"{PODS}/nope") == (404, (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \\"nope\\" not found",'
        b'"reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404}\n'))


async def test_an_invalid_body_with_causes_is_kubernetes_bytes(http: ApiHttp) -> None:
    lease = {"metadata": {"name": "lock"}, "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}}
    assert await raw(http, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease) == (422, (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Lease.coordination.k8s.io '
        b'\\"lock\\" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0, '
        b'spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]","reason":"Invalid",'
        b'"details":{"name":"lock","group":"coordination.k8s.io","kind":"Lease","causes":['
        b'{"reason":"FieldValueInvalid","message":"Invalid value: 0: must be greater than 0",'
        b'"field":"spec.leaseDurationSeconds"},'
        b'{"reason":"FieldValueInvalid","message":"Invalid value: -1: must be greater than or equal to 0",'
        b'"field":"spec.leaseTransitions"}]},"code":422}\n'))


async def test_html_characters_in_a_status_are_escaped_as_go_escapes_them(http: ApiHttp) -> None:
    status, body = await raw(http, "GET", f"{PODS}/a%26b%3Cc%3E")
    assert status == 404
    assert body == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
                    b'"pods \\"a\\u0026b\\u003cc\\u003e\\" not found","reason":"NotFound","details":'
                    b'{"name":"a\\u0026b\\u003cc\\u003e","kind":"pods"},"code":404}\n')
    assert orjson.loads(body)["details"]["name"] == "a&b<c>"


async def test_a_forbidden_body_orders_its_details_as_kubernetes(http: ApiHttp) -> None:
    status, body = await raw(http, "DELETE", "/api/v1/namespaces/default")
    assert status == 403
    assert b'"reason":"Forbidden","details":{"name":"default","kind":"namespaces"},"code":403}\n' in body


async def test_success_statuses_are_kubernetes_bytes(http: ApiHttp) -> None:
    assert (await raw(http, "POST", PODS, POD))[0] == 201
    assert await raw(http, "POST", f"{PODS}/web/binding", {"target": {"name": "node-1"}}) == (
        201, b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}\n')
    assert await raw(http, "POST", f"{PODS}/web/eviction",
                     {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web"}}) == (
        201, b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}\n')


def test_details_and_causes_are_written_in_kubernetes_field_order_whatever_order_they_were_given_in() -> None:
    error = StatusError(504, "Timeout", "slow", {"retryAfterSeconds": 1, "causes": [
        {"field": "f", "message": "m", "reason": "r"}, {"field": "", "message": "only"}],
        "kind": "pods", "uid": "u", "group": "apps", "name": "n"})
    assert error.body() == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"slow","reason":"Timeout",'
        b'"details":{"name":"n","group":"apps","kind":"pods","uid":"u","causes":[{"reason":"r","message":"m",'
        b'"field":"f"},{"message":"only"}],"retryAfterSeconds":1},"code":504}\n')


def test_a_cause_without_a_field_and_an_internal_error_are_written_as_kubernetes_writes_them() -> None:
    assert invalid("Pod", "", "web", [Cause("", "FieldValueRequired", "Required value")]).body() == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Pod \\"web\\" is invalid: '
        b'Required value","reason":"Invalid","details":{"name":"web","kind":"Pod","causes":[{"reason":'
        b'"FieldValueRequired","message":"Required value"}]},"code":422}\n')
    assert internal("boom").body() == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Internal error occurred: '
        b'boom","reason":"InternalError","details":{"causes":[{"message":"boom"}]},"code":500}\n')
