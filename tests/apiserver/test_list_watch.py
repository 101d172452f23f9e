"""Lists (selectors, pagination at one revision) and watches (events in order, bookmarks, 410 Expired)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

CMS = "/api/v1/namespaces/default/configmaps"


async def make(http, name: str, labels: dict[str, str] | None = None, namespace: str = "default") -> dict[str, Any]:
    status, body = await http.post(f"/api/v1/namespaces/{namespace}/configmaps",
                                   {"metadata": {"name": name, "labels": labels or {}}, "data": {"k": name}})
    assert status == 201, body
    return body


async def test_label_selectors_with_equality_and_set_requirements(http) -> None:
    await make(http, "a", {"tier": "web", "env": "prod"})
    await make(http, "b", {"tier": "db", "env": "prod"})
    await make(http, "c", {"tier": "web"})

    async def names(selector: str) -> list[str]:
        status, body = await http.get(CMS, labelSelector=selector)
        assert status == 200, body
        return [i["metadata"]["name"] for i in body["items"]]

    assert await names("tier=web") == ["a", "c"]
    assert await names("tier!=web") == ["b"]
    assert await names("tier in (web,db),env") == ["a", "b"]
    assert await names("!env") == ["c"]
    assert await names("tier notin (db)") == ["a", "c"]


async def test_field_selectors_on_name_namespace_and_pod_fields(http) -> None:
    await make(http, "a")
    await make(http, "b")
    status, body = await http.get(CMS, fieldSelector="metadata.name!=a")
    assert [i["metadata"]["name"] for i in body["items"]] == ["b"]
    status, body = await http.get("/api/v1/configmaps", fieldSelector="metadata.namespace==default")
    assert status == 200 and len(body["items"]) == 2
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    await http.post("/api/v1/namespaces/default/pods", pod)
    await http.post("/api/v1/namespaces/default/pods/p/binding", {"target": {"name": "n1"}})
    _, body = await http.get("/api/v1/pods", fieldSelector="spec.nodeName=n1,status.phase=Pending")
    assert [i["metadata"]["name"] for i in body["items"]] == ["p"]
    _, body = await http.get("/api/v1/pods", fieldSelector="spec.nodeName=n2")
    assert body["items"] == []


async def test_an_unknown_field_or_malformed_selector_is_a_bad_request(http) -> None:
    status, body = await http.get(CMS, fieldSelector="spec.nodeName=x")
    assert status == 400 and body["message"] == "field label not supported: spec.nodeName"
    status, body = await http.get(CMS, labelSelector="a in (b")
    assert status == 400 and body["reason"] == "BadRequest"


async def test_list_across_namespaces_never_mixes_a_prefix_namespace(http) -> None:
    for ns in ("ns1", "ns10"):
        await http.post("/api/v1/namespaces", {"metadata": {"name": ns}})
        await make(http, f"in-{ns}", namespace=ns)
    _, body = await http.get("/api/v1/namespaces/ns1/configmaps")
    assert [i["metadata"]["name"] for i in body["items"]] == ["in-ns1"]
    _, body = await http.get("/api/v1/configmaps")
    # and kube-public's cluster-info, which an HTTPS cluster publishes for the nodes that join it
    assert {i["metadata"]["name"] for i in body["items"]} == {"in-ns1", "in-ns10", "cluster-info"}


async def test_pages_are_consistent_at_the_first_pages_revision(http) -> None:
    for i in range(7):
        await make(http, f"cm{i}")
    status, first = await http.get(CMS, limit="3")
    assert status == 200 and len(first["items"]) == 3
    token = first["metadata"]["continue"]
    assert first["metadata"]["remainingItemCount"] == 4
    await make(http, "cm10")  # sorts inside the remaining range, after the first page's revision
    await http.delete(f"{CMS}/cm5")
    names = [i["metadata"]["name"] for i in first["items"]]
    while token:
        status, page = await http.get(CMS, limit="3", **{"continue": token})
        assert status == 200, page
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        names += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
    assert names == [f"cm{i}" for i in range(7)]


async def test_a_malformed_continue_token_is_a_bad_request(http) -> None:
    status, body = await http.get(CMS, limit="1", **{"continue": "not-a-token"})
    assert status == 400 and body["reason"] == "BadRequest"


async def read_events(http, path: str, count: int, **params: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async with http.session.get(path, params={"watch": "true", **params}) as response:
        assert response.status == 200
        async for line in response.content:
            if line.strip():
                events.append(orjson.loads(line))
            if len(events) >= count:
                break
    return events


async def test_watch_from_a_revision_streams_every_later_change_in_order(http) -> None:
    created = await make(http, "w")
    start = created["metadata"]["resourceVersion"]
    await http.patch(f"{CMS}/w", {"data": {"k": "2"}})
    await http.delete(f"{CMS}/w")
    events = await read_events(http, CMS, 2, resourceVersion=start)
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) > int(
        events[0]["object"]["metadata"]["resourceVersion"]) > int(start)


async def test_watch_without_a_revision_starts_with_the_current_objects(http) -> None:
    await make(http, "x")
    await make(http, "y")
    watching = asyncio.create_task(read_events(http, CMS, 3))
    await asyncio.sleep(0.2)
    await make(http, "z")
    events = await asyncio.wait_for(watching, 5)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "x"), ("ADDED", "y"), ("ADDED", "z")]


async def test_watch_with_a_selector_sees_objects_enter_and_leave_it(http) -> None:
    created = await make(http, "s", {"app": "other"})
    rv = created["metadata"]["resourceVersion"]
    await http.patch(f"{CMS}/s", {"metadata": {"labels": {"app": "web"}}})
    await http.patch(f"{CMS}/s", {"data": {"k": "changed"}})
    await http.patch(f"{CMS}/s", {"metadata": {"labels": {"app": "gone"}}})
    events = await read_events(http, CMS, 3, resourceVersion=rv, labelSelector="app=web")
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]


async def test_live_watchers_with_different_field_selectors_each_see_their_own_transitions(http) -> None:
    pods = "/api/v1/namespaces/default/pods"
    created = await http.post(pods, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c",
                                                                                           "image": "busybox"}]}})
    rv = created[1]["metadata"]["resourceVersion"]
    selectors = ["spec.nodeName=", "spec.nodeName=n1", "spec.nodeName=n2", "spec.nodeName!=n1",
                 "spec.nodeName=n1,status.phase=Pending", "metadata.name=other"]
    expected = {"spec.nodeName=": ["DELETED"], "spec.nodeName=n1": ["ADDED", "MODIFIED"],
                "spec.nodeName!=n1": ["DELETED"], "spec.nodeName=n1,status.phase=Pending": ["ADDED", "MODIFIED"]}
    watching = {selector: asyncio.create_task(read_events(http, pods, len(expected.get(selector, [])) or 1,
                                                          resourceVersion=rv, fieldSelector=selector))
                for selector in selectors}
    await asyncio.sleep(0.3)  # every watch is open and waiting: the commits go to all of them at once
    assert (await http.post(f"{pods}/p/binding", {"target": {"name": "n1"}}))[0] == 201
    assert (await http.patch(f"{pods}/p", {"metadata": {"labels": {"x": "y"}}}))[0] == 200
    await http.post(pods, {"metadata": {"name": "other"}, "spec": {"containers": [{"name": "c", "image": "b"}]}})
    for selector, task in watching.items():
        if selector in expected:
            events = await asyncio.wait_for(task, 5)
            assert [e["type"] for e in events] == expected[selector], selector
            assert all(e["object"]["metadata"]["name"] == "p" for e in events)
        else:  # these see only the other pod, or nothing at all
            done, _ = await asyncio.wait({task}, timeout=0.5)
            events = task.result() if done else []
            if not done:
                task.cancel()
            assert all(e["object"]["metadata"]["name"] == "other" for e in events), selector
            assert (selector == "metadata.name=other") == bool(events), selector


def test_an_event_is_decoded_and_its_fields_worked_out_once_for_every_watcher_with_a_selector(monkeypatch: pytest.MonkeyPatch) -> None:
    from multidict import MultiDict

    from minik.api.resources import REGISTRY
    from minik.apiserver import watch
    from minik.apiserver.lists import object_predicate, parse_list_options
    from minik.store import Event, EventType

    pods = REGISTRY.get("", "v1", "pods")
    assert pods is not None
    field_sets: list[str] = []
    field_set = pods.strategy.field_set

    def counted_field_set(obj: dict[str, Any]) -> dict[str, str]:
        field_sets.append((obj.get("status") or {}).get("phase"))
        return field_set(obj)

    monkeypatch.setattr(pods.strategy, "field_set", counted_field_set)
    predicates = [object_predicate(parse_list_options(MultiDict(fieldSelector=f"status.phase!=S{i}"), pods), pods,
                                   field_sets=watch._shared.field_sets) for i in range(50)]
    field_sets.clear()  # parsing a selector asks for the kind's field names
    before = orjson.dumps({"metadata": {"name": "p", "namespace": "default"}, "status": {"phase": "S8"}})
    after = orjson.dumps({"metadata": {"name": "p", "namespace": "default"}, "status": {"phase": "S7"}})
    decoded: list[bytes] = []

    def loads(raw: bytes) -> Any:
        decoded.append(raw)
        return orjson.loads(raw)

    monkeypatch.setattr(watch, "orjson", type("Counting", (), {"loads": staticmethod(loads),
                                                               "dumps": staticmethod(orjson.dumps)}))
    events = [Event(EventType.MODIFIED, "/pods/default/p", 9, after, before)]  # one commit's list, as the store
    types = [orjson.loads(watch.encode_batch(events, predicate))["type"] for predicate in predicates]
    assert types[7] == "DELETED" and types[8] == "ADDED"  # S7 left the one's selection, entered the other's
    assert set(types[:7] + types[9:]) == {"MODIFIED"}
    # once each for the fifty selectors, and the object before once more, for the DELETED line at the new revision
    assert (decoded.count(after), decoded.count(before)) == (1, 2)
    assert sorted(field_sets) == ["S7", "S8"]  # and their selectable fields worked out once each too


async def test_watch_of_one_object_by_name(http) -> None:
    a = await make(http, "a")
    await make(http, "b")
    await http.patch(f"{CMS}/b", {"data": {"k": "1"}})
    await http.patch(f"{CMS}/a", {"data": {"k": "1"}})
    events = await read_events(http, f"{CMS}/a", 1, resourceVersion=a["metadata"]["resourceVersion"])
    assert events[0]["object"]["metadata"]["name"] == "a" and events[0]["type"] == "MODIFIED"


async def test_watch_from_a_compacted_revision_gets_an_expired_error_event(cluster, http) -> None:
    first = await make(http, "c0")
    for i in range(1, 30):
        await http.patch(f"{CMS}/c0", {"data": {"k": str(i)}})
    await cluster.store.compact(cluster.store.revision - 1)
    events = await read_events(http, CMS, 1, resourceVersion=first["metadata"]["resourceVersion"])
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["code"] == 410 and status["reason"] == "Expired"
    assert list(status) == ["kind", "apiVersion", "metadata", "status", "message", "reason", "code"]  # Go's order
    status, body = await http.get(CMS, resourceVersion=first["metadata"]["resourceVersion"],
                                  resourceVersionMatch="Exact")
    assert status == 410 and body["reason"] == "Expired"


async def test_an_idle_watch_gets_bookmarks_when_it_asks(cluster, http) -> None:
    cluster.api.settings = type(cluster.api.settings)(address="x", bookmark_interval_seconds=0.1)
    created = await make(http, "b")
    events = await read_events(http, CMS, 1, resourceVersion=created["metadata"]["resourceVersion"],
                               allowWatchBookmarks="true")
    assert events[0]["type"] == "BOOKMARK"
    assert events[0]["object"]["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_watch_ends_at_its_timeout(http) -> None:
    async with http.session.get(CMS, params={"watch": "true", "timeoutSeconds": "1"}) as response:
        body = await asyncio.wait_for(response.read(), 5)
    assert body == b""


async def test_an_idle_watch_whose_client_hangs_up_lets_go_of_its_watcher(cluster, monkeypatch) -> None:
    from minik.apiserver import http as api_http

    monkeypatch.setattr(api_http, "LIVENESS_SECONDS", 0.05)
    before = cluster.store.watcher_count  # the server's own (its authorizers follow the store)
    reader, writer = await asyncio.open_connection(cluster.host, cluster.port, ssl=cluster.client_ssl_context())
    writer.write(f"GET {CMS}?watch=true HTTP/1.1\r\nHost: {cluster.host}\r\n"
                 f"Authorization: Bearer {cluster.admin_token}\r\n\r\n".encode())
    assert b" 200 " in await asyncio.wait_for(reader.readline(), 5)
    assert cluster.store.watcher_count == before + 1
    writer.close()  # no event, no bookmark and no timeout would ever tell the server
    await writer.wait_closed()
    async with asyncio.timeout(5):
        while cluster.store.watcher_count > before:
            await asyncio.sleep(0.02)


async def test_the_legacy_watch_prefix_streams_the_same_events(http) -> None:
    created = await make(http, "legacy")
    await http.patch(f"{CMS}/legacy", {"data": {"k": "2"}})
    events = []
    async with http.session.get("/api/v1/watch/namespaces/default/configmaps",
                                params={"resourceVersion": created["metadata"]["resourceVersion"]}) as response:
        assert response.status == 200
        async for line in response.content:
            events.append(orjson.loads(line))
            break
    assert events[0]["type"] == "MODIFIED" and events[0]["object"]["data"] == {"k": "2"}


@pytest.mark.parametrize("count", [0, 1, 2, 5])
def test_a_list_body_is_the_stored_items_joined_into_one_list_object(count: int) -> None:
    from minik.api.resources import REGISTRY
    from minik.apiserver.lists import list_body

    items = [orjson.dumps({"kind": "ConfigMap", "metadata": {"name": f"cm-{i}"}}) for i in range(count)]
    body = orjson.loads(list_body(REGISTRY.resolve("configmaps"), items, {"resourceVersion": "7"}))
    assert body["kind"] == "ConfigMapList" and body["metadata"] == {"resourceVersion": "7"}
    assert [item["metadata"]["name"] for item in body["items"]] == [f"cm-{i}" for i in range(count)]


def test_an_event_object_over_the_budget_is_decoded_for_each_watcher_and_not_held(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from multidict import MultiDict

    from minik.api.resources import REGISTRY
    from minik.apiserver import watch
    from minik.apiserver.lists import object_predicate, parse_list_options
    from minik.store import Event, EventType

    configmaps = REGISTRY.get("", "v1", "configmaps")
    assert configmaps is not None
    monkeypatch.setattr(watch._SharedDecodes, "BUDGET", 1000)
    predicates = [object_predicate(parse_list_options(MultiDict(fieldSelector=f"metadata.name!=x{i}"), configmaps),
                                   configmaps, field_sets=watch._shared.field_sets) for i in range(3)]
    big = orjson.dumps({"metadata": {"name": "big", "namespace": "default"}, "data": {"k": "v" * 2000}})
    events = [Event(EventType.ADDED, "/configmaps/default/big", 5, big, None)]
    assert all(watch.encode_batch(events, predicate) for predicate in predicates)
    assert watch._shared.objects == {} and watch._shared.field_sets == {}  # nothing keeps the large object
