"""CustomResourceDefinitions served end to end over the API: a CRD's resources are served within a second of its
creation, with the semantics of the built-in kinds (status and scale subresources, generations, selectors, patches,
dry runs, versions, discovery, OpenAPI, tables, RBAC), and deleting the CRD deletes its resources first."""

from __future__ import annotations

import asyncio
import copy
import time

import orjson

from tests.crds import (
    CRDS,
    GROUP,
    condition,
    create_and_wait,
    gadget_crd,
    wait_for,
    wait_served,
    widget,
    widget_crd,
    widgets,
    with_rules,
)

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


async def get_crd(http, name: str = f"widgets.{GROUP}") -> dict:
    status, body = await http.get(f"{CRDS}/{name}")
    assert status == 200, body
    return body


# -- serving --------------------------------------------------------------------------------------------------------
async def test_a_created_crd_is_established_and_its_resources_are_served_within_a_second(http) -> None:
    seconds = await create_and_wait(http, widget_crd())
    assert seconds < 1.0
    crd = await get_crd(http)
    assert condition(crd, "NamesAccepted")["status"] == "True"
    assert condition(crd, "NamesAccepted")["reason"] == "NoConflicts"
    assert condition(crd, "Established") == {**condition(crd, "Established"), "status": "True",
                                             "reason": "InitialNamesAccepted"}
    assert crd["status"]["acceptedNames"] == {"plural": "widgets", "singular": "widget", "shortNames": ["wd"],
                                              "kind": "Widget", "listKind": "WidgetList", "categories": ["all"]}
    assert crd["status"]["storedVersions"] == ["v1"]
    status, created = await http.post(widgets(), widget("w1", replicas=2, color="blue"))
    assert status == 201, created
    assert created["metadata"]["generation"] == 1 and created["metadata"]["namespace"] == "default"
    status, got = await http.get(f"{widgets()}/w1")
    assert status == 200 and got["spec"] == {"replicas": 2, "color": "blue"}
    status, listed = await http.get(widgets())
    assert listed["kind"] == "WidgetList" and [w["metadata"]["name"] for w in listed["items"]] == ["w1"]
    status, everywhere = await http.get(f"/apis/{GROUP}/v1/widgets")
    assert status == 200 and len(everywhere["items"]) == 1


