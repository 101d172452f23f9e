"""The REST verbs over real HTTP: create, get, list, update, patch, delete, and the metadata the server owns."""

from __future__ import annotations

from typing import Any

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str = "web", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}
    body.update(extra)
    return body


async def test_version_reports_kubernetes_1_32(http) -> None:
    status, body = await http.get("/version")
    assert status == 200 and (body["major"], body["minor"]) == ("1", "32")


async def test_system_namespaces_exist_from_the_start(http) -> None:
    status, body = await http.get("/api/v1/namespaces")
    assert status == 200
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= \
        {n["metadata"]["name"] for n in body["items"]}


async def test_create_sets_server_owned_metadata_and_pod_defaults(http) -> None:
    status, created = await http.post(PODS, pod())
    assert status == 201, created
    meta = created["metadata"]
    assert meta["namespace"] == "default" and len(meta["uid"]) == 36
    assert meta["creationTimestamp"].endswith("Z") and int(meta["resourceVersion"]) > 0
    spec = created["spec"]
    assert spec["restartPolicy"] == "Always" and spec["schedulerName"] == "default-scheduler"
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert created["status"]["phase"] == "Pending"
    status, fetched = await http.get(f"{PODS}/web")
    assert status == 200 and fetched == created


async def test_get_of_a_missing_object_is_a_not_found_status(http) -> None:
    status, body = await http.get(f"{PODS}/nope")
    assert status == 404
    assert body["kind"] == "Status" and body["reason"] == "NotFound"
    assert body["message"] == 'pods "nope" not found'
    assert body["details"] == {"name": "nope", "kind": "pods"}


async def test_creating_twice_is_already_exists(http) -> None:
    await http.post(PODS, pod())
    status, body = await http.post(PODS, pod())
    assert status == 409 and body["reason"] == "AlreadyExists"
    assert body["message"] == 'pods "web" already exists'


async def test_generate_name_gets_a_random_suffix(http) -> None:
    status, created = await http.post(PODS, {**pod(), "metadata": {"generateName": "web-"}})
    assert status == 201
    name = created["metadata"]["name"]
    assert name.startswith("web-") and len(name) == len("web-") + 5


async def test_update_with_a_stale_resource_version_is_a_conflict(http) -> None:
    _, created = await http.post(PODS, pod())
    changed = {**created, "metadata": {**created["metadata"], "labels": {"app": "v2"}}}
    status, updated = await http.put(f"{PODS}/web", changed)
    assert status == 200 and updated["metadata"]["labels"] == {"app": "v2"}
    status, body = await http.put(f"{PODS}/web", changed)  # still carries the old resourceVersion
    assert status == 409 and body["reason"] == "Conflict"
    assert body["message"] == ('Operation cannot be fulfilled on pods "web": the object has been modified; please '
                               'apply your changes to the latest version and try again')


async def test_a_noop_update_keeps_the_resource_version(http) -> None:
    _, created = await http.post("/api/v1/namespaces/default/configmaps",
                                 {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    status, same = await http.put("/api/v1/namespaces/default/configmaps/cm", created)
    assert status == 200
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_generation_moves_with_the_spec_only(http) -> None:
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": {"labels": {"app": "d"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    status, created = await http.post(deployments, body)
    assert status == 201, created
    assert created["metadata"]["generation"] == 1 and created["spec"]["replicas"] == 1
    _, labelled = await http.patch(f"{deployments}/d", {"metadata": {"labels": {"x": "y"}}})
    assert labelled["metadata"]["generation"] == 1
    _, scaled = await http.patch(f"{deployments}/d", {"spec": {"replicas": 3}})
    assert scaled["metadata"]["generation"] == 2


async def test_merge_patch_and_json_patch(http) -> None:
    await http.post(PODS, pod())
    status, merged = await http.patch(f"{PODS}/web", {"metadata": {"labels": {"tier": "front", "app": None}}})
    assert status == 200 and merged["metadata"]["labels"] == {"tier": "front"}
    ops = [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}},
           {"op": "replace", "path": "/metadata/labels/tier", "value": "back"}]
    status, patched = await http.patch(f"{PODS}/web", ops, "application/json-patch+json")
    assert status == 200
    assert patched["metadata"]["annotations"] == {"a": "b"} and patched["metadata"]["labels"] == {"tier": "back"}
    status, body = await http.patch(f"{PODS}/web", [{"op": "test", "path": "/metadata/name", "value": "x"}],
                                    "application/json-patch+json")
    assert status == 422


async def test_status_is_changed_only_through_the_status_subresource(http) -> None:
    _, created = await http.post(PODS, pod())
    sneaky = {**created, "status": {"phase": "Running"}}
    _, updated = await http.put(f"{PODS}/web", sneaky)
    assert updated["status"]["phase"] == "Pending"
    status_update = {**updated, "status": {"phase": "Running"}, "metadata": {**updated["metadata"],
                                                                            "labels": {"ignored": "yes"}}}
    status, after = await http.put(f"{PODS}/web/status", status_update)
    assert status == 200, after
    assert after["status"]["phase"] == "Running" and after["metadata"]["labels"] == {"app": "web"}
    status, after = await http.patch(f"{PODS}/web/status", {"status": {"podIP": "10.0.0.9"}})
    assert status == 200 and after["status"]["podIP"] == "10.0.0.9" and after["status"]["phase"] == "Running"


