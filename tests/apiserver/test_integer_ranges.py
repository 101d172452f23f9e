"""Numbers that do not fit their Go integer type are refused as Kubernetes' decoder refuses them, and never stored:
a create or update is a 400 BadRequest, a patch a 422 Invalid on the field ``patch``, a query parameter that does
not fit in 64 bits a 400. Every integer field of every kind served is checked, by the width schema.json gives it."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from protobuf_wire import PROTOBUF, encode_object

from minik.api import schema
from minik.api.resources import REGISTRY
from minik.api.schema import INT32, INT64, IntRange
from minik.apiserver import fieldvalidation, protobuf
from minik.apiserver.openapi import property_schema

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
PODS = "/api/v1/namespaces/default/pods"
HUGE = 1099511627776  # 2^40: the replicas of the security review's report
OVER_64_BITS = b"18446744073709551616"  # 2^64, which the JSON decoder can only read as a float
REPLICAS_MESSAGE = ("json: cannot unmarshal number 1099511627776 into Go struct field DeploymentSpec.spec.replicas "
                    "of type int32")


def deployment(name: str = "web", replicas: Any = 1) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def pod(name: str = "web") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


# -- over HTTP ------------------------------------------------------------------------------------------------
async def test_a_deployment_with_replicas_over_int32_is_refused_and_nothing_is_stored(cluster, http) -> None:
    before = cluster.store.revision
    status, body = await http.post(DEPLOYMENTS, deployment(replicas=HUGE))
    assert (status, body["reason"]) == (400, "BadRequest"), body
    assert body["message"] == f'Deployment in version "v1" cannot be handled as a Deployment: {REPLICAS_MESSAGE}'
    assert cluster.store.revision == before
    assert (await http.get(f"{DEPLOYMENTS}/web"))[0] == 404


@pytest.mark.parametrize("validation", ["Strict", "Warn", "Ignore"])
async def test_no_field_validation_directive_lets_an_overflow_through(cluster, http, validation: str) -> None:
    before = cluster.store.revision
    status, body = await http.call("POST", DEPLOYMENTS, deployment(replicas=HUGE),
                                   params={"fieldValidation": validation})
    assert status == 400 and body["message"].endswith(REPLICAS_MESSAGE)
    assert cluster.store.revision == before


async def test_a_yaml_body_is_held_to_the_same_widths(cluster, http) -> None:
    data = (b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1099511627776\n"
            b"  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
            b"    spec: {containers: [{name: c, image: busybox}]}\n")
    status, body = await http.call("POST", DEPLOYMENTS, data=data, content_type="application/yaml")
    assert status == 400 and body["message"].endswith(REPLICAS_MESSAGE)
    assert (await http.get(f"{DEPLOYMENTS}/web"))[0] == 404


async def test_a_number_over_64_bits_in_an_int64_field_is_refused(http) -> None:
    data = orjson.dumps(pod()).replace(b'"containers"', b'"terminationGracePeriodSeconds":' + OVER_64_BITS +
                                       b',"containers"')
    status, body = await http.call("POST", PODS, data=data)
    assert status == 400, body
    assert body["message"] == ('Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number '
                               '18446744073709551616 into Go struct field PodSpec.spec.terminationGracePeriodSeconds '
                               'of type int64')
    assert (await http.get(f"{PODS}/web"))[0] == 404


async def test_a_nested_field_is_named_by_its_struct_and_its_path_without_indices(http) -> None:
    body = deployment()
    body["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}, {"containerPort": -2 ** 31 - 1}]
    status, answer = await http.post(DEPLOYMENTS, body)
    assert status == 400
    assert answer["message"].endswith("json: cannot unmarshal number -2147483649 into Go struct field ContainerPort."
                                      "spec.template.spec.containers.ports.containerPort of type int32")


async def test_a_fraction_in_an_integer_field_is_refused(http) -> None:
    status, body = await http.post(DEPLOYMENTS, deployment(replicas=1.5))
    assert status == 400 and body["message"].endswith(
        "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32")


async def test_the_largest_numbers_that_fit_are_accepted(http) -> None:
    status, body = await http.post(DEPLOYMENTS, deployment(replicas=2 ** 31 - 1))
    assert status == 201, body
    assert body["spec"]["replicas"] == 2 ** 31 - 1


async def test_an_update_with_an_overflow_is_a_bad_request_and_changes_nothing(http) -> None:
    _, created = await http.post(DEPLOYMENTS, deployment())
    created["spec"]["replicas"] = HUGE
    status, body = await http.put(f"{DEPLOYMENTS}/web", created)
    assert status == 400 and body["message"].endswith(REPLICAS_MESSAGE)
    created["status"] = {"replicas": 2 ** 31}
    created["spec"]["replicas"] = 1
    status, body = await http.put(f"{DEPLOYMENTS}/web/status", created)
    assert status == 400 and body["message"].endswith(
        "json: cannot unmarshal number 2147483648 into Go struct field DeploymentStatus.status.replicas of type int32")
    _, held = await http.get(f"{DEPLOYMENTS}/web")
    assert held["spec"]["replicas"] == 1 and held["metadata"]["resourceVersion"] == \
        created["metadata"]["resourceVersion"]


@pytest.mark.parametrize(("content_type", "patch"), [
    ("application/merge-patch+json", {"spec": {"replicas": HUGE}}),
    ("application/strategic-merge-patch+json", {"spec": {"replicas": HUGE}}),
    ("application/json-patch+json", [{"op": "replace", "path": "/spec/replicas", "value": HUGE}]),
    ("application/apply-patch+yaml", deployment(replicas=HUGE)),
])
async def test_a_patch_to_an_overflow_is_invalid_on_the_field_patch(http, content_type: str, patch: Any) -> None:
    _, created = await http.post(DEPLOYMENTS, deployment())
    params = {"fieldManager": "test"} if content_type == "application/apply-patch+yaml" else None
    status, body = await http.call("PATCH", f"{DEPLOYMENTS}/web", patch, content_type=content_type, params=params)
    assert (status, body["reason"]) == (422, "Invalid"), body
    [cause] = body["details"]["causes"]
    assert cause["field"] == "patch" and cause["reason"] == "FieldValueInvalid"
    assert cause["message"].startswith('Invalid value: "{') and cause["message"].endswith(f": {REPLICAS_MESSAGE}")
    assert body["message"] == f' "" is invalid: patch: {cause["message"]}'
    _, held = await http.get(f"{DEPLOYMENTS}/web")
    assert held["spec"]["replicas"] == 1
    assert held["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_a_scale_over_int32_is_refused_whether_put_or_patched(http) -> None:
    _, created = await http.post(DEPLOYMENTS, deployment())
    message = "json: cannot unmarshal number 1099511627776 into Go struct field ScaleSpec.spec.replicas of type int32"
    status, body = await http.put(f"{DEPLOYMENTS}/web/scale", {"apiVersion": "autoscaling/v1", "kind": "Scale",
                                                               "metadata": {"name": "web"},
                                                               "spec": {"replicas": HUGE}})
    assert status == 400 and body["message"] == f'Scale in version "v1" cannot be handled as a Scale: {message}'
    status, body = await http.patch(f"{DEPLOYMENTS}/web/scale", {"spec": {"replicas": HUGE}})
    assert status == 422 and body["details"]["causes"][0]["field"] == "patch"
    assert body["details"]["causes"][0]["message"].endswith(message)
    _, held = await http.get(f"{DEPLOYMENTS}/web")
    assert held["spec"]["replicas"] == 1
    assert held["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_a_grace_period_over_64_bits_deletes_nothing(http) -> None:
    await http.post(PODS, pod())
    status, body = await http.call("DELETE", f"{PODS}/web", data=b'{"gracePeriodSeconds":' + OVER_64_BITS + b"}")
    assert (status, body["reason"]) == (400, "BadRequest"), body
    assert body["message"] == ("json: cannot unmarshal number 18446744073709551616 into Go struct field "
                               "DeleteOptions.gracePeriodSeconds of type int64")
    status, body = await http.delete(f"{PODS}/web", gracePeriodSeconds=OVER_64_BITS.decode())
    assert (status, body["reason"]) == (400, "BadRequest"), body
    assert body["message"] == "gracePeriodSeconds: Invalid value: '18446744073709551616': must fit in a 64-bit integer"
    eviction = (b'{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web"},'
                b'"deleteOptions":{"gracePeriodSeconds":' + OVER_64_BITS + b"}}")
    status, body = await http.call("POST", f"{PODS}/web/eviction", data=eviction)
    assert status == 400 and body["message"] == (
        'Eviction in version "v1" cannot be handled as a Eviction: json: cannot unmarshal number '
        "18446744073709551616 into Go struct field DeleteOptions.deleteOptions.gracePeriodSeconds of type int64")
    _, held = await http.get(f"{PODS}/web")
    assert "deletionTimestamp" not in held["metadata"]


async def test_the_largest_grace_period_is_a_grace_period(http) -> None:
    await http.post(PODS, pod())
    status, body = await http.delete(f"{PODS}/web", gracePeriodSeconds=str(2 ** 63 - 1))
    assert status in (200, 202), body


@pytest.mark.parametrize("name", ["tailLines", "limitBytes", "sinceSeconds"])
async def test_log_options_over_64_bits_are_bad_requests(http, name: str) -> None:
    await http.post(PODS, pod())
    status, body = await http.get(f"{PODS}/web/log", **{name: OVER_64_BITS.decode()})
    assert (status, body["reason"]) == (400, "BadRequest"), body
    assert body["message"] == f"{name}: Invalid value: '18446744073709551616': must fit in a 64-bit integer"


@pytest.mark.parametrize("value", ["18446744073709551616", "-9223372036854775809", " 5", "1_0", "\u0661"])
async def test_list_limits_and_timeouts_that_go_cannot_parse_are_bad_requests(http, value: str) -> None:
    for params in ({"limit": value}, {"watch": "true", "timeoutSeconds": value}):
        status, body = await http.get(PODS, **params)
        assert (status, body["reason"]) == (400, "BadRequest"), (params, body)


async def test_a_protobuf_body_wraps_an_int32_as_go_does_and_stores_what_fits(http) -> None:
    data = encode_object(deployment(replicas=HUGE))
    assert fieldvalidation.check_decodable(protobuf.decode(data), "io.k8s.api.apps.v1.Deployment") is None
    status, body = await http.call("POST", DEPLOYMENTS, data=data, content_type=PROTOBUF)
    assert status == 201, body
    assert body["spec"]["replicas"] == 0  # 2^40 truncated to 32 bits, as Go's generated Unmarshal does


# -- the schema the check is driven by ------------------------------------------------------------------------
def test_every_integer_field_of_the_schema_has_a_go_width() -> None:
    s = schema.load()
    kinds = {p.type.lstrip("[]{}") for t in s.types.values() for p in t.properties.values()}
    assert "integer" not in kinds
    spec = s.types["io.k8s.api.apps.v1.DeploymentSpec"].properties
    assert spec["replicas"].type == "int32" and spec["revisionHistoryLimit"].type == "int32"
    assert s.types["io.k8s.api.core.v1.PodSpec"].properties["terminationGracePeriodSeconds"].type == "int64"
    assert s.types["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].properties["generation"].type == "int64"
    assert property_schema("int32") == {"type": "integer", "format": "int32"}


def _integer_routes(s: schema.Schema, root: str) -> list[tuple[list[tuple[str, str]], str, IntRange]]:
    """One route (field name, how its value nests) from ``root`` to every integer field of every type it reaches,
    with the type holding the field."""
    routes: list[tuple[list[tuple[str, str]], str, IntRange]] = []
    seen = {root}
    queue: list[tuple[str, list[tuple[str, str]]]] = [(root, [])]
    while queue:
        type_name, route = queue.pop(0)
        for field, walk in s.fields(type_name).items():
            shape = ""
            while walk is not None and walk[0] in ("[]", "{}"):
                shape += walk[0]
                walk = walk[1]
            if walk is None:
                continue
            how, inner, _go = walk
            if how == "#":
                routes.append((route + [(field, shape)], type_name, inner))
            elif how == "@" and inner not in seen:
                seen.add(inner)
                queue.append((inner, route + [(field, shape)]))
    return routes


def _build(route: list[tuple[str, str]], value: Any) -> dict[str, Any]:
    for field, shape in reversed(route):
        for how in reversed([shape[i:i + 2] for i in range(0, len(shape), 2)]):
            value = [value] if how == "[]" else {"key": value}
        value = {field: value}
    return value


@pytest.mark.parametrize("kind", sorted({f"{t.api_version}/{t.kind}" for t in REGISTRY.types}))
def test_every_integer_field_of_every_kind_is_held_to_its_width(kind: str) -> None:
    s = schema.load()
    api_version, _, name = kind.rpartition("/")
    root = s.type_of_kind(api_version, name)
    assert root is not None
    routes = _integer_routes(s, root)
    assert routes
    for route, holder, width in routes:
        assert width in (INT32, INT64)
        path = ".".join(field for field, _ in route)
        for fitting in (width.high, width.low):
            assert fieldvalidation.check_decodable(_build(route, fitting), root) is None, path
        for too_far in (width.high + 1, width.low - 1):
            found = fieldvalidation.check_decodable(_build(route, too_far), root)
            assert found is not None, path
            assert found.message == (f"json: cannot unmarshal number {too_far} into Go struct field "
                                     f"{holder.rsplit('.', 1)[1]}.{path} of type int{width.bits}")
