"""A value of the wrong JSON type for its field is refused as Kubernetes' decoder refuses it: 400 BadRequest in
Go's words for a create or update, 422 on the field ``patch`` for a patch, and nothing is stored."""

from __future__ import annotations

import pytest

from minik.api import schema
from minik.apiserver import fieldvalidation

PODS = "/api/v1/namespaces/default/pods"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def pod(name: str, **spec: object) -> dict:
    container = {"name": "app", "image": "busybox", **spec.pop("container", {})}  # type: ignore[dict-item]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def deployment(name: str, **spec: object) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "busybox"}]}}, **spec}}


def go_says(kind: str, message: str) -> str:
    return f'{kind} in version "v1" cannot be handled as a {kind}: json: {message}'


@pytest.mark.parametrize(("path", "body", "message"), [
    (DEPLOYMENTS, deployment("web", replicas="3"),
     go_says("Deployment", "cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32")),
    (CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": 1}},
     go_says("ConfigMap", "cannot unmarshal number into Go struct field ConfigMap.data of type string")),
    (CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 5}},
     go_says("ConfigMap", "cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string")),
    (CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": ["x"]}},
     go_says("ConfigMap",
             "cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string")),
    (PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": "x"},
     go_says("Pod", "cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec")),
    (PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": {"name": "app"}}},
     go_says("Pod", "cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container")),
    (PODS, pod("p", hostNetwork="yes"),
     go_says("Pod", "cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool")),
    (PODS, pod("p", container={"args": ["--port", 8080]}),
     go_says("Pod", "cannot unmarshal number into Go struct field Container.spec.containers.args of type string")),
    (PODS, pod("p", container={"ports": ["http"]}),
     go_says("Pod",
             "cannot unmarshal string into Go struct field Container.spec.containers.ports of type v1.ContainerPort")),
    (DEPLOYMENTS, deployment("web", strategy={"rollingUpdate": {"maxSurge": True}}),
     'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal bool into Go value of '
     'type int32'),
    (PODS, pod("p", container={"resources": {"limits": {"cpu": "lots"}}}),
     "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression "
     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
])
async def test_a_value_of_the_wrong_type_is_refused_in_gos_words_and_nothing_is_stored(
        http, path: str, body: dict, message: str) -> None:
    status, answer = await http.post(path, body)
    assert (status, answer["reason"], answer["message"]) == (400, "BadRequest", message)
    status, listed = await http.get(path)
    assert status == 200 and listed["items"] == []


async def test_nulls_numbers_for_quantities_and_strings_for_int_or_strings_are_taken(http) -> None:
    body = pod("p", hostNetwork=None, container={"resources": {"limits": {"cpu": 1, "memory": "64Mi"}},
                                                 "ports": [{"containerPort": 80, "name": None}]})
    status, created = await http.post(PODS, body)
    assert status == 201, created
    assert created["spec"]["containers"][0]["resources"]["limits"]["memory"] == "64Mi"
    status, created = await http.post(DEPLOYMENTS, deployment(
        "web", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 0}}))
    assert status == 201, created


async def test_a_patch_that_sets_a_value_of_the_wrong_type_is_invalid_on_the_field_patch(http) -> None:
    assert (await http.post(DEPLOYMENTS, deployment("web", replicas=1)))[0] == 201
    status, answer = await http.patch(f"{DEPLOYMENTS}/web", {"spec": {"replicas": "two"}})
    assert status == 422, answer
    cause = answer["details"]["causes"][0]
    assert cause["field"] == "patch"
    assert cause["message"].endswith("json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas "
                                     "of type int32")
    status, stored = await http.get(f"{DEPLOYMENTS}/web")
    assert stored["spec"]["replicas"] == 1


async def test_an_update_with_a_value_of_the_wrong_type_leaves_the_stored_object_alone(http) -> None:
    status, created = await http.post(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                                   "data": {"a": "1"}})
    assert status == 201
    created["data"] = {"a": False}
    status, answer = await http.put(f"{CONFIGMAPS}/c", created)
    assert status == 400 and answer["message"] == go_says(
        "ConfigMap", "cannot unmarshal bool into Go struct field ConfigMap.data of type string")
    assert (await http.get(f"{CONFIGMAPS}/c"))[1]["data"] == {"a": "1"}


def test_every_field_of_every_kind_has_a_go_type_for_its_errors() -> None:
    s = schema.load()
    for type_name in s.types:
        for field, walk in s.fields(type_name).items():
            if walk is not None:
                how, _inner, go = walk
                assert go and " " not in go.replace("interface {}", ""), (type_name, field)
    assert s.fields("io.k8s.api.core.v1.ResourceRequirements")["limits"] == (
        "{}", schema.QUANTITY, "map[string]resource.Quantity")
    assert s.fields("io.k8s.api.apps.v1.DeploymentSpec")["template"][2] == "v1.PodTemplateSpec"


def test_a_body_that_is_no_kind_of_its_own_is_held_to_its_types_too() -> None:
    found = fieldvalidation.check_decodable({"gracePeriodSeconds": "soon"},
                                            "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions")
    assert found is not None
    assert found.message == ("json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds "
                             "of type int64")
