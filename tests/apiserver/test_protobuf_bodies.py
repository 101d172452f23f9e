"""Protobuf request bodies through the API server: they take the JSON path (defaults, validation, field
validation, subresources), bad ones are 400 Statuses that store nothing, and patches stay JSON-only (415)."""

from __future__ import annotations

from protobuf_wire import KUBECTL_CREATE_NAMESPACE, PROTOBUF, entry, envelope, metadata, num, sub, text

PODS = "/api/v1/namespaces/default/pods"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def pod_body(name: str) -> bytes:
    container = sub(2, text(1, "c"), text(2, "busybox:1.36"), text(13, ""), text(14, ""))
    return envelope("v1", "Pod", metadata(name), sub(2, container, text(3, ""), text(6, "")), sub(3))


async def test_a_namespace_created_as_kubectl_sends_it_gets_its_defaults(http) -> None:
    status, body = await http.call("POST", "/api/v1/namespaces", data=KUBECTL_CREATE_NAMESPACE,
                                   content_type=PROTOBUF, params={"fieldValidation": "Strict"})
    assert status == 201, body
    status, held = await http.get("/api/v1/namespaces/foo")
    assert status == 200
    assert held["spec"] == {"finalizers": ["kubernetes"]} and held["status"] == {"phase": "Active"}
    assert held["metadata"]["labels"] == {"kubernetes.io/metadata.name": "foo"}


async def test_a_pod_created_from_protobuf_is_defaulted_like_one_from_json(http) -> None:
    status, body = await http.call("POST", PODS, data=pod_body("web"), content_type=PROTOBUF)
    assert status == 201, body
    container = body["spec"]["containers"][0]
    assert container["terminationMessagePath"] == "/dev/termination-log"  # "" on the wire meant unset
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert body["spec"]["restartPolicy"] == "Always" and body["spec"]["dnsPolicy"] == "ClusterFirst"


async def test_an_update_in_protobuf_replaces_the_object(http) -> None:
    await http.post(CONFIGMAPS, {"metadata": {"name": "cfg"}, "data": {"a": "1"}})
    _, current = await http.get(f"{CONFIGMAPS}/cfg")
    meta = sub(1, text(1, "cfg"), text(3, "default"), text(6, current["metadata"]["resourceVersion"]))
    status, body = await http.call("PUT", f"{CONFIGMAPS}/cfg", data=envelope("v1", "ConfigMap", meta,
                                                                            entry(2, "b", text(2, "2"))),
                                   content_type=PROTOBUF)
    assert status == 200, body
    assert (await http.get(f"{CONFIGMAPS}/cfg"))[1]["data"] == {"b": "2"}


async def test_an_invalid_object_in_protobuf_is_invalid_as_in_json(cluster, http) -> None:
    before = cluster.store.revision
    status, body = await http.call("POST", PODS, data=envelope("v1", "Pod", metadata("Bad_Name"), sub(2)),
                                   content_type=PROTOBUF)
    assert status == 422 and body["reason"] == "Invalid"
    assert {c["field"] for c in body["details"]["causes"]} >= {"metadata.name", "spec.containers"}
    assert cluster.store.revision == before


async def test_malformed_protobuf_and_unknown_kinds_are_bad_requests_that_store_nothing(cluster, http) -> None:
    before = cluster.store.revision
    for data in (b"k8s\x00\x0a\x10\x0a", b"k8s\x00\x0b", b'{"kind":"Pod"}',
                 envelope("v1", "Gadget", metadata("x")), envelope("v1", "ConfigMap", num(1, 3))):
        status, body = await http.call("POST", PODS, data=data, content_type=PROTOBUF)
        assert (status, body["reason"]) == (400, "BadRequest"), body
        assert body["message"].startswith("the protobuf body could not be decoded: ")
    assert cluster.store.revision == before


