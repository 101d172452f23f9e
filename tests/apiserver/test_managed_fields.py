"""managedFields over real HTTP, as Kubernetes keeps them through every write: a write that sends none keeps the
object's (an informer's cached copy cannot wipe them), ``[]`` or ``[{}]`` resets them, a write that names no
manager is recorded as ``unknown``, and the status and scale subresources record their writes with their
subresource and own only what they change."""

from __future__ import annotations

from typing import Any

from managed import CONTROLLER_AGENT, KUBECTL_AGENT, cached, entries, owned, send

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"


def deployment(replicas: int = 2, image: str = "web:1") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"app": "d"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": {"labels": {"app": "d"}},
                                  "spec": {"containers": [{"name": "web", "image": image}]}}}}


async def test_a_status_update_from_a_cached_copy_keeps_the_managed_fields(http) -> None:
    """The deployment controller writes status from its informer's copy, which has no managedFields: the
    applier's entry survives, and the controller's write is recorded for the status subresource."""
    status, applied = await send(http, "PATCH", f"{DEPLOYMENTS}/d", deployment(), content_type=APPLY,
                                 fieldManager="helm")
    assert status == 201, applied
    copy_ = cached(applied)
    copy_["status"] = {"observedGeneration": 1, "replicas": 2}
    status, written = await send(http, "PUT", f"{DEPLOYMENTS}/d/status", copy_, agent=CONTROLLER_AGENT)
    assert status == 200, written
    assert entries(written)[("helm", "Apply", "")] == entries(applied)[("helm", "Apply", "")]
    assert owned(written, "kube-controller-manager", subresource="status") == {
        ".status.observedGeneration", ".status.replicas"}

    # the same for a write to the main resource by a client that names no manager at all
    copy_ = cached(written)
    copy_["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    status, annotated = await send(http, "PUT", f"{DEPLOYMENTS}/d", copy_)
    assert status == 200, annotated
    assert entries(annotated)[("helm", "Apply", "")] == entries(applied)[("helm", "Apply", "")]
    assert owned(annotated, "unknown") == {".metadata.annotations",
                                           ".metadata.annotations.deployment.kubernetes.io/revision"}
    assert ("kube-controller-manager", "Update", "status") in entries(annotated)
    # and the next apply of a changed field by the same applier finds its owner: no conflict
    status, upgraded = await send(http, "PATCH", f"{DEPLOYMENTS}/d", deployment(replicas=3, image="web:2"),
                                  content_type=APPLY, fieldManager="helm", force="false")
    assert status == 200, upgraded
    assert ("before-first-apply", "Update", "") not in entries(upgraded)


async def test_an_empty_list_or_one_empty_entry_resets_the_managed_fields_and_updates_do_not_restart_them(
        http) -> None:
    status, created = await send(http, "POST", CONFIGMAPS, {"metadata": {"name": "cm"}, "data": {"a": "1"}},
                                 fieldManager="maker")
    assert status == 201 and list(entries(created)) == [("maker", "Update", "")]
    reset = {**created, "metadata": {**created["metadata"], "managedFields": []}, "data": {"a": "2"}}
    status, body = await send(http, "PUT", f"{CONFIGMAPS}/cm", reset, fieldManager="editor")
    assert status == 200 and body["data"] == {"a": "2"}
    assert "managedFields" not in body["metadata"]  # an untracked object: updates do not start tracking it
    status, body = await send(http, "PATCH", f"{CONFIGMAPS}/cm", {"data": {"b": "1"}}, content_type=MERGE,
                              fieldManager="editor")
    assert status == 200 and "managedFields" not in body["metadata"]

    # an apply does: what was there is before-first-apply's
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"c": "1"}}
    status, body = await send(http, "PATCH", f"{CONFIGMAPS}/cm", cm, content_type=APPLY, fieldManager="ci")
    assert status == 200 and owned(body, "before-first-apply") == {".data", ".data.a", ".data.b"}
    status, body = await send(http, "PATCH", f"{CONFIGMAPS}/cm", {"metadata": {"managedFields": [{}]}},
                              content_type=MERGE)
    assert status == 200 and "managedFields" not in body["metadata"]


