"""Custom resources in the garbage collector's graph and the namespace controller's sweep: a custom resource owns
pods and is owned like any object, from the moment its CRD is established (the controllers were started before)."""

from __future__ import annotations

from typing import Any

from controller_helpers import eventually

from minik.api.errors import StatusError
from minik.client import Client
from minik.cluster import Cluster
from tests.crds import GROUP, widget, widget_crd

Obj = dict[str, Any]


async def established(client: Client) -> None:
    await client.create("customresourcedefinitions", widget_crd())

    async def served() -> bool:
        return client.registry.get(GROUP, "v1", "widgets") is not None
    await eventually(served, timeout=5)


def owned_by(obj: Obj, owner: Obj) -> Obj:
    obj["metadata"]["ownerReferences"] = [{
        "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True, "controller": True}]
    return obj


def pod(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


async def missing(client: Client, resource: str, name: str, namespace: str | None = "default") -> bool:
    try:
        await client.get(resource, name, namespace)
    except StatusError as exc:
        return exc.code == 404
    return False


async def test_a_custom_resource_owns_pods_that_go_when_it_goes(controlled: Cluster) -> None:
    client = controlled.in_process_client()
    await established(client)
    owner = await client.create("widgets", widget("owner"), "default")
    await client.create("pods", owned_by(pod("owned-a"), owner), "default")
    await client.create("pods", owned_by(pod("owned-b"), owner), "default")
    await client.delete("widgets", "owner", "default")

    async def pods_gone() -> bool:
        return await missing(client, "pods", "owned-a") and await missing(client, "pods", "owned-b")
    await eventually(pods_gone, timeout=15)


async def test_a_custom_resource_owned_by_a_config_map_goes_with_it_and_foreground_waits_for_it(
        controlled: Cluster) -> None:
    client = controlled.in_process_client()
    await established(client)
    owner = await client.create("configmaps", {"metadata": {"name": "owner"}}, "default")
    await client.create("widgets", owned_by(widget("dependent"), owner), "default")
    await client.delete("configmaps", "owner", "default")

    async def widget_gone() -> bool:
        return await missing(client, "widgets", "dependent")
    await eventually(widget_gone, timeout=15)
    parent = await client.create("widgets", widget("parent"), "default")
    await client.create("widgets", owned_by(widget("child"), parent), "default")
    marked = await client.delete("widgets", "parent", "default", propagation_policy="Foreground")
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"]

    async def both_gone() -> bool:
        child_gone = await missing(client, "widgets", "child")
        if not child_gone:
            assert not await missing(client, "widgets", "parent"), "the owner went before its dependent"
        return child_gone and await missing(client, "widgets", "parent")
    await eventually(both_gone, timeout=15)


async def test_deleting_a_namespace_deletes_its_custom_resources(controlled: Cluster) -> None:
    client = controlled.in_process_client()
    await established(client)
    await client.create("namespaces", {"metadata": {"name": "team"}})
    await client.create("widgets", widget("w"), "team")
    await client.delete("namespaces", "team")

    async def namespace_gone() -> bool:
        return await missing(client, "namespaces", "team", None)
    await eventually(namespace_gone, timeout=20)
    assert await missing(client, "widgets", "w", "team")