async def test_a_cluster_scoped_crd_serves_objects_without_a_namespace(http) -> None:
    await create_and_wait(http, gadget_crd())
    status, created = await http.post(f"/apis/{GROUP}/v1/gadgets", {
        "apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "anything": {"goes": [1, 2]}})
    assert status == 201, created
    assert "namespace" not in created["metadata"] and created["anything"] == {"goes": [1, 2]}
    status, _ = await http.get(f"/apis/{GROUP}/v1/namespaces/default/gadgets/g1")
    assert status == 404
    status, body = await http.post(widgets(), widget("w"))
    assert status == 404  # widgets were never defined


async def test_the_crd_itself_is_validated_with_kubernetes_messages(http) -> None:
    crd = widget_crd()
    crd["metadata"]["name"] = "things.example.com"
    crd["spec"]["group"] = "example"
    crd["spec"]["versions"][0]["storage"] = True
    crd["spec"]["scope"] = "Everywhere"
    status, body = await http.post(CRDS, crd)
    assert status == 422 and body["reason"] == "Invalid"
    causes = {(c["field"], c["message"]) for c in body["details"]["causes"]}
    assert ("metadata.name", 'Invalid value: "things.example.com": must be spec.names.plural+"."+spec.group') \
        in causes
    assert ("spec.group", 'Invalid value: "example": should be a domain with at least one dot') in causes
    assert ("spec.scope", 'Unsupported value: "Everywhere": supported values: "Cluster", "Namespaced"') in causes
    assert any(f == "spec.versions" and m.endswith("must have exactly one version marked as storage version")
               for f, m in causes)
    crd = widget_crd()
    del crd["spec"]["versions"][1]["schema"]
    status, body = await http.post(CRDS, crd)
    assert status == 422
    assert {"field": "spec.versions[1].schema.openAPIV3Schema", "reason": "FieldValueRequired",
            "message": "Required value"} in body["details"]["causes"]
    crd = widget_crd()
    crd["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] = ".replicas"
    crd["spec"]["versions"][1]["subresources"]["scale"]["specReplicasPath"] = ".replicas"
    status, body = await http.post(CRDS, crd)
    assert status == 422
    assert {"field": "spec.subresources.scale.specReplicasPath", "reason": "FieldValueInvalid",
            "message": 'Invalid value: ".replicas": should be a json path under .spec'} in body["details"]["causes"]


async def test_conflicting_names_are_refused_in_the_names_accepted_condition(http) -> None:
    await create_and_wait(http, widget_crd())
    other = copy.deepcopy(gadget_crd())
    other["metadata"]["name"] = f"sprockets.{GROUP}"
    other["spec"]["names"] = {"plural": "sprockets", "kind": "Widget", "listKind": "SprocketList",
                              "shortNames": ["sp"]}
    status, body = await http.post(CRDS, other)
    assert status == 201, body

    async def refused() -> dict | None:
        crd = await get_crd(http, f"sprockets.{GROUP}")
        return crd if condition(crd, "NamesAccepted").get("status") == "False" else None

    crd = await wait_for(refused)
    accepted = condition(crd, "NamesAccepted")
    assert (accepted["reason"], accepted["message"]) == ("KindConflict", '"Widget" is already in use')
    assert condition(crd, "Established")["status"] == "False"
    assert condition(crd, "Established")["reason"] == "NotAccepted"
    status, _ = await http.get(f"/apis/{GROUP}/v1/sprockets")
    assert status == 404  # not served while its names are not accepted
    # a CRD in a built-in group may not take a built-in resource's name
    roles = copy.deepcopy(gadget_crd())
    roles["metadata"] = {"name": "roles.rbac.authorization.k8s.io",
                         "annotations": {"api-approved.kubernetes.io": "unapproved, testing"}}
    roles["spec"].update(group="rbac.authorization.k8s.io", names={"plural": "roles", "kind": "Rolle"})
    status, body = await http.post(CRDS, roles)
    assert status == 201, body

    async def roles_refused() -> dict | None:
        crd = await get_crd(http, "roles.rbac.authorization.k8s.io")
        return crd if condition(crd, "NamesAccepted").get("status") == "False" else None

    crd = await wait_for(roles_refused)
    assert condition(crd, "NamesAccepted")["reason"] == "PluralConflict"
    assert condition(crd, "NamesAccepted")["message"] == '"roles" is already in use'
    status, body = await http.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/admin")
    assert status == 200 and body["kind"] == "ClusterRole"


async def test_a_protected_group_needs_the_api_approval_annotation(http) -> None:
    crd = gadget_crd()
    crd["metadata"]["name"] = "gadgets.tools.k8s.io"
    crd["spec"]["group"] = "tools.k8s.io"
    status, body = await http.post(CRDS, crd)
    assert status == 422
    assert body["details"]["causes"][0]["field"] == "metadata.annotations[api-approved.kubernetes.io]"


# -- subresources and generation ------------------------------------------------------------------------------------
async def test_status_is_written_only_through_the_status_subresource_and_generation_follows_the_spec(http) -> None:
    await create_and_wait(http, widget_crd())
    body = widget("w", replicas=1, color="red")
    body["status"] = {"phase": "Ready"}
    status, created = await http.post(widgets(), body)
    assert status == 201 and "status" not in created
    created["status"] = {"phase": "Ready"}
    created["spec"]["size"] = "L"
    status, updated = await http.put(f"{widgets()}/w", created)
    assert status == 200 and "status" not in updated and updated["metadata"]["generation"] == 2
    updated["status"] = {"phase": "Running", "replicas": 1}
    updated["spec"]["size"] = "XL"
    updated["metadata"]["labels"] = {"sneaky": "yes"}
    status, written = await http.put(f"{widgets()}/w/status", updated)
    assert status == 200, written
    assert written["status"] == {"phase": "Running", "replicas": 1}
    assert written["spec"]["size"] == "L" and "labels" not in written["metadata"]
    assert written["metadata"]["generation"] == 2
    status, patched = await http.patch(f"{widgets()}/w", {"metadata": {"labels": {"tier": "a"}}})
    assert patched["metadata"]["generation"] == 2  # metadata changes keep it
    status, patched = await http.patch(f"{widgets()}/w/status", {"status": {"phase": "Done"}})
    assert patched["status"]["phase"] == "Done" and patched["metadata"]["generation"] == 2


async def test_the_scale_subresource_reads_and_writes_the_crds_replica_paths(http) -> None:
    await create_and_wait(http, widget_crd())
    await http.post(widgets(), widget("w", replicas=2))
    await http.patch(f"{widgets()}/w/status", {"status": {"replicas": 1, "selector": "app=w"}})
    status, scale = await http.get(f"{widgets()}/w/scale")
    assert status == 200
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["spec"] == {"replicas": 2} and scale["status"] == {"replicas": 1, "selector": "app=w"}
    scale["spec"]["replicas"] = 5
    status, scaled = await http.put(f"{widgets()}/w/scale", scale)
    assert status == 200 and scaled["spec"]["replicas"] == 5
    status, got = await http.get(f"{widgets()}/w")
    assert got["spec"]["replicas"] == 5 and got["metadata"]["generation"] == 2
    status, scaled = await http.patch(f"{widgets()}/w/scale", {"spec": {"replicas": 3}})
    assert status == 200 and scaled["spec"]["replicas"] == 3
    status, body = await http.patch(f"{widgets()}/w/scale", {"spec": {"replicas": -1}})
    assert status == 422


# -- patches, apply, dry run, finalizers -----------------------------------------------------------------------------
async def test_merge_json_and_apply_patches_work_and_strategic_merge_patch_is_unsupported(http) -> None:
    await create_and_wait(http, widget_crd())
    await http.post(widgets(), widget("w", replicas=1, color="red", ports=[{"name": "a", "port": 1}]))
    status, body = await http.patch(f"{widgets()}/w", {"spec": {"color": "blue"}},
                                    content_type="application/strategic-merge-patch+json")
    assert status == 415 and body["reason"] == "UnsupportedMediaType"
    assert "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml" \
        in body["message"]
    status, body = await http.patch(f"{widgets()}/w", {"spec": {"color": "green"}})
    assert status == 200 and body["spec"]["color"] == "green"
    status, body = await http.patch(f"{widgets()}/w", [{"op": "replace", "path": "/spec/replicas", "value": 4}],
                                    content_type="application/json-patch+json")
    assert status == 200 and body["spec"]["replicas"] == 4
    status, body = await http.call("PATCH", f"{widgets()}/w", data=orjson.dumps(widget("w", size="S")),
                                   content_type="application/apply-patch+yaml", params={"fieldManager": "tester"})
    assert status == 200, body
    assert body["spec"]["size"] == "S"
    assert "tester" in {entry["manager"] for entry in body["metadata"]["managedFields"]}
    status, body = await http.call("PATCH", f"{widgets()}/created-by-apply",
                                   data=orjson.dumps(widget("created-by-apply", color="blue")),
                                   content_type="application/apply-patch+yaml", params={"fieldManager": "tester"})
    assert status == 201, body


async def test_dry_run_and_finalizers_hold_as_for_built_in_kinds(http) -> None:
    await create_and_wait(http, widget_crd())
    status, body = await http.call("POST", widgets(), widget("dry"), params={"dryRun": "All"})
    assert status == 201
    status, _ = await http.get(f"{widgets()}/dry")
    assert status == 404
    held = widget("held")
    held["metadata"]["finalizers"] = ["example.com/keep"]
    await http.post(widgets(), held)
    status, body = await http.delete(f"{widgets()}/held")
    assert status == 200 and body["metadata"]["deletionTimestamp"]
    status, body = await http.patch(f"{widgets()}/held", {"metadata": {"finalizers": None}})
    assert status == 200
    status, _ = await http.get(f"{widgets()}/held")
    assert status == 404


# -- list and watch -------------------------------------------------------------------------------------------------
async def test_lists_and_watches_select_by_labels_names_and_the_crds_selectable_fields(http) -> None:
    await create_and_wait(http, widget_crd())
    for name, color, tier in (("a", "red", "front"), ("b", "blue", "back"), ("c", "blue", "front")):
        body = widget(name, color=color)
        body["metadata"]["labels"] = {"tier": tier}
        await http.post(widgets(), body)

    async def names(**params: str) -> list[str]:
        status, body = await http.get(widgets(), **params)
        assert status == 200, body
        return [item["metadata"]["name"] for item in body["items"]]

    assert await names(labelSelector="tier=front") == ["a", "c"]
    assert await names(fieldSelector="spec.color=blue") == ["b", "c"]
    assert await names(fieldSelector="spec.color=blue,metadata.name!=b") == ["c"]
    assert await names(fieldSelector="metadata.namespace=default", labelSelector="tier=back") == ["b"]
    status, body = await http.get(widgets(), fieldSelector="spec.size=L")
    assert status == 400 and body["message"] == "field label not supported: spec.size"
    status, page = await http.get(widgets(), limit="2")
    assert len(page["items"]) == 2 and page["metadata"]["continue"]
    status, rest = await http.get(widgets(), limit="2", **{"continue": page["metadata"]["continue"]})
    assert [i["metadata"]["name"] for i in rest["items"]] == ["c"]
    revision = page["metadata"]["resourceVersion"]
    async with http.session.get(widgets(), params={"watch": "true", "resourceVersion": revision,
                                                   "fieldSelector": "spec.color=green",
                                                   "allowWatchBookmarks": "true"}) as response:
        await http.patch(f"{widgets()}/a", {"spec": {"color": "green"}})
        line = await asyncio.wait_for(response.content.readline(), 5)
        event = orjson.loads(line)
        assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "a"
        assert event["object"]["apiVersion"] == f"{GROUP}/v1"
    status, deleted = await http.delete(widgets(), labelSelector="tier=front")
    assert status == 200 and deleted["kind"] == "WidgetList"
    assert sorted(item["metadata"]["name"] for item in deleted["items"]) == ["a", "c"]
    assert await names() == ["b"]


# -- versions ---------------------------------------------------------------------------------------------------------
async def test_every_served_version_reads_and_writes_the_same_objects_stored_in_the_storage_version(
        http, cluster) -> None:
    await create_and_wait(http, widget_crd())
    status, created = await http.post(widgets(version="v1beta1"), widget("w", "v1beta1", color="red"))
    assert status == 201 and created["apiVersion"] == f"{GROUP}/v1beta1"
    stored = cluster.store.get("/example.com/widgets/default/w").object()
    assert stored["apiVersion"] == f"{GROUP}/v1"
    status, got = await http.get(f"{widgets()}/w")
    assert got["apiVersion"] == f"{GROUP}/v1"
    status, listed = await http.get(widgets(version="v1beta1"))
    assert listed["apiVersion"] == f"{GROUP}/v1beta1"
    assert [item["apiVersion"] for item in listed["items"]] == [f"{GROUP}/v1beta1"]
    status, patched = await http.patch(f"{widgets(version='v1beta1')}/w", {"spec": {"color": "blue"}})
    assert patched["apiVersion"] == f"{GROUP}/v1beta1" and patched["spec"]["color"] == "blue"
    assert cluster.store.get("/example.com/widgets/default/w").object()["apiVersion"] == f"{GROUP}/v1"


async def test_a_deprecated_version_answers_with_a_warning(http) -> None:
    await create_and_wait(http, widget_crd())
    async with http.session.get(widgets(version="v1beta1")) as response:
        assert response.status == 200
        assert response.headers["Warning"] == '299 - "example.com/v1beta1 Widget is deprecated; use ' \
                                              'example.com/v1 Widget"'
    async with http.session.get(widgets()) as response:
        assert "Warning" not in response.headers


async def test_an_unreachable_conversion_webhook_fails_requests_with_a_clear_error(http) -> None:
    crd = widget_crd()
    crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": "https://127.0.0.1:1/convert"}, "conversionReviewVersions": ["v1"]}}
    await create_and_wait(http, crd)
    status, body = await http.post(widgets(), widget("w"))
    assert status == 201  # the storage version: nothing to convert
    status, body = await http.get(f"{widgets(version='v1beta1')}/w")
    assert status == 500 and body["reason"] == "InternalError"
    assert body["message"] == ('Internal error occurred: conversion webhook for example.com/v1beta1, Kind=Widget '
                               'failed: Post "https://127.0.0.1:1/convert?timeout=30s": dial tcp 127.0.0.1:1: connect: '
                               'connection refused')


# -- discovery, OpenAPI, tables ---------------------------------------------------------------------------------------
async def test_discovery_lists_the_custom_resources_legacy_and_aggregated(http) -> None:
    await create_and_wait(http, widget_crd())
    status, groups = await http.get("/apis")
    group = next(g for g in groups["groups"] if g["name"] == GROUP)
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    assert group["preferredVersion"]["version"] == "v1"
    status, resources = await http.get(f"/apis/{GROUP}/v1")
    entry = next(r for r in resources["resources"] if r["name"] == "widgets")
    assert entry["shortNames"] == ["wd"] and entry["categories"] == ["all"] and entry["kind"] == "Widget"
    assert {r["name"] for r in resources["resources"]} == {"widgets", "widgets/status", "widgets/scale"}
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    async with http.session.get("/apis", headers={"Accept": accept}) as response:
        assert response.headers["Content-Type"] == \
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        aggregated = orjson.loads(await response.read())
    assert aggregated["kind"] == "APIGroupDiscoveryList"
    item = next(i for i in aggregated["items"] if i["metadata"]["name"] == GROUP)
    v1 = item["versions"][0]
    assert v1["version"] == "v1" and v1["freshness"] == "Current"
    resource = v1["resources"][0]
    assert resource["resource"] == "widgets" and resource["scope"] == "Namespaced"
    assert resource["responseKind"] == {"group": GROUP, "version": "v1", "kind": "Widget"}
    assert resource["singularResource"] == "widget" and resource["shortNames"] == ["wd"]
    assert {s["subresource"] for s in resource["subresources"]} == {"status", "scale"}
    async with http.session.get("/api", headers={"Accept": accept}) as response:
        core = orjson.loads(await response.read())
    assert [i["metadata"]["name"] for i in core["items"]] == [""]


async def test_openapi_publishes_the_crds_schema_for_each_served_version(http) -> None:
    await create_and_wait(http, widget_crd())
    status, root = await http.get("/openapi/v3")
    assert f"apis/{GROUP}/v1" in root["paths"] and f"apis/{GROUP}/v1beta1" in root["paths"]
    status, document = await http.get(f"/openapi/v3/apis/{GROUP}/v1")
    schemas = document["components"]["schemas"]
    widget_schema = schemas["com.example.v1.Widget"]
    assert widget_schema["x-kubernetes-group-version-kind"] == [{"group": GROUP, "kind": "Widget", "version": "v1"}]
    assert widget_schema["properties"]["spec"]["properties"]["color"]["enum"] == ["red", "green", "blue"]
    assert widget_schema["properties"]["metadata"]["allOf"][0]["$ref"].endswith("meta.v1.ObjectMeta")
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    assert schemas["com.example.v1.WidgetList"]["properties"]["items"]["items"]["$ref"].endswith("v1.Widget")
    patch = document["paths"][f"/apis/{GROUP}/v1/namespaces/{{namespace}}/widgets/{{name}}"]["patch"]
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    status, _ = await http.delete(f"{CRDS}/widgets.{GROUP}")

    async def unpublished() -> bool:
        status, root = await http.get("/openapi/v3")
        return f"apis/{GROUP}/v1" not in root["paths"]

    await wait_for(unpublished)


async def test_tables_show_the_printer_columns_and_name_and_age_without_any(http) -> None:
    await create_and_wait(http, widget_crd())
    await create_and_wait(http, gadget_crd())
    await http.post(widgets(), widget("w", replicas=3, color="blue"))
    await http.patch(f"{widgets()}/w/status", {"status": {"phase": "Ready"}})
    async with http.session.get(widgets(), headers={"Accept": TABLE}) as response:
        table = orjson.loads(await response.read())
    columns = [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]]
    assert columns == [("Name", "string", 0), ("Color", "string", 0), ("Replicas", "integer", 1),
                       ("Phase", "string", 0), ("Age", "date", 0)]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["w", "blue", 3, "Ready"] and cells[4].endswith("s")
    await http.post(f"/apis/{GROUP}/v1/gadgets", {"apiVersion": f"{GROUP}/v1", "kind": "Gadget",
                                                  "metadata": {"name": "g"}})
    async with http.session.get(f"/apis/{GROUP}/v1/gadgets", headers={"Accept": TABLE}) as response:
        table = orjson.loads(await response.read())
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"][0] == "g"
    async with http.session.get(CRDS, headers={"Accept": TABLE}) as response:
        table = orjson.loads(await response.read())
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]


# -- RBAC -----------------------------------------------------------------------------------------------------------
async def test_custom_resources_are_authorized_by_group_and_resource(http) -> None:
    await create_and_wait(http, widget_crd())
    alice = {"Impersonate-User": "alice"}
    async with http.session.get(widgets(), headers=alice) as response:
        body = orjson.loads(await response.read())
        assert response.status == 403
    assert body["message"] == ('widgets.example.com is forbidden: User "alice" cannot list resource "widgets" in API '
                               'group "example.com" in the namespace "default"')
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "widgets"},
            "rules": [{"apiGroups": [GROUP], "resources": ["widgets"], "verbs": ["get", "list", "create"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "alice"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "widgets"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}
    assert (await http.post("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", role))[0] == 201
    assert (await http.post("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", binding))[0] == 201
    async with http.session.post(widgets(), data=orjson.dumps(widget("mine")),
                                 headers={**alice, "Content-Type": "application/json"}) as response:
        assert response.status == 201
    async with http.session.delete(f"{widgets()}/mine", headers=alice) as response:
        assert response.status == 403
    async with http.session.get(f"{widgets()}/mine/status", headers=alice) as response:
        assert response.status == 403  # widgets/status is a resource of its own


# -- lifecycle --------------------------------------------------------------------------------------------------------
async def test_deleting_a_crd_deletes_its_resources_and_then_stops_serving_them(http) -> None:
    crd = widget_crd()
    await create_and_wait(http, crd)
    held = widget("held")
    held["metadata"]["finalizers"] = ["example.com/keep"]
    for body in (widget("a"), widget("b"), held):
        assert (await http.post(widgets(), body))[0] == 201
    status, body = await http.delete(f"{CRDS}/widgets.{GROUP}")
    assert status == 200
    assert body["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    assert condition(body, "Terminating")["status"] == "True"

    async def only_held_left() -> bool:
        status, listed = await http.get(widgets())
        return status == 200 and [i["metadata"]["name"] for i in listed["items"]] == ["held"]

    await wait_for(only_held_left)
    crd_now = await get_crd(http)
    assert condition(crd_now, "Terminating")["reason"] == "InstanceDeletionInProgress"
    status, body = await http.post(widgets(), widget("late"))
    assert status == 405 and body["message"] == 'create is not supported on resources of kind "widgets.example.com"'
    status, resources = await http.get(f"/apis/{GROUP}/v1")
    assert next(r for r in resources["resources"] if r["name"] == "widgets")["verbs"] == \
        ["delete", "deletecollection", "get", "list", "watch"]
    await http.patch(f"{widgets()}/held", {"metadata": {"finalizers": None}})

    async def crd_gone() -> bool:
        return (await http.get(f"{CRDS}/widgets.{GROUP}"))[0] == 404

    await wait_for(crd_gone)
    status, _ = await http.get(widgets())
    assert status == 404
    status, groups = await http.get("/apis")
    assert GROUP not in {g["name"] for g in groups["groups"]}
    # the same CRD again starts empty
    await create_and_wait(http, crd)
    status, listed = await http.get(widgets())
    assert listed["items"] == []


async def test_a_changed_schema_or_version_takes_effect_without_a_restart(http) -> None:
    await create_and_wait(http, widget_crd())
    status, body = await http.post(widgets(), widget("purple", color="purple"))
    assert status == 422
    crd = await get_crd(http)
    crd["spec"]["versions"][0]["served"] = False
    crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"]["enum"] \
        .append("purple")
    crd["spec"]["versions"][1]["additionalPrinterColumns"] = [{"name": "Size", "type": "string",
                                                               "jsonPath": ".spec.size"}]
    status, body = await http.put(f"{CRDS}/widgets.{GROUP}", crd)
    assert status == 200, body

    async def v1beta1_gone() -> bool:
        return (await http.get(widgets(version="v1beta1")))[0] == 404

    await wait_for(v1beta1_gone)
    status, body = await http.post(widgets(), widget("purple", color="purple"))
    assert status == 201, body
    await http.delete(f"{widgets()}/purple")
    await http.post(widgets(), widget("w", size="XL"))
    async with http.session.get(widgets(), headers={"Accept": TABLE}) as response:
        table = orjson.loads(await response.read())
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size"]
    assert table["rows"][0]["cells"] == ["w", "XL"]


async def test_a_restarted_cluster_serves_every_crd_and_custom_resource_again(tmp_path) -> None:
    from minik.cluster import COMPONENTS, Cluster, ClusterSettings
    from tests.access import admin_session
    from tests.conftest import ApiHttp

    settings = ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                               disabled=frozenset(COMPONENTS))
    async with Cluster(settings) as first:
        async with admin_session(first) as session:
            http = ApiHttp(session)
            await create_and_wait(http, widget_crd())
            assert (await http.post(widgets(), widget("kept", color="green")))[0] == 201
    async with Cluster(settings) as second:
        async with admin_session(second) as session:
            http = ApiHttp(session)
            began = time.perf_counter()
            await wait_served(http, widget_crd(), timeout=1.0)
            assert time.perf_counter() - began < 0.5  # served at start, not once a controller caught up
            status, got = await http.get(f"{widgets()}/kept")
            assert status == 200 and got["spec"]["color"] == "green"


# -- the schema -------------------------------------------------------------------------------------------------------
async def test_objects_are_defaulted_pruned_and_validated_by_the_crds_schema(http, cluster) -> None:
    await create_and_wait(http, with_rules(widget_crd()))
    body = widget("w", size="L")
    body["spec"]["unknown"] = 1
    body["extra"] = {"a": 1}
    async with http.session.post(widgets(), data=orjson.dumps(body),
                                 headers={"Content-Type": "application/json"}) as response:
        created = orjson.loads(await response.read())
        assert response.status == 201, created
        assert response.headers["Warning"] == '299 - "unknown field \\"extra\\"", 299 - "unknown field ' \
                                              '\\"spec.unknown\\""'
    assert created["spec"] == {"size": "L", "replicas": 1, "color": "red"}  # defaults, unknown fields dropped
    assert "extra" not in created
    status, body = await http.call("POST", widgets(), {**widget("strict"), "bogus": True},
                                   params={"fieldValidation": "Strict"})
    assert status == 400
    assert body["message"] == 'Widget in version "v1" cannot be handled as a Widget: strict decoding error: ' \
                              'unknown field "bogus"'
    status, body = await http.post(widgets(), widget("bad", replicas=-1, color="purple"))
    assert status == 422 and body["reason"] == "Invalid"
    fields = {c["field"]: c["message"] for c in body["details"]["causes"]}
    assert fields["spec.replicas"] == "Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
    assert fields["spec.color"].startswith('Unsupported value: "purple": supported values: "red", "green", "blue"')
    assert body["message"].startswith('Widget.example.com "bad" is invalid: [')
    status, body = await http.post(widgets(), widget("rule", size="M", replicas=0))
    assert status == 422
    assert body["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec",
                                          "message": "Invalid value: \"object\": a sized widget needs replicas"}]
    status, body = await http.patch(f"{widgets()}/w", {"spec": {"replicas": 5}})
    assert status == 200
    status, body = await http.patch(f"{widgets()}/w", {"spec": {"replicas": 1}})
    assert status == 422
    assert body["details"]["causes"][0]["reason"] == "FieldValueForbidden"
    assert body["details"]["causes"][0]["message"].endswith("replicas may not drop by more than two")


async def test_defaults_added_to_a_crd_show_on_read_of_objects_stored_before(http) -> None:
    await create_and_wait(http, widget_crd())
    await http.post(widgets(), widget("old", replicas=2, color="blue"))
    crd = await get_crd(http)
    for version in crd["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]["default"] = "M"
    status, body = await http.put(f"{CRDS}/widgets.{GROUP}", crd)
    assert status == 200, body

    async def defaulted() -> dict | None:
        status, got = await http.get(f"{widgets()}/old")
        return got if got["spec"].get("size") == "M" else None

    got = await wait_for(defaulted)
    assert got["spec"] == {"replicas": 2, "color": "blue", "size": "M"}


async def test_a_crd_whose_schema_is_not_structural_is_refused(http) -> None:
    crd = widget_crd()
    for version in crd["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"] = {"description": "no type"}
    status, body = await http.post(CRDS, crd)
    assert status == 422
    assert {"reason": "FieldValueRequired", "message": "Required value: must not be empty for specified object fields",
            "field": "spec.validation.openAPIV3Schema.properties[spec].properties[size].type"} \
        in body["details"]["causes"]


async def test_a_custom_kind_named_like_a_built_in_one_has_none_of_its_merge_keys(http) -> None:
    crd = gadget_crd()
    crd["metadata"]["name"] = f"pods.{GROUP}"
    crd["spec"]["names"] = {"plural": "pods", "kind": "Pod"}
    await create_and_wait(http, crd)
    pod = {"apiVersion": f"{GROUP}/v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}
    status, body = await http.call("PATCH", f"/apis/{GROUP}/v1/pods/p", data=orjson.dumps(pod),
                                   content_type="application/apply-patch+yaml", params={"fieldManager": "me"})
    assert status == 201, body
    assert body["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"] == {"f:containers": {}}


async def test_server_side_apply_merges_the_lists_a_crd_declares_as_maps(http) -> None:
    crd = widget_crd()
    for version in crd["spec"]["versions"]:
        ports = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["ports"]
        ports["x-kubernetes-list-type"] = "map"
        ports["x-kubernetes-list-map-keys"] = ["name"]
        ports["items"]["required"] = ["name"]
    await create_and_wait(http, crd)

    async def apply(manager: str, ports: list[dict]) -> tuple[int, dict]:
        return await http.call("PATCH", f"{widgets()}/w", data=orjson.dumps(widget("w", ports=ports)),
                               content_type="application/apply-patch+yaml", params={"fieldManager": manager})

    assert (await apply("alpha", [{"name": "a", "port": 1}]))[0] == 201
    status, body = await apply("beta", [{"name": "b", "port": 2}])
    assert status == 200, body
    assert body["spec"]["ports"] == [{"name": "a", "port": 1}, {"name": "b", "port": 2}]
    owned = {e["manager"]: e["fieldsV1"]["f:spec"]["f:ports"] for e in body["metadata"]["managedFields"]}
    assert set(owned["beta"]) == {'k:{"name":"b"}'}
    status, body = await apply("beta", [{"name": "a", "port": 9}])
    assert status == 409 and body["reason"] == "Conflict"  # a's port is alpha's
