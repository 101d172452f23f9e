"""Namespace controller syncs against known caches (sample-controller style)."""

from __future__ import annotations

from objects import T0, pod

from minik.api.timestamps import rfc3339
from minik.controllers.namespace import NamespaceController
from minik.testing.controllers import RecordingClient, StaticInformerFactory


def namespace(name: str, deleting: bool = True) -> dict:
    ns = {"apiVersion": "v1", "kind": "Namespace",
          "metadata": {"name": name, "uid": f"ns-{name}", "resourceVersion": "1"},
          "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    if deleting:
        ns["metadata"]["deletionTimestamp"] = rfc3339(T0)
        ns["status"]["phase"] = "Terminating"
    return ns


def configmap(name: str, namespace: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}, "data": {}}


def build(ns: dict, content: list[dict]) -> tuple[NamespaceController, RecordingClient]:
    client = RecordingClient([ns, *content])
    return NamespaceController(client, StaticInformerFactory(client, {"namespaces": [ns]})), client


def conditions(client: RecordingClient, name: str) -> dict[str, tuple[str, str]]:
    status = client.stored("namespaces", name)["status"]  # type: ignore[index]
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions") or []}


async def test_a_terminating_namespace_has_its_content_deleted_and_waits_for_what_remains() -> None:
    ns = namespace("team")
    held = pod("worker", finalizers=["example.com/hold"])
    held["metadata"]["namespace"] = "team"
    controller, client = build(ns, [configmap("settings", "team"), held])
    await controller.sync("team")
    collections = [(a.resource, a.options) for a in client.writes("delete_collection")]
    assert collections == [("pods", {"propagation_policy": "Background"}),
                           ("configmaps", {"propagation_policy": "Background"})]
    assert client.stored("configmaps", "settings", "team") is None
    assert conditions(client, "team") == {
        "NamespaceDeletionDiscoveryFailure": ("False", "ResourcesDiscovered"),
        "NamespaceDeletionGroupVersionParsingFailure": ("False", "ParsedGroupVersions"),
        "NamespaceDeletionContentFailure": ("False", "ContentDeleted"),
        "NamespaceContentRemaining": ("True", "SomeResourcesRemain"),
        "NamespaceFinalizersRemaining": ("True", "SomeFinalizersRemain")}
    assert not client.writes("update_finalize")


async def test_an_emptied_namespace_is_finalized() -> None:
    controller, client = build(namespace("team"), [])
    await controller.sync("team")
    status_write, finalize = client.writes()
    conditions = {c["type"]: c["reason"] for c in status_write.body["status"]["conditions"]}
    assert conditions["NamespaceContentRemaining"] == "ContentRemoved"
    assert (finalize.verb, finalize.body["spec"]["finalizers"]) == ("update_finalize", [])
    assert client.stored("namespaces", "team") is None  # nothing holds it any more


async def test_a_namespace_that_is_not_being_deleted_is_left_alone() -> None:
    controller, client = build(namespace("team", deleting=False), [configmap("settings", "team")])
    await controller.sync("team")
    assert client.writes() == []
