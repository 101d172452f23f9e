"""events.k8s.io/v1 Events through a real API server: the same stored objects as core/v1 Events, converted both
ways on every verb (get, list, watch, create, update, patch, delete), with events.k8s.io/v1's stricter rules for
what is written through it."""

from __future__ import annotations

import asyncio

import orjson

CORE = "/api/v1/namespaces/default/events"
V1 = "/apis/events.k8s.io/v1/namespaces/default/events"
NOW = "2025-01-01T00:00:00.000000Z"


def v1_event(name: str, **fields: object) -> dict:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name}, "eventTime": NOW,
            "reportingController": "example.com/operator", "reportingInstance": "operator-1", "action": "Sync",
            "reason": "Synced", "type": "Normal", "note": "all good",
            "regarding": {"kind": "Pod", "name": "web", "namespace": "default", "apiVersion": "v1"}, **fields}


def core_event(name: str) -> dict:
    return {"metadata": {"name": name}, "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
            "reason": "Pulled", "message": "pulled the image", "type": "Normal", "count": 3,
            "firstTimestamp": "2025-01-01T00:00:00Z", "lastTimestamp": "2025-01-01T00:01:00Z",
            "source": {"component": "kubelet", "host": "node-1"}}


async def test_an_event_written_through_events_v1_reads_back_through_core_v1_converted(http) -> None:
    status, created = await http.post(V1, v1_event("synced"))
    assert status == 201, created
    assert created["apiVersion"] == "events.k8s.io/v1" and created["note"] == "all good"
    assert created["reportingController"] == "example.com/operator" and created["regarding"]["name"] == "web"
    status, core = await http.get(f"{CORE}/synced")
    assert status == 200 and core["apiVersion"] == "v1"
    assert (core["message"], core["reportingComponent"], core["involvedObject"]["name"], core["eventTime"]) == (
        "all good", "example.com/operator", "web", NOW)
    assert "note" not in core and "regarding" not in core
    assert core["metadata"]["uid"] == created["metadata"]["uid"]


async def test_a_core_event_shows_its_legacy_fields_as_deprecated_ones(http) -> None:
    await http.post(CORE, core_event("pulled"))
    status, viewed = await http.get(f"{V1}/pulled")
    assert status == 200, viewed
    assert viewed["deprecatedCount"] == 3 and viewed["deprecatedSource"] == {"component": "kubelet", "host": "node-1"}
    assert viewed["deprecatedFirstTimestamp"] == "2025-01-01T00:00:00Z" and viewed["eventTime"] is None
    assert viewed["note"] == "pulled the image" and viewed["regarding"]["kind"] == "Pod"
    status, listed = await http.get(V1)
    assert listed["kind"] == "EventList" and listed["apiVersion"] == "events.k8s.io/v1"
    assert [i["note"] for i in listed["items"]] == ["pulled the image"]
    status, selected = await http.get(V1, fieldSelector="involvedObject.name=web,reason=Pulled")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["pulled"]


async def test_events_v1_holds_writes_to_its_stricter_rules(http) -> None:
    status, body = await http.post(V1, v1_event("old-style", eventTime=None, deprecatedCount=2,
                                                series={"count": 1, "lastObservedTime": NOW}))
    assert status == 422, body
    assert body["message"].startswith('Event.events.k8s.io "old-style" is invalid')
    causes = {(c["field"], c["message"]) for c in body["details"]["causes"]}
    assert ("eventTime", "Required value") in causes
    assert ("deprecatedCount", 'Invalid value: "": needs to be unset') in causes
    assert ("series.count", 'Invalid value: "": should be at least 2') in causes
    await http.post(V1, v1_event("synced"))
    status, body = await http.patch(f"{V1}/synced", {"note": "changed"})
    assert status == 422 and body["details"]["causes"][0]["field"] == "message"
    status, patched = await http.patch(f"{V1}/synced", {"series": {"count": 2, "lastObservedTime": NOW}})
    assert status == 200 and patched["series"]["count"] == 2
    status, missing = await http.get(f"{V1}/nothing")
    assert status == 404 and missing["message"] == 'events.events.k8s.io "nothing" not found'


async def test_update_and_delete_through_events_v1(http) -> None:
    _, created = await http.post(V1, v1_event("synced"))
    created["metadata"]["labels"] = {"team": "a"}
    status, updated = await http.put(f"{V1}/synced", created)
    assert status == 200 and updated["metadata"]["labels"] == {"team": "a"} and updated["note"] == "all good"
    stale = {**created, "metadata": {**created["metadata"], "resourceVersion": created["metadata"]["resourceVersion"]}}
    status, body = await http.put(f"{V1}/synced", stale)
    assert status == 409 and 'events.events.k8s.io "synced"' in body["message"]
    status, deleted = await http.delete(f"{V1}/synced")
    assert status == 200 and deleted["details"] == {"name": "synced", "group": "events.k8s.io", "kind": "events",
                                                    "uid": created["metadata"]["uid"]}
    assert (await http.get(f"{CORE}/synced"))[0] == 404


async def test_a_watch_of_events_v1_sees_core_writes_converted(http) -> None:
    async with http.session.get(V1, params={"watch": "true", "timeoutSeconds": "5"}) as response:
        assert response.status == 200
        await http.post(CORE, core_event("pulled"))
        line = await asyncio.wait_for(response.content.readline(), 5)
        event = orjson.loads(line)
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "events.k8s.io/v1" and event["object"]["note"] == "pulled the image"
