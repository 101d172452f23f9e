"""Strategic merge patch: lists merge by their Kubernetes merge keys, directives apply."""

from __future__ import annotations

import pytest

from minik.api.errors import StatusError
from minik.apiserver.patch import strategic_merge_patch


def pod() -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a"],
                                                            "labels": {"app": "web", "tier": "x"}},
            "spec": {"containers": [{"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}],
                                     "ports": [{"containerPort": 80}]},
                                    {"name": "side", "image": "side:1"}],
                     "tolerations": [{"key": "k", "operator": "Exists"}]}}


def test_containers_merge_by_name_and_keep_the_others() -> None:
    result = strategic_merge_patch(pod(), {"spec": {"containers": [{"name": "app", "image": "app:2"}]}}, "Pod")
    containers = result["spec"]["containers"]
    assert [c["name"] for c in containers] == ["app", "side"]
    assert containers[0]["image"] == "app:2" and containers[0]["env"] == [{"name": "A", "value": "1"}]


def test_nested_lists_merge_by_their_own_keys() -> None:
    patch = {"spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "2"}],
                                      "ports": [{"containerPort": 80, "name": "http"}]}]}}
    container = strategic_merge_patch(pod(), patch, "Pod")["spec"]["containers"][0]
    assert container["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert container["ports"] == [{"containerPort": 80, "name": "http"}]


def test_lists_without_a_merge_key_are_replaced() -> None:
    result = strategic_merge_patch(pod(), {"spec": {"tolerations": [{"key": "z", "operator": "Exists"}]}}, "Pod")
    assert result["spec"]["tolerations"] == [{"key": "z", "operator": "Exists"}]


def test_delete_and_replace_directives() -> None:
    deleted = strategic_merge_patch(pod(), {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}, "Pod")
    assert [c["name"] for c in deleted["spec"]["containers"]] == ["app"]
    replaced = strategic_merge_patch(pod(), {"spec": {"containers": [{"name": "only", "image": "o"},
                                                                     {"$patch": "replace"}]}}, "Pod")
    assert replaced["spec"]["containers"] == [{"name": "only", "image": "o"}]
    labels = strategic_merge_patch(pod(), {"metadata": {"labels": {"new": "1", "$patch": "replace"}}}, "Pod")
    assert labels["metadata"]["labels"] == {"new": "1"}


def test_null_removes_a_field_and_primitive_merge_lists_are_unions() -> None:
    result = strategic_merge_patch(pod(), {"metadata": {"labels": {"tier": None}, "finalizers": ["b", "a"]}}, "Pod")
    assert result["metadata"]["labels"] == {"app": "web"}
    assert result["metadata"]["finalizers"] == ["a", "b"]
    result = strategic_merge_patch(result, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}, "Pod")
    assert result["metadata"]["finalizers"] == ["b"]


def test_set_element_order_and_retain_keys() -> None:
    result = strategic_merge_patch(pod(), {"spec": {"$setElementOrder/containers": [{"name": "side"},
                                                                                   {"name": "app"}]}}, "Pod")
    assert [c["name"] for c in result["spec"]["containers"]] == ["side", "app"]
    deployment = {"kind": "Deployment", "spec": {"strategy": {"type": "RollingUpdate",
                                                              "rollingUpdate": {"maxSurge": 1}}}}
    result = strategic_merge_patch(deployment, {"spec": {"strategy": {"type": "Recreate",
                                                                      "$retainKeys": ["type"]}}}, "Deployment")
    assert result["spec"]["strategy"] == {"type": "Recreate"}


def test_an_item_without_its_merge_key_is_a_bad_request() -> None:
    with pytest.raises(StatusError) as error:
        strategic_merge_patch(pod(), {"spec": {"containers": [{"image": "x"}]}}, "Pod")
    assert error.value.code == 400


async def test_strategic_merge_patch_over_http(http) -> None:
    path = "/api/v1/namespaces/default/pods"
    await http.post(path, {k: v for k, v in pod().items() if k != "metadata"} | {"metadata": {"name": "p"}})
    status, body = await http.patch(f"{path}/p", {"spec": {"containers": [{"name": "app", "image": "app:2"}]}},
                                    "application/strategic-merge-patch+json")
    assert status == 200, body
    assert [(c["name"], c["image"]) for c in body["spec"]["containers"]] == [("app", "app:2"), ("side", "side:1")]