async def test_a_protobuf_object_of_another_kind_is_refused(cluster, http) -> None:
    before = cluster.store.revision
    status, body = await http.call("POST", CONFIGMAPS, data=pod_body("web"), content_type=PROTOBUF)
    assert status == 400 and body["reason"] == "BadRequest"
    assert cluster.store.revision == before


async def test_a_patch_in_protobuf_is_unsupported_and_the_message_lists_the_patch_types(http) -> None:
    await http.post(CONFIGMAPS, {"metadata": {"name": "cfg"}})
    status, body = await http.call("PATCH", f"{CONFIGMAPS}/cfg", data=envelope("v1", "ConfigMap", metadata("cfg")),
                                   content_type=PROTOBUF)
    assert status == 415 and body["reason"] == "UnsupportedMediaType"
    assert body["message"] == ('the body of the request was in an unknown format - accepted media types include: '
                               'application/json-patch+json, application/merge-patch+json, '
                               'application/apply-patch+yaml, application/strategic-merge-patch+json '
                               f'(got "{PROTOBUF}")')


async def test_an_unknown_body_type_is_refused_with_the_types_really_accepted(http) -> None:
    status, body = await http.call("POST", CONFIGMAPS, data=b"x", content_type="text/plain")
    assert status == 415
    assert body["message"] == ('the body of the request was in an unknown format - accepted media types include: '
                               'application/json, application/yaml, application/vnd.kubernetes.protobuf '
                               '(got "text/plain")')


async def test_delete_options_in_protobuf_are_honoured(http) -> None:
    await http.post(CONFIGMAPS, {"metadata": {"name": "cfg"}})
    options = envelope("meta.k8s.io/v1", "DeleteOptions", sub(2, text(1, "not-the-uid")))
    status, body = await http.call("DELETE", f"{CONFIGMAPS}/cfg", data=options, content_type=PROTOBUF)
    assert status == 409 and body["reason"] == "Conflict"  # the precondition was read
    options = envelope("v1", "DeleteOptions", text(5, "All"))
    status, _ = await http.call("DELETE", f"{CONFIGMAPS}/cfg", data=options, content_type=PROTOBUF)
    assert status == 200 and (await http.get(f"{CONFIGMAPS}/cfg"))[0] == 200  # a dry run deletes nothing
    status, _ = await http.call("DELETE", f"{CONFIGMAPS}/cfg", data=envelope("v1", "DeleteOptions"),
                                content_type=PROTOBUF)
    assert status == 200 and (await http.get(f"{CONFIGMAPS}/cfg"))[0] == 404


async def test_binding_and_eviction_bodies_in_protobuf_reach_their_subresources(http) -> None:
    await http.call("POST", PODS, data=pod_body("web"), content_type=PROTOBUF)
    binding = envelope("v1", "Binding", metadata("web"), sub(2, text(1, "Node"), text(3, "node-1")))
    status, body = await http.call("POST", f"{PODS}/web/binding", data=binding, content_type=PROTOBUF)
    assert status == 201, body
    assert (await http.get(f"{PODS}/web"))[1]["spec"]["nodeName"] == "node-1"
    eviction = envelope("policy/v1", "Eviction", metadata("web", "default"), sub(2, num(1, 7)))
    status, body = await http.call("POST", f"{PODS}/web/eviction", data=eviction, content_type=PROTOBUF)
    assert status == 201, body
    assert (await http.get(f"{PODS}/web"))[1]["metadata"]["deletionGracePeriodSeconds"] == 7


async def test_a_scale_in_protobuf_sets_the_replicas_and_zero_means_zero(http) -> None:
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    await http.post(deployments, {"metadata": {"name": "web"}, "spec": {
        "replicas": 3, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}})
    for replicas in (5, 0):
        scale = envelope("autoscaling/v1", "Scale", metadata("web", "default"), sub(2, num(1, replicas)), sub(3))
        status, body = await http.call("PUT", f"{deployments}/web/scale", data=scale, content_type=PROTOBUF)
        assert status == 200, body
        assert (await http.get(f"{deployments}/web"))[1]["spec"]["replicas"] == replicas
