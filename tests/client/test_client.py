"""The client against a real cluster, over HTTP and in-process: both transports must behave the same."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minik.api.errors import StatusError
from minik.client import JSON_PATCH, Client, LineSplitter, TransportError, WatchEvent
from minik.cluster import Cluster


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


async def test_a_configmap_can_be_created_read_listed_patched_and_deleted(client: Client) -> None:
    created = await client.create("configmaps", configmap("settings", mode="fast"), "default")
    assert created["metadata"]["uid"] and created["metadata"]["namespace"] == "default"

    fetched = await client.get("configmaps", "settings", "default")
    assert fetched == created

    listed = await client.list("configmaps", "default")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["settings"]
    assert listed["kind"] == "ConfigMapList" and listed["metadata"]["resourceVersion"]

    patched = await client.patch("configmaps", "settings", {"data": {"mode": "slow", "extra": "1"}}, "default")
    assert patched["data"] == {"mode": "slow", "extra": "1"}

    await client.delete("configmaps", "settings", "default")
    with pytest.raises(StatusError) as missing:
        await client.get("configmaps", "settings", "default")
    assert missing.value.code == 404 and missing.value.reason == "NotFound"
    assert missing.value.details["name"] == "settings"


async def test_the_namespace_can_come_from_the_objects_metadata(client: Client) -> None:
    body = configmap("from-meta")
    body["metadata"]["namespace"] = "kube-system"
    created = await client.create("ConfigMap", body)
    assert created["metadata"]["namespace"] == "kube-system"
    created["data"] = {"k": "v"}
    updated = await client.update("cm", created)
    assert updated["data"] == {"k": "v"}


async def test_a_namespaced_resource_needs_a_namespace_to_name_an_object(client: Client) -> None:
    with pytest.raises(ValueError):
        await client.get("configmaps", "anything")
    with pytest.raises(ValueError):
        await client.get("namespaces", "default", namespace="default")


async def test_an_update_with_a_stale_resource_version_is_a_conflict(client: Client) -> None:
    stale = await client.create("configmaps", configmap("shared", v="1"), "default")
    fresh = dict(stale, data={"v": "2"})
    await client.update("configmaps", fresh, "default")
    with pytest.raises(StatusError) as conflict:
        await client.update("configmaps", dict(stale, data={"v": "3"}), "default")
    assert conflict.value.code == 409 and conflict.value.reason == "Conflict"
    assert "the object has been modified" in conflict.value.message
    assert (await client.get("configmaps", "shared", "default"))["data"] == {"v": "2"}


async def test_creating_an_existing_object_is_already_exists(client: Client) -> None:
    await client.create("configmaps", configmap("twice"), "default")
    with pytest.raises(StatusError) as exists:
        await client.create("configmaps", configmap("twice"), "default")
    assert exists.value.code == 409 and exists.value.reason == "AlreadyExists"


async def test_json_patch_is_selected_by_content_type(client: Client) -> None:
    await client.create("configmaps", configmap("patched", a="1"), "default")
    ops = [{"op": "replace", "path": "/data/a", "value": "2"}, {"op": "add", "path": "/data/b", "value": "3"}]
    patched = await client.patch("configmaps", "patched", ops, "default", content_type=JSON_PATCH)
    assert patched["data"] == {"a": "2", "b": "3"}
    with pytest.raises(StatusError) as failed:
        await client.patch("configmaps", "patched", [{"op": "test", "path": "/data/a", "value": "9"}], "default",
                           content_type=JSON_PATCH)
    assert failed.value.code == 422


async def test_delete_with_a_stale_precondition_is_a_conflict(client: Client) -> None:
    created = await client.create("configmaps", configmap("guarded"), "default")
    with pytest.raises(StatusError) as conflict:
        await client.delete("configmaps", "guarded", "default", preconditions={"uid": "someone-else"})
    assert conflict.value.code == 409
    answer = await client.delete("configmaps", "guarded", "default",
                                 preconditions={"uid": created["metadata"]["uid"]})
    assert answer["status"] == "Success"


async def test_a_bound_pod_is_deleted_gracefully_unless_the_grace_period_is_zero(client: Client) -> None:
    await client.create("pods", pod("web"), "default")
    await client.bind("web", "node-1", "default")
    terminating = await client.delete("pods", "web", "default")
    assert terminating["metadata"]["deletionTimestamp"]
    await client.delete("pods", "web", "default", grace_period_seconds=0)
    with pytest.raises(StatusError) as gone:
        await client.get("pods", "web", "default")
    assert gone.value.code == 404


async def test_bind_assigns_the_pod_to_the_node_once(client: Client) -> None:
    created = await client.create("pods", pod("web"), "default")
    result = await client.bind("web", "node-1", "default", uid=created["metadata"]["uid"])
    assert result["status"] == "Success"
    assert (await client.get("pods", "web", "default"))["spec"]["nodeName"] == "node-1"
    with pytest.raises(StatusError) as conflict:
        await client.bind("web", "node-2", "default")
    assert conflict.value.code == 409 and conflict.value.reason == "Conflict"


async def test_bind_with_the_uid_of_another_pod_of_that_name_is_a_conflict(client: Client) -> None:
    await client.create("pods", pod("web"), "default")
    with pytest.raises(StatusError) as conflict:
        await client.bind("web", "node-1", "default", uid="0b5e5c1e-uid-of-a-deleted-pod")
    assert conflict.value.code == 409 and "Precondition failed: UID in precondition" in conflict.value.message
    assert not (await client.get("pods", "web", "default"))["spec"].get("nodeName")


async def test_status_is_written_through_update_status_and_patch_status(client: Client) -> None:
    created = await client.create("pods", pod("web"), "default")
    running = dict(created, status={"phase": "Running"})
    after = await client.update_status("pods", running, "default")
    assert after["status"]["phase"] == "Running"
    after = await client.patch_status("pods", "web", {"status": {"podIP": "10.0.0.9"}}, "default")
    assert after["status"] == {**after["status"], "phase": "Running", "podIP": "10.0.0.9"}
    # the main resource cannot change the status
    sneaky = await client.patch("pods", "web", {"status": {"phase": "Failed"}}, "default")
    assert sneaky["status"]["phase"] == "Running"


async def test_cluster_scoped_resources_have_no_namespace(client: Client) -> None:
    await client.create("namespaces", {"metadata": {"name": "team-a"}})
    names = [n["metadata"]["name"] for n in (await client.list("namespaces"))["items"]]
    assert "team-a" in names and "default" in names


async def test_lists_filter_by_label_selector_as_text_or_mapping(client: Client) -> None:
    for name, tier in (("a", "web"), ("b", "db"), ("c", "web")):
        body = configmap(name)
        body["metadata"]["labels"] = {"tier": tier}
        await client.create("configmaps", body, "default")
    by_text = await client.list("configmaps", "default", label_selector="tier=web")
    by_mapping = await client.list("configmaps", "default", label_selector={"tier": "web"})
    by_field = await client.list("configmaps", "default", field_selector="metadata.name=b")
    assert [i["metadata"]["name"] for i in by_text["items"]] == ["a", "c"]
    assert by_mapping["items"] == by_text["items"]
    assert [i["metadata"]["name"] for i in by_field["items"]] == ["b"]


async def test_list_all_follows_continue_tokens_and_returns_everything(client: Client) -> None:
    for i in range(23):
        await client.create("configmaps", configmap(f"cm-{i:02d}"), "default")
    first_page = await client.list("configmaps", "default", limit=5)
    assert len(first_page["items"]) == 5 and first_page["metadata"]["continue"]
    everything = await client.list_all("configmaps", "default", page_size=5)
    assert [i["metadata"]["name"] for i in everything["items"]] == [f"cm-{i:02d}" for i in range(23)]
    assert everything["metadata"]["resourceVersion"]


async def test_a_watch_yields_added_modified_and_deleted_in_order(client: Client) -> None:
    start = await client.list("configmaps", "default")
    async with client.watch("configmaps", "default",
                            resource_version=start["metadata"]["resourceVersion"]) as events:
        await client.create("configmaps", configmap("watched", v="1"), "default")
        await client.patch("configmaps", "watched", {"data": {"v": "2"}}, "default")
        await client.delete("configmaps", "watched", "default")
        seen: list[tuple[str, str | None]] = []
        async for kind, obj in events:
            seen.append((kind, (obj.get("data") or {}).get("v")))
            if kind == "DELETED":
                break
    assert seen == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")]


async def test_a_watch_without_a_resource_version_starts_with_the_current_objects(client: Client) -> None:
    await client.create("configmaps", configmap("existing"), "default")
    async with client.watch("configmaps", "default") as events:
        event = await asyncio.wait_for(events.__anext__(), 5)
    assert isinstance(event, WatchEvent)
    assert event.type == "ADDED" and event.object["metadata"]["name"] == "existing"


async def test_a_watch_ends_when_its_timeout_passes(client: Client) -> None:
    start = await client.list("configmaps", "default")
    seen = []
    async with client.watch("configmaps", "default", resource_version=start["metadata"]["resourceVersion"],
                            timeout_seconds=1) as events:
        async for event in events:
            seen.append(event)
    assert seen == []


async def test_a_watch_asking_for_bookmarks_gets_them_when_idle(cluster: Cluster, client: Client) -> None:
    assert cluster.api is not None
    cluster.api.settings = type(cluster.api.settings)(address="x", bookmark_interval_seconds=0.1)
    created = await client.create("configmaps", configmap("b"), "default")
    version = created["metadata"]["resourceVersion"]
    async with client.watch("configmaps", "default", resource_version=version, allow_bookmarks=True) as events:
        kind, obj = await asyncio.wait_for(events.__anext__(), 5)
    assert kind == "BOOKMARK" and obj["metadata"]["resourceVersion"] == version


async def test_a_watch_from_a_compacted_revision_raises_expired(cluster: Cluster, client: Client) -> None:
    assert cluster.store is not None
    first = await client.create("configmaps", configmap("old", v="0"), "default")
    for i in range(1, 10):
        await client.patch("configmaps", "old", {"data": {"v": str(i)}}, "default")
    await cluster.store.compact(cluster.store.revision - 1)
    with pytest.raises(StatusError) as expired:
        async with client.watch("configmaps", "default",
                                resource_version=first["metadata"]["resourceVersion"]) as events:
            async for _ in events:
                pass
    assert expired.value.code == 410 and expired.value.reason == "Expired"


async def test_a_watch_with_a_bad_selector_fails_before_it_streams(client: Client) -> None:
    with pytest.raises(StatusError) as bad:
        async with client.watch("configmaps", "default", label_selector="a in (b"):
            pass
    assert bad.value.code == 400 and bad.value.reason == "BadRequest"


async def test_an_unreachable_server_is_a_transport_error(unused_tcp_port: int) -> None:
    async with Client.http(f"http://127.0.0.1:{unused_tcp_port}", timeout_seconds=5) as client:
        with pytest.raises(TransportError):
            await client.list("namespaces")


def test_lines_split_across_chunks_are_joined_before_they_are_decoded() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b'{"type":"ADD') == []
    assert splitter.feed(b'ED"}\n{"type":"MODI') == [b'{"type":"ADDED"}']
    assert splitter.feed(b'FIED"}\n\n{"a":1}\n{"b"') == [b'{"type":"MODIFIED"}', b'{"a":1}']
    assert splitter.finish() == [b'{"b"']
    assert splitter.finish() == []
