"""Metadata-only reads: ``PartialObjectMetadata`` for a get, ``PartialObjectMetadataList`` for a list and
PartialObjectMetadata in every watch event, as Kubernetes serves them to client-go's metadata client and informers
(the garbage collector's, the namespace controller's) when their Accept header asks; v1 and v1beta1; 406
NotAcceptable for a conversion the server does not serve, as Kubernetes' negotiation answers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from kubernetes import config as k8s_config
from kubernetes.dynamic import DynamicClient

from minik.api.errors import StatusError
from minik.apiserver.negotiation import Conversion, negotiate
from minik.cluster import Cluster
from tests.access import admin_kubeconfig

if TYPE_CHECKING:
    from conftest import ApiHttp

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
#: what client-go's metadata client sends (k8s.io/client-go/metadata): protobuf first, then JSON, then plain JSON
METADATA_LIST = ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                 "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")
METADATA = ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json")
NOT_ACCEPTABLE = ("only the following media types are accepted: application/json, application/yaml, "
                  "application/vnd.kubernetes.protobuf")


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels, "annotations": {"note": name}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


async def read(http: ApiHttp, path: str, accept: str, **params: str) -> tuple[int, dict]:
    async with http.session.get(path, headers={"Accept": accept}, params=params or None) as response:
        assert response.headers["Content-Type"].startswith("application/json")
        return response.status, orjson.loads(await response.read())


def test_accept_headers_of_metadata_clients_negotiate_partial_metadata() -> None:
    assert negotiate(METADATA_LIST) == Conversion("PartialObjectMetadataList", "v1")
    assert negotiate(METADATA) == Conversion("PartialObjectMetadata", "v1")
    assert negotiate("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1") == \
        Conversion("PartialObjectMetadata", "v1beta1")
    # quality orders the clauses; a conversion that is not served passes to the next clause
    assert negotiate("application/json;q=0.5,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1") == \
        Conversion("PartialObjectMetadataList", "v1")
    assert negotiate("application/json;as=Unknown;g=meta.k8s.io;v=v1,application/json") is None
    assert negotiate("*/*;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1") == \
        Conversion("PartialObjectMetadataList", "v1")
    for refused in ("application/json;as=Unknown;g=meta.k8s.io;v=v1", "application/json;as=Table;g=apps;v=v1",
                    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2",
                    "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1", "text/html"):
        with pytest.raises(StatusError) as error:
            negotiate(refused)
        assert (error.value.code, error.value.reason, error.value.message) == (406, "NotAcceptable", NOT_ACCEPTABLE)


async def test_a_list_is_a_partial_object_metadata_list_with_the_list_metadata(http: ApiHttp) -> None:
    for name in ("a", "b", "c"):
        assert (await http.post(PODS, pod(name, app=name)))[0] == 201
    status, page = await read(http, PODS, METADATA_LIST, limit="2")
    assert status == 200
    assert (page["kind"], page["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert list(page) == ["kind", "apiVersion", "metadata", "items"]
    assert page["metadata"]["continue"] and page["metadata"]["remainingItemCount"] == 1
    _, full = await http.get(f"{PODS}/a")
    first = page["items"][0]
    assert first == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": full["metadata"]}
    assert first["metadata"]["labels"] == {"app": "a"} and first["metadata"]["managedFields"]
    _, rest = await read(http, PODS, METADATA_LIST, limit="2", **{"continue": page["metadata"]["continue"]})
    assert [item["metadata"]["name"] for item in rest["items"]] == ["c"]
    assert rest["metadata"]["resourceVersion"] == page["metadata"]["resourceVersion"]
    _, beta = await read(http, PODS, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1")
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1" and beta["items"][0]["apiVersion"] == "meta.k8s.io/v1beta1"
    _, empty = await read(http, "/api/v1/namespaces/kube-public/pods", METADATA_LIST)
    assert empty["items"] == []
    _, nodes = await read(http, "/api/v1/nodes", METADATA_LIST)  # what the issue saw come back as a full NodeList
    assert nodes["kind"] == "PartialObjectMetadataList"


async def test_a_get_is_partial_object_metadata_of_any_kind(http: ApiHttp) -> None:
    await http.post(PODS, pod("web", app="web"))
    deployment = {"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
        "metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    assert (await http.post(DEPLOYMENTS, deployment))[0] == 201
    for path in (f"{PODS}/web", f"{DEPLOYMENTS}/d", "/api/v1/namespaces/default"):
        _, full = await http.get(path)
        status, partial = await read(http, path, METADATA)
        assert (status, partial) == (200, {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                           "metadata": full["metadata"]}), path
    status, missing = await read(http, f"{PODS}/nope", METADATA)
    assert (status, missing["reason"]) == (404, "NotFound")


async def test_the_single_form_of_a_list_and_the_list_form_of_one_object_are_not_acceptable(http: ApiHttp) -> None:
    await http.post(PODS, pod("web"))
    single = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    listed = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    cases = [(PODS, single, "you requested PartialObjectMetadata, but the requested object is a list "
                            "(*core.PodList)"),
             (f"{PODS}/web", listed, "you requested PartialObjectMetadataList, but the requested object is not a "
                                     "list (*core.Pod)"),
             (DEPLOYMENTS, single, "you requested PartialObjectMetadata, but the requested object is a list "
                                   "(*apps.DeploymentList)")]
    for path, accept, message in cases:
        status, body = await read(http, path, accept)
        assert (status, body["reason"], body["message"]) == (406, "NotAcceptable", message), path
    status, body = await read(http, PODS, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
                              watch="true")
    assert (status, body["reason"]) == (406, "NotAcceptable")


async def test_only_an_unsupported_conversion_is_not_acceptable(http: ApiHttp) -> None:
    async with http.session.get(PODS, headers={"Accept": "application/json;as=Foo;g=meta.k8s.io;v=v1"}) as answer:
        assert answer.status == 406
        assert await answer.read() == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                                       b'"message":"' + NOT_ACCEPTABLE.encode() + b'","reason":"NotAcceptable",'
                                       b'"code":406}\n')
    status, plain = await read(http, PODS, "application/json;as=Foo;g=meta.k8s.io;v=v1,application/json")
    assert (status, plain["kind"]) == (200, "PodList")


async def test_a_metadata_informer_lists_then_watches_partial_metadata(http: ApiHttp) -> None:
    await http.post(PODS, pod("before", app="x"))
    # client-go's reflector: a metadata list, then a watch from its resourceVersion with bookmarks
    _, listed = await read(http, PODS, METADATA_LIST, limit="500", resourceVersion="0")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["before"]
    events: list[dict[str, Any]] = []
    params = {"watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": "30",
              "resourceVersion": listed["metadata"]["resourceVersion"]}
    async with http.session.get(PODS, params=params, headers={"Accept": METADATA}) as response:
        assert response.status == 200
        await http.post(PODS, pod("after", app="y"))
        await http.patch(f"{PODS}/after", {"metadata": {"labels": {"app": "z"}}})
        await http.delete(f"{PODS}/after")
        async for line in response.content:
            if line.strip():
                events.append(orjson.loads(line))
            if len(events) == 3:
                break
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == \
        [("ADDED", "after"), ("MODIFIED", "after"), ("DELETED", "after")]
    for event in events:
        assert set(event["object"]) == {"kind", "apiVersion", "metadata"}
        assert (event["object"]["kind"], event["object"]["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
    assert events[1]["object"]["metadata"]["labels"] == {"app": "z"}


async def test_initial_events_and_bookmarks_of_a_metadata_watch_are_partial_metadata(http: ApiHttp) -> None:
    await http.post(PODS, pod("one"))
    events: list[dict[str, Any]] = []
    params = {"watch": "true", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
              "allowWatchBookmarks": "true", "timeoutSeconds": "30"}
    async with http.session.get(PODS, params=params, headers={"Accept": METADATA}) as response:
        async for line in response.content:
            if line.strip():
                events.append(orjson.loads(line))
            if events and events[-1]["type"] == "BOOKMARK":
                break
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    bookmark = events[1]["object"]
    assert (bookmark["kind"], bookmark["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
    assert bookmark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def _dynamic_client_reads(kubeconfig: Path) -> dict[str, Any]:
    client = DynamicClient(k8s_config.new_client_from_config(str(kubeconfig)))
    pods = client.resources.get(api_version="v1", kind="Pod")
    listed = pods.get(namespace="default", header_params={"Accept": METADATA_LIST})
    one = pods.get(name="web", namespace="default", header_params={"Accept": METADATA})
    return {"list_kind": listed.kind, "names": [item.metadata.name for item in listed.items],
            "item_keys": sorted(listed.items[0].to_dict()), "one_kind": one.kind, "labels": dict(one.metadata.labels)}


@pytest.mark.timeout(60)
async def test_the_python_clients_dynamic_client_reads_metadata_only(cluster: Cluster, http: ApiHttp,
                                                                      tmp_path: Path) -> None:
    await http.post(PODS, pod("web", app="web"))
    seen = await asyncio.to_thread(_dynamic_client_reads, admin_kubeconfig(cluster, tmp_path / "kubeconfig"))
    assert seen == {"list_kind": "PartialObjectMetadataList", "names": ["web"],
                    "item_keys": ["apiVersion", "kind", "metadata"], "one_kind": "PartialObjectMetadata",
                    "labels": {"app": "web"}}