async def test_binding_sets_the_node_once(http) -> None:
    await http.post(PODS, pod())
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    status, body = await http.post(f"{PODS}/web/binding", binding)
    assert status == 201 and body["status"] == "Success"
    _, bound = await http.get(f"{PODS}/web")
    assert bound["spec"]["nodeName"] == "node-1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][0].items()
    status, body = await http.post(f"{PODS}/web/binding", {**binding, "target": {"name": "node-2"}})
    assert status == 409 and body["reason"] == "Conflict"
    assert 'already assigned to node "node-1"' in body["message"]


async def test_an_unbound_pod_is_deleted_at_once(http) -> None:
    await http.post(PODS, pod())
    status, body = await http.delete(f"{PODS}/web")
    assert status == 200 and body["kind"] == "Pod"
    assert (await http.get(f"{PODS}/web"))[0] == 404


async def test_a_bound_pod_is_deleted_gracefully_until_the_node_confirms(http) -> None:
    await http.post(PODS, pod())
    await http.post(f"{PODS}/web/binding", {"target": {"name": "node-1"}})
    status, body = await http.delete(f"{PODS}/web")
    assert status == 200
    assert body["metadata"]["deletionTimestamp"] and body["metadata"]["deletionGracePeriodSeconds"] == 30
    assert (await http.get(f"{PODS}/web"))[0] == 200
    status, body = await http.delete(f"{PODS}/web", {"gracePeriodSeconds": 0})
    assert status == 200
    assert (await http.get(f"{PODS}/web"))[0] == 404


async def test_finalizers_hold_an_object_until_they_are_removed(http) -> None:
    cms = "/api/v1/namespaces/default/configmaps"
    await http.post(cms, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    status, body = await http.delete(f"{cms}/held")
    assert status == 200 and body["metadata"]["deletionTimestamp"]
    assert (await http.get(f"{cms}/held"))[0] == 200
    status, body = await http.patch(f"{cms}/held", {"metadata": {"finalizers": ["example.com/other"]}})
    assert status == 422  # no new finalizers once deletion started
    status, _ = await http.patch(f"{cms}/held", {"metadata": {"finalizers": None}})
    assert status == 200
    assert (await http.get(f"{cms}/held"))[0] == 404


async def test_delete_preconditions_are_checked(http) -> None:
    cms = "/api/v1/namespaces/default/configmaps"
    await http.post(cms, {"metadata": {"name": "cm"}})
    status, body = await http.delete(f"{cms}/cm", {"preconditions": {"uid": "not-the-uid"}})
    assert status == 409 and "Precondition failed: UID in precondition" in body["message"]
    status, _ = await http.delete(f"{cms}/cm", {"preconditions": {"resourceVersion": "1"}})
    assert status == 409
    status, body = await http.delete(f"{cms}/cm")
    assert status == 200 and body["status"] == "Success"


async def test_objects_in_a_missing_or_terminating_namespace_are_refused(http) -> None:
    status, body = await http.post("/api/v1/namespaces/nowhere/pods", pod())
    assert status == 404 and body["message"] == 'namespaces "nowhere" not found'
    await http.post("/api/v1/namespaces", {"metadata": {"name": "leaving"}})
    status, body = await http.delete("/api/v1/namespaces/leaving")
    assert status == 200 and body["status"]["phase"] == "Terminating"
    status, body = await http.post("/api/v1/namespaces/leaving/pods", pod())
    assert status == 403 and "because it is being terminated" in body["message"]


async def test_the_system_namespaces_cannot_be_deleted(http) -> None:
    status, body = await http.delete("/api/v1/namespaces/default")
    assert status == 403 and body["reason"] == "Forbidden"


async def test_deletecollection_removes_what_the_selector_matches(http) -> None:
    cms = "/api/v1/namespaces/default/configmaps"
    for name, tier in (("a", "x"), ("b", "x"), ("c", "y")):
        await http.post(cms, {"metadata": {"name": name, "labels": {"tier": tier}}})
    status, body = await http.call("DELETE", cms, params={"labelSelector": "tier=x"})
    assert status == 200 and len(body["items"]) == 2
    _, left = await http.get(cms)
    assert [i["metadata"]["name"] for i in left["items"]] == ["c"]


async def test_cluster_scoped_objects_have_no_namespace(http) -> None:
    status, node = await http.post("/api/v1/nodes", {"metadata": {"name": "n1", "labels": {"zone": "a"}}})
    assert status == 201 and "namespace" not in node["metadata"]
    status, body = await http.get("/api/v1/nodes/n1")
    assert status == 200 and body["metadata"]["name"] == "n1"
