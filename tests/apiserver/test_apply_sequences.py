"""Server-side apply under the sequences of writes that kubectl, Helm and client-go send, over real HTTP: a create
then an apply, an apply then a scale then an apply, a protobuf create then an apply, and a Helm release's
install, upgrade and rollback between the controller's status writes. No sequence meets the phantom
"before-first-apply" owner, and conflicts name the manager Kubernetes names."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from managed import CONTROLLER_AGENT, KUBECTL_AGENT, cached, entries, owned, send
from protobuf_wire import PROTOBUF, encode_object

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"


def release(replicas: int | None = 2, image: str = "web:1", name: str = "demo") -> dict[str, Any]:
    """A chart's Deployment as Helm renders it."""
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": name}},
                            "template": {"metadata": {"labels": {"app": name}},
                                         "spec": {"containers": [{"name": "web", "image": image}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {"app": name, "app.kubernetes.io/managed-by": "Helm"},
                         "annotations": {"meta.helm.sh/release-name": name,
                                         "meta.helm.sh/release-namespace": "default"}},
            "spec": spec}


async def apply(http, body: dict[str, Any], manager: str = "helm", force: bool = False) -> tuple[int, dict]:
    return await send(http, "PATCH", f"{DEPLOYMENTS}/{body['metadata']['name']}", body, content_type=APPLY,
                      fieldManager=manager, force="true" if force else "false")


async def controller_status(http, obj: dict[str, Any]) -> dict[str, Any]:
    """What the deployment controller writes after each change: status, from its cache's copy of the object."""
    copy_ = cached(obj)
    copy_["status"] = {"observedGeneration": obj["metadata"]["generation"],
                       "replicas": obj["spec"]["replicas"], "updatedReplicas": obj["spec"]["replicas"]}
    status, body = await send(http, "PUT", f"{DEPLOYMENTS}/{obj['metadata']['name']}/status", copy_,
                              agent=CONTROLLER_AGENT)
    assert status == 200, body
    return body


async def test_a_create_then_an_apply_by_the_same_manager_name_finds_its_owner(http) -> None:
    """Update then Apply: what the create set is the creator's, so an apply of the same values has no conflict.
    A create (Update) and an apply by one name are two managers, as in Kubernetes: an apply that changes what
    the create set conflicts with it until forced."""
    status, created = await send(http, "POST", DEPLOYMENTS, release(), fieldManager="helm")
    assert status == 201 and list(entries(created)) == [("helm", "Update", "")]
    assert created["metadata"]["managedFields"][0]["apiVersion"] == "apps/v1"
    status, applied = await apply(http, release())
    assert status == 200, applied
    assert set(entries(applied)) == {("helm", "Update", ""), ("helm", "Apply", "")}
    assert ".spec.replicas" in owned(applied, "helm", "Apply") & owned(applied, "helm")

    status, body = await apply(http, release(replicas=3))
    assert status == 409
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "helm" using apps/v1: .spec.replicas'
    status, body = await apply(http, release(replicas=3), force=True)
    assert status == 200 and body["spec"]["replicas"] == 3
    assert ".spec.replicas" not in owned(body, "helm")


async def test_apply_then_scale_then_apply(http) -> None:
    status, _ = await apply(http, release(), manager="kubectl")
    assert status == 201
    status, _ = await send(http, "PATCH", f"{DEPLOYMENTS}/demo/scale", {"spec": {"replicas": 5}},
                           content_type=MERGE, agent=KUBECTL_AGENT)
    assert status == 200

    # the scale took the replicas: re-applying the old count conflicts with it, naming its subresource
    status, body = await apply(http, release(), manager="kubectl")
    assert status == 409
    assert body["message"] == ('Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
                               'using apps/v1: .spec.replicas')
    # applying the scaled count shares it; a configuration without replicas leaves them to the scale
    status, body = await apply(http, release(replicas=5, image="web:2"), manager="kubectl")
    assert status == 200 and ".spec.replicas" in owned(body, "kubectl", subresource="scale")
    status, body = await apply(http, release(replicas=None, image="web:2"), manager="kubectl")
    assert status == 200 and body["spec"]["replicas"] == 5
    assert ".spec.replicas" not in owned(body, "kubectl", "Apply")
    assert owned(body, "kubectl", subresource="scale") == {".spec.replicas"}
    assert ("before-first-apply", "Update", "") not in entries(body)


async def test_a_protobuf_create_then_an_apply(http) -> None:
    """kubectl's typed clients create built-in kinds in protobuf: the record is the one a JSON create makes."""
    obj = copy.deepcopy(release())
    obj["metadata"]["namespace"] = "default"
    async with http.session.post(DEPLOYMENTS, data=encode_object(obj), params={"fieldManager": "kubectl-create"},
                                 headers={"Content-Type": PROTOBUF, "Accept": "application/json",
                                          "User-Agent": KUBECTL_AGENT}) as response:
        assert response.status == 201, await response.text()
        created = orjson.loads(await response.read())
    status, twin = await send(http, "POST", DEPLOYMENTS, release(name="twin"), fieldManager="kubectl-create")
    assert status == 201
    [entry] = created["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == ("kubectl-create", "Update", "apps/v1")
    shown = orjson.dumps(entry["fieldsV1"]).replace(b"demo", b"twin")
    assert orjson.loads(shown) == twin["metadata"]["managedFields"][0]["fieldsV1"]

    status, applied = await apply(http, release(image="web:1"), manager="kubectl")
    assert status == 200, applied
    assert set(entries(applied)) == {("kubectl-create", "Update", ""), ("kubectl", "Apply", "")}


async def test_a_helm_release_installs_upgrades_and_rolls_back_between_controller_writes(http) -> None:
    """Helm 4 installs, upgrades and rolls back with server-side apply (force=false); the deployment controller
    writes status from its cache between them."""
    status, installed = await apply(http, release())
    assert status == 201, installed
    live = await controller_status(http, installed)

    status, upgraded = await apply(http, release(replicas=3, image="web:2"))
    assert status == 200, upgraded
    assert upgraded["spec"]["replicas"] == 3 and upgraded["metadata"]["generation"] == 2
    live = await controller_status(http, upgraded)
    assert owned(live, "kube-controller-manager", subresource="status") == {
        ".status.observedGeneration", ".status.replicas", ".status.updatedReplicas"}

    status, rolled_back = await apply(http, release())
    assert status == 200, rolled_back
    assert rolled_back["spec"]["template"]["spec"]["containers"][0]["image"] == "web:1"
    assert set(entries(rolled_back)) == {("helm", "Apply", ""), ("kube-controller-manager", "Update", "status")}

    # a scale between two upgrades: the release's own count conflicts with it, as on Kubernetes; the scaled count
    # does not
    status, _ = await send(http, "PATCH", f"{DEPLOYMENTS}/demo/scale", {"spec": {"replicas": 4}},
                           content_type=MERGE, agent=KUBECTL_AGENT)
    assert status == 200
    status, body = await apply(http, release(image="web:3"))
    assert status == 409 and body["details"]["causes"][0]["message"] == \
        'conflict with "kubectl" with subresource "scale" using apps/v1'
    status, body = await apply(http, release(replicas=4, image="web:3"))
    assert status == 200 and body["spec"]["template"]["spec"]["containers"][0]["image"] == "web:3"
