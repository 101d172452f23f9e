"""Server-side apply and managedFields over real HTTP: apply creates, re-applies are no-ops, fields an applier
drops are removed, other managers' fields conflict unless forced, and every write records its manager."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from minik.api.resources import REGISTRY
from minik.apiserver import fieldpath
from minik.apiserver.apply import FieldManager, Managed, zero_object

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
APPLY = "application/apply-patch+yaml"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def deployment(replicas: int | None = 2, containers: tuple[str, ...] = ("c",), **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}},
                     "spec": {"containers": [{"name": n, "image": f"{n}:1", "ports": [{"containerPort": 80}]}
                                             if n == "c" else {"name": n, "image": f"{n}:1"} for n in containers]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": labels or {"app": "d"}},
            "spec": spec}


async def apply(http, path: str, body: Any, manager: str | None = "ci", **params: str) -> tuple[int, dict]:
    if manager is not None:
        params["fieldManager"] = manager
    return await http.call("PATCH", path, data=orjson.dumps(body), content_type=APPLY, params=params)


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(m["manager"], m["operation"]): m for m in obj["metadata"].get("managedFields", [])}


def owned(obj: dict[str, Any], manager: str, operation: str = "Apply") -> set[str]:
    """The fields a manager owns, as conflict messages print them."""
    entry = managers(obj).get((manager, operation))
    return {fieldpath.path_string(p) for p in fieldpath.decode(entry["fieldsV1"])} if entry else set()


async def test_apply_creates_a_missing_object_and_records_exactly_the_applied_fields(http) -> None:
    status, created = await apply(http, f"{DEPLOYMENTS}/d", deployment())
    assert status == 201, created
    assert created["spec"]["strategy"]["type"] == "RollingUpdate"  # defaults as for any create
    [entry] = created["metadata"]["managedFields"]
    assert entry["time"].endswith("Z")
    assert {k: v for k, v in entry.items() if k != "time"} == {
        "manager": "ci", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}},
                     "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {
                         "f:metadata": {"f:labels": {"f:app": {}}},
                         "f:spec": {"f:containers": {'k:{"name":"c"}': {
                             ".": {}, "f:image": {}, "f:name": {},
                             "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {
                                 ".": {}, "f:containerPort": {}}}}}}}}}}
    status, fetched = await http.get(f"{DEPLOYMENTS}/d")
    assert status == 200 and fetched == created


async def test_reapplying_the_same_configuration_changes_nothing(http) -> None:
    _, created = await apply(http, f"{DEPLOYMENTS}/d", deployment())
    status, again = await apply(http, f"{DEPLOYMENTS}/d", deployment())
    assert status == 200
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert again == created


async def test_apply_merges_keyed_lists_and_removes_only_what_it_alone_applied(http) -> None:
    await apply(http, f"{DEPLOYMENTS}/d", deployment(containers=("c", "sidecar"), app="d", tier="web"))
    status, labelled = await http.call("PATCH", f"{DEPLOYMENTS}/d", {"metadata": {"labels": {"team": "x"}}},
                                       content_type="application/merge-patch+json",
                                       params={"fieldManager": "labeler"})
    assert status == 200 and owned(labelled, "labeler", "Update") == {".metadata.labels.team"}

    status, body = await apply(http, f"{DEPLOYMENTS}/d", deployment(containers=("c",), app="d"))
    assert status == 200, body
    assert body["metadata"]["labels"] == {"app": "d", "team": "x"}  # tier dropped, the labeler's label kept
    [container] = body["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "c" and container["terminationMessagePath"] == "/dev/termination-log"
    assert '.spec.template.spec.containers[name="sidecar"]' not in owned(body, "ci")

    # another applier's item in the same keyed list is merged in and survives the first applier's re-apply
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {
        "spec": {"containers": [{"name": "log", "image": "log:1"}]}}}}
    status, body = await apply(http, f"{DEPLOYMENTS}/d", other, manager="logging")
    assert status == 200
    assert [c["name"] for c in body["spec"]["template"]["spec"]["containers"]] == ["c", "log"]
    status, body = await apply(http, f"{DEPLOYMENTS}/d", deployment(containers=("c",), app="d", tier="api"))
    assert [c["name"] for c in body["spec"]["template"]["spec"]["containers"]] == ["c", "log"]
    assert body["metadata"]["labels"] == {"app": "d", "team": "x", "tier": "api"}


async def test_a_field_another_manager_set_is_a_conflict_unless_forced(http) -> None:
    await apply(http, f"{DEPLOYMENTS}/d", deployment(replicas=None))
    await http.call("PATCH", f"{DEPLOYMENTS}/d", {"spec": {"replicas": 3}},
                    content_type="application/merge-patch+json", params={"fieldManager": "scaler"})

    status, body = await apply(http, f"{DEPLOYMENTS}/d", deployment(replicas=5))
    assert status == 409
    assert body["reason"] == "Conflict" and body["code"] == 409
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "scaler" using apps/v1: .spec.replicas'
    assert body["details"] == {"causes": [{"reason": "FieldManagerConflict",
                                           "message": 'conflict with "scaler" using apps/v1',
                                           "field": ".spec.replicas"}]}
    _, live = await http.get(f"{DEPLOYMENTS}/d")
    assert live["spec"]["replicas"] == 3

    status, body = await apply(http, f"{DEPLOYMENTS}/d", deployment(replicas=5), force="true")
    assert status == 200 and body["spec"]["replicas"] == 5
    assert ".spec.replicas" in owned(body, "ci")
    assert ("scaler", "Update") not in managers(body)  # it owned nothing else


async def test_applying_the_value_another_manager_set_shares_the_field(http) -> None:
    await apply(http, f"{DEPLOYMENTS}/d", deployment(replicas=None))
    await http.call("PATCH", f"{DEPLOYMENTS}/d", {"spec": {"replicas": 3}},
                    content_type="application/merge-patch+json", params={"fieldManager": "scaler"})
    status, body = await apply(http, f"{DEPLOYMENTS}/d", deployment(replicas=3))
    assert status == 200
    assert ".spec.replicas" in owned(body, "ci") and owned(body, "scaler", "Update") == {".spec.replicas"}
    status, body = await apply(http, f"{DEPLOYMENTS}/d", deployment(replicas=4))
    assert status == 409 and body["details"]["causes"][0]["field"] == ".spec.replicas"


async def test_conflicts_with_several_fields_and_appliers_are_listed_per_manager(http) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1", "b": "1"}}
    assert (await apply(http, f"{CONFIGMAPS}/cm", cm, manager="first"))[0] == 201
    status, body = await apply(http, f"{CONFIGMAPS}/cm", {**cm, "data": {"a": "2", "b": "2"}}, manager="second")
    assert status == 409
    assert body["message"] == ('Apply failed with 2 conflicts: conflicts with "first":\n- .data.a\n- .data.b')
    assert [c["message"] for c in body["details"]["causes"]] == ['conflict with "first"'] * 2
    # releasing a field: an apply without it leaves it to the other owner
    status, body = await apply(http, f"{CONFIGMAPS}/cm", {**cm, "data": {"a": "1"}}, manager="second")
    assert status == 200
    status, body = await apply(http, f"{CONFIGMAPS}/cm", {**cm, "data": {"b": "1"}}, manager="first")
    assert status == 200 and body["data"] == {"a": "1", "b": "1"}  # "a" is still the second applier's


async def test_apply_checks_its_options_and_configuration_as_kubernetes_does(http) -> None:
    status, body = await apply(http, f"{DEPLOYMENTS}/d", deployment(), manager=None)
    assert status == 422 and body["reason"] == "Invalid"
    assert body["message"] == ('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
                               'for apply patch')
    status, body = await http.call("PATCH", f"{DEPLOYMENTS}/d", {"spec": {}},
                                   content_type="application/merge-patch+json", params={"force": "true"})
    assert status == 422 and "force: Forbidden: may not be specified for non-apply patch" in body["message"]
    status, body = await apply(http, f"{DEPLOYMENTS}/d", {**deployment(), "kind": "ReplicaSet"})
    assert status == 400
    with_fields = copy.deepcopy(deployment())
    with_fields["metadata"]["managedFields"] = [{"manager": "x"}]
    status, body = await apply(http, f"{DEPLOYMENTS}/d", with_fields)
    assert status == 400 and body["message"] == "metadata.managedFields must be nil"
    status, body = await apply(http, f"{DEPLOYMENTS}/d", deployment(), manager="x" * 129)
    assert status == 422 and "fieldManager: Too long" in body["message"]


async def test_apply_as_yaml_and_dry_run(http) -> None:
    yaml_body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: '1'\n"
    status, body = await http.call("PATCH", f"{CONFIGMAPS}/cm", data=yaml_body, content_type=APPLY,
                                   params={"fieldManager": "ci", "dryRun": "All"})
    assert status == 201 and body["data"] == {"a": "1"}
    assert (await http.get(f"{CONFIGMAPS}/cm"))[0] == 404
    status, body = await http.call("PATCH", f"{CONFIGMAPS}/cm", data=yaml_body, content_type=APPLY,
                                   params={"fieldManager": "ci"})
    assert status == 201 and owned(body, "ci") == {".data.a"}


async def test_writes_record_an_update_by_their_field_manager(http) -> None:
    status, created = await http.call("POST", CONFIGMAPS, {"metadata": {"name": "cm", "labels": {"a": "1"}},
                                                           "data": {"k": "v"}}, params={"fieldManager": "maker"})
    assert status == 201
    [entry] = created["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == ("maker", "Update", "v1")
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}}

    # no fieldManager: the User-Agent's product names the manager, and it takes over what it changes
    async with http.session.patch(f"{CONFIGMAPS}/cm", data=b'{"data":{"k":"w"}}', headers={
            "Content-Type": "application/merge-patch+json",
            "User-Agent": "kubectl/v1.32.4 (linux/amd64) kubernetes/abcdef"}) as response:
        assert response.status == 200
        patched = await response.json()
    assert owned(patched, "kubectl", "Update") == {".data.k"}
    assert owned(patched, "maker", "Update") == {".data", ".metadata.labels", ".metadata.labels.a"}

    # a write that changes nothing records nothing and keeps the resourceVersion
    status, same = await http.call("PATCH", f"{CONFIGMAPS}/cm", {"data": {"k": "w"}},
                                   content_type="application/merge-patch+json", params={"fieldManager": "idle"})
    assert status == 200 and same == patched

    # removing a field removes it from its owners; a manager left with nothing is dropped
    status, body = await http.call("PATCH", f"{CONFIGMAPS}/cm", {"data": {"k": None}},
                                   content_type="application/merge-patch+json", params={"fieldManager": "cleaner"})
    assert status == 200 and ("kubectl", "Update") not in managers(body)
    assert ("cleaner", "Update") not in managers(body)  # removing alone owns nothing


async def test_status_writes_are_recorded_for_the_status_subresource(http) -> None:
    pods = "/api/v1/namespaces/default/pods"
    await http.call("POST", pods, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
                    params={"fieldManager": "maker"})
    status, body = await http.call("PATCH", f"{pods}/p/status", {"status": {"podIP": "10.0.0.1"}},
                                   content_type="application/merge-patch+json", params={"fieldManager": "kubelet"})
    assert status == 200
    entry = managers(body)[("kubelet", "Update")]
    assert entry["subresource"] == "status" and entry["fieldsV1"] == {"f:status": {"f:podIP": {}}}
    assert not any(p.startswith(".status") for p in owned(body, "maker", "Update"))


async def test_kubectl_server_side_apply_takes_over_what_client_side_apply_recorded(http) -> None:
    manifest = deployment(replicas=None)
    csa = copy.deepcopy(manifest)
    csa["metadata"]["annotations"] = {LAST_APPLIED: orjson.dumps(manifest).decode() + "\n"}
    status, _ = await http.call("POST", DEPLOYMENTS, csa, params={"fieldManager": "kubectl-client-side-apply"})
    assert status == 201

    # the image is in the last-applied configuration: kubectl's server-side apply may change it
    changed = copy.deepcopy(manifest)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "c:2"
    status, body = await apply(http, f"{DEPLOYMENTS}/d", changed, manager="kubectl")
    assert status == 200, body
    assert body["spec"]["template"]["spec"]["containers"][0]["image"] == "c:2"
    assert orjson.loads(body["metadata"]["annotations"][LAST_APPLIED]) == changed  # kept up to date

    # replicas was defaulted, so not in the annotation: still the client-side applier's
    status, body = await apply(http, f"{DEPLOYMENTS}/d", {**changed, "spec": {**changed["spec"], "replicas": 3}},
                               manager="kubectl")
    assert status == 409
    assert body["message"] == ('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using '
                               'apps/v1: .spec.replicas')
    # any other manager conflicts on everything client-side apply set to another value
    status, body = await apply(http, f"{DEPLOYMENTS}/d", manifest, manager="other")
    assert status == 409 and body["details"]["causes"][0]["field"] == '.spec.template.spec.containers[name="c"].image'


async def test_managed_fields_a_client_writes_replace_the_recorded_ones(http) -> None:
    """How kubectl migrates client-side apply ownership to server-side apply: a JSON patch of managedFields."""
    await http.call("POST", CONFIGMAPS, {"metadata": {"name": "cm"}, "data": {"k": "v"}},
                    params={"fieldManager": "kubectl-client-side-apply"})
    _, live = await http.get(f"{CONFIGMAPS}/cm")
    entry = dict(live["metadata"]["managedFields"][0], manager="kubectl", operation="Apply")
    patch = [{"op": "replace", "path": "/metadata/managedFields", "value": [entry]},
             {"op": "replace", "path": "/metadata/resourceVersion", "value": live["metadata"]["resourceVersion"]}]
    status, body = await http.call("PATCH", f"{CONFIGMAPS}/cm", patch, content_type="application/json-patch+json")
    assert status == 200 and list(managers(body)) == [("kubectl", "Apply")]
    # now dropping the field from kubectl's configuration removes it
    status, body = await apply(http, f"{CONFIGMAPS}/cm", {"apiVersion": "v1", "kind": "ConfigMap",
                                                          "metadata": {"name": "cm"}, "data": {"j": "w"}},
                               manager="kubectl")
    assert status == 200 and body["data"] == {"j": "w"}


async def test_an_object_nobody_tracked_belongs_to_before_first_apply(http) -> None:
    _, default = await http.get("/api/v1/namespaces/default")
    assert "managedFields" not in default["metadata"]  # created by the server itself
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": {"env": "dev"}}}
    status, applied = await apply(http, "/api/v1/namespaces/default", body)
    assert status == 200 and applied["metadata"]["labels"]["env"] == "dev"
    assert ("before-first-apply", "Update") in managers(applied)
    assert ".metadata.labels.env" in owned(applied, "ci")


def test_the_one_pass_create_record_matches_the_general_comparison() -> None:
    for plural, group, obj in [
        ("pods", "", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"},
                                                                     "finalizers": ["x", "y"]},
                      "spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "A", "value": "1"}],
                                               "resources": {}}], "tolerations": [{"key": "k"}]},
                      "status": {"phase": "Pending"}}),
        ("deployments", "apps", {**deployment(), "metadata": {"name": "d", "ownerReferences": [{"uid": "u"}]}}),
        ("configmaps", "", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}),
    ]:
        resource = REGISTRY.get(group, "v1", plural)
        fast = copy.deepcopy(obj)
        FieldManager(resource, "m").created(fast)
        general = copy.deepcopy(obj)
        FieldManager(resource, "m")._record(Managed(), zero_object(resource), general)
        assert fast["metadata"]["managedFields"][0]["fieldsV1"] == \
            general["metadata"]["managedFields"][0]["fieldsV1"], plural


def test_field_sets_round_trip_through_fields_v1() -> None:
    shape = fieldpath.kind_shape("Deployment")
    paths = fieldpath.field_set(deployment(), shape)
    assert fieldpath.decode(fieldpath.encode(paths)) == paths
    assert ('.spec.template.spec.containers[name="c"].ports[containerPort=80,protocol="TCP"].containerPort'
            in {fieldpath.path_string(p) for p in paths})


def test_a_tree_answers_whether_it_holds_a_path_as_its_decoded_set_does() -> None:
    shape = fieldpath.kind_shape("Deployment")
    owned_paths = fieldpath.field_set(deployment(), shape)
    tree = fieldpath.encode(owned_paths)
    every = owned_paths | {path[:i] for path in owned_paths for i in range(1, len(path))}
    for path in every | {("f:spec", "f:paused"), ("f:status",), ("f:metadata", "f:labels", "f:zzz")}:
        assert fieldpath.tree_holds_any(tree, {path}) == (path in owned_paths), path
    assert not fieldpath.tree_holds_any(tree, set())


def test_an_update_rewrites_only_the_entries_it_changes() -> None:
    """Stored entries are decoded only when their fields are read: another manager's tree goes back as it was
    (the same object), the writer's own is recomputed, and one that loses a field is re-encoded without it."""
    bystander = {"f:data": {".": {}, "f:a": {}}}
    loser = {"f:data": {"f:b": {}}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}}
    current = {"metadata": {"name": "cm", "managedFields": [
        {"manager": "one", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": bystander},
        {"manager": "two", "operation": "Update", "apiVersion": "v1", "time": "2026-01-02T00:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": loser}]},
        "data": {"a": "1", "b": "2"}}
    new = copy.deepcopy(current)
    new["data"]["b"] = "3"
    FieldManager(REGISTRY.resolve("configmaps"), "three").updated(new, current)
    entries = {e["manager"]: e["fieldsV1"] for e in new["metadata"]["managedFields"]}
    assert entries["one"] is bystander
    assert entries["two"] == {"f:metadata": {"f:labels": {".": {}, "f:x": {}}}}
    assert entries["three"] == {"f:data": {"f:b": {}}}


def test_a_create_like_an_earlier_one_gets_the_same_record_in_a_tree_of_its_own() -> None:
    """Creates of the same content (a ReplicaSet's pods) reuse the record computed for the first, each in a
    tree of its own; other content gets its own record."""
    resource = REGISTRY.get("apps", "v1", "deployments")
    first, second, other = deployment(), deployment(), deployment(containers=("c", "sidecar"))
    for obj in (first, second, other):
        FieldManager(resource, "m").created(obj)
    trees = [obj["metadata"]["managedFields"][0]["fieldsV1"] for obj in (first, second, other)]
    assert trees[0] == trees[1] and trees[0] is not trees[1]
    assert trees[0]["f:spec"]["f:template"]["f:spec"]["f:containers"].keys() == {'k:{"name":"c"}'}
    assert trees[2]["f:spec"]["f:template"]["f:spec"]["f:containers"].keys() == {'k:{"name":"c"}',
                                                                                 'k:{"name":"sidecar"}'}
    general = deployment(containers=("c", "sidecar"))
    FieldManager(resource, "m")._record(Managed(), zero_object(resource), general)
    assert trees[2] == general["metadata"]["managedFields"][0]["fieldsV1"]