async def test_managed_fields_that_cannot_be_read_are_ignored_and_the_objects_kept(http) -> None:
    _, created = await send(http, "POST", CONFIGMAPS, {"metadata": {"name": "cm"}, "data": {"a": "1"}},
                            fieldManager="maker")
    bad = {**created, "metadata": {**created["metadata"], "managedFields": [{"manager": "x", "operation": "Nope"}]},
           "data": {"a": "2"}}
    status, body = await send(http, "PUT", f"{CONFIGMAPS}/cm", bad, fieldManager="editor")
    assert status == 200
    assert set(entries(body)) == {("maker", "Update", ""), ("editor", "Update", "")}
    assert owned(body, "editor") == {".data.a"}


async def test_a_write_that_names_no_manager_is_recorded_as_unknown(http) -> None:
    status, created = await send(http, "POST", CONFIGMAPS, {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    assert status == 201
    assert owned(created, "unknown") == {".data", ".data.a"}
    status, patched = await send(http, "PATCH", f"{CONFIGMAPS}/cm", {"data": {"a": "2"}}, content_type=MERGE,
                                 agent=KUBECTL_AGENT)
    assert status == 200 and owned(patched, "kubectl") == {".data.a"} and owned(patched, "unknown") == {".data"}


async def test_a_scale_is_recorded_for_the_scale_subresource_and_takes_the_replicas_alone(http) -> None:
    status, applied = await send(http, "PATCH", f"{DEPLOYMENTS}/d", deployment(), content_type=APPLY,
                                 fieldManager="ci")
    assert status == 201
    status, scale = await send(http, "PATCH", f"{DEPLOYMENTS}/d/scale", {"spec": {"replicas": 5}},
                               content_type=MERGE, agent=KUBECTL_AGENT)
    assert status == 200 and scale["spec"]["replicas"] == 5
    _, live = await http.get(f"{DEPLOYMENTS}/d")
    entry = entries(live)[("kubectl", "Update", "scale")]
    assert {k: v for k, v in entry.items() if k != "time"} == {
        "manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:replicas": {}}}, "subresource": "scale"}
    assert owned(live, "ci", "Apply") == owned(applied, "ci", "Apply") - {".spec.replicas"}

    # a PUT of the Scale by another manager takes the replicas over; one that changes nothing records nothing
    scale_body = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"},
                  "spec": {"replicas": 6}}
    status, _ = await send(http, "PUT", f"{DEPLOYMENTS}/d/scale", scale_body, fieldManager="autoscaler")
    assert status == 200
    status, _ = await send(http, "PUT", f"{DEPLOYMENTS}/d/scale", scale_body, fieldManager="idle")
    _, live = await http.get(f"{DEPLOYMENTS}/d")
    assert owned(live, "autoscaler", subresource="scale") == {".spec.replicas"}
    assert ("kubectl", "Update", "scale") not in entries(live)
    assert not any(manager == "idle" for manager, _, _ in entries(live))


async def test_managed_fields_sent_to_a_subresource_are_ignored(http) -> None:
    _, applied = await send(http, "PATCH", f"{DEPLOYMENTS}/d", deployment(), content_type=APPLY, fieldManager="ci")
    forged = cached(applied)
    forged["metadata"]["managedFields"] = [{"manager": "forger", "operation": "Update", "apiVersion": "apps/v1",
                                            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]
    forged["status"] = {"replicas": 1}
    status, body = await send(http, "PUT", f"{DEPLOYMENTS}/d/status", forged, fieldManager="kubelet-ish")
    assert status == 200
    assert set(entries(body)) == {("ci", "Apply", ""), ("kubelet-ish", "Update", "status")}
