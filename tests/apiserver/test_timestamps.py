"""Time and MicroTime fields of built-in kinds are read as Kubernetes' decoder reads them and stored as it stores
them: an Event posted as kopf posts it (Python's isoformat(), microseconds and "+00:00") reads back in UTC, to the
second in lastTimestamp and to the microsecond in eventTime; a timestamp Go cannot parse is refused with Go's
message, on create and update (400) and patch (422 on the field "patch")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conftest import ApiHttp

NS = "/api/v1/namespaces/default"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
ISOFORMAT = "2026-11-27T19:52:34.819123+00:00"


def event(name: str, **times: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "type": "Normal", "reason": "Tested", "action": "Testing", "message": "m",
            "involvedObject": {"kind": "ConfigMap", "name": "c", "namespace": "default"},
            "source": {"component": "kopf"}, "reportingComponent": "kopf", "reportingInstance": "dev", **times}


async def test_an_event_posted_with_python_isoformat_timestamps_reads_back_as_kubernetes_writes_them(
        http: ApiHttp) -> None:
    status, created = await http.post(f"{NS}/events", event(
        "kopf", firstTimestamp=ISOFORMAT, lastTimestamp="2026-11-27T21:52:34.5+02:00", eventTime=ISOFORMAT,
        series={"count": 2, "lastObservedTime": "2026-11-27T20:52:34.000001+01:00"}))
    assert status == 201, created
    expected = {"firstTimestamp": "2026-11-27T19:52:34Z", "lastTimestamp": "2026-11-27T19:52:34Z",
                "eventTime": "2026-11-27T19:52:34.819123Z"}
    assert {k: created[k] for k in expected} == expected
    assert created["series"]["lastObservedTime"] == "2026-11-27T19:52:34.000001Z"
    read = (await http.get(f"{NS}/events/kopf"))[1]
    assert {k: read[k] for k in expected} == expected


async def test_timestamps_written_by_update_and_patch_are_stored_the_same_way(http: ApiHttp) -> None:
    status, created = await http.post(f"{NS}/events", event("e", lastTimestamp="2026-11-27T19:52:34Z"))
    assert status == 201, created
    created["lastTimestamp"] = "2026-11-27T20:00:00.75+01:00"
    status, updated = await http.put(f"{NS}/events/e", created)
    assert (status, updated["lastTimestamp"]) == (200, "2026-11-27T19:00:00Z")
    for content_type in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        status, patched = await http.patch(f"{NS}/events/e", {"lastTimestamp": "2026-11-27T22:00:00.1-01:00"},
                                           content_type)
        assert (status, patched["lastTimestamp"]) == (200, "2026-11-27T23:00:00Z"), content_type
    status, patched = await http.patch(f"{NS}/events/e", [
        {"op": "replace", "path": "/lastTimestamp", "value": ISOFORMAT}], "application/json-patch+json")
    assert (status, patched["lastTimestamp"]) == (200, "2026-11-27T19:52:34Z")


async def test_a_timestamp_go_cannot_parse_is_refused_with_its_message(http: ApiHttp) -> None:
    status, refused = await http.post(f"{NS}/events", event("bad", lastTimestamp="yesterday"))
    assert (status, refused["reason"]) == (400, "BadRequest")
    assert refused["message"] == ('Event in version "v1" cannot be handled as a Event: parsing time "yesterday" as '
                                  '"2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"')
    status, refused = await http.post(f"{NS}/events", event("number", lastTimestamp=1764273154))
    assert (status, refused["message"]) == (400, 'Event in version "v1" cannot be handled as a Event: json: cannot '
                                                 'unmarshal number into Go struct field Event.lastTimestamp of type '
                                                 'string')
    status, created = await http.post(f"{NS}/events", event("good"))
    assert status == 201, created
    status, refused = await http.patch(f"{NS}/events/good", {"lastTimestamp": "2026-13-01T00:00:00Z"})
    assert (status, refused["reason"]) == (422, "Invalid")
    [cause] = refused["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].endswith('parsing time "2026-13-01T00:00:00Z": month out of range')


async def test_a_lease_renew_time_is_a_micro_time_with_six_fraction_digits(http: ApiHttp) -> None:
    lease = {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                                                      "renewTime": "2026-11-27T19:52:34Z"}}
    status, refused = await http.post(LEASES, lease)
    assert (status, refused["message"]) == (400, 'Lease in version "v1" cannot be handled as a Lease: parsing time '
                                                 '"2026-11-27T19:52:34Z" as "2006-01-02T15:04:05.000000Z07:00": '
                                                 'cannot parse "Z" as ".000000"')
    lease["spec"]["renewTime"] = ISOFORMAT
    lease["spec"]["acquireTime"] = "2026-11-27T18:00:00.000000Z"
    status, created = await http.post(LEASES, lease)
    assert status == 201, created
    assert created["spec"]["renewTime"] == "2026-11-27T19:52:34.819123Z"
    assert created["spec"]["acquireTime"] == "2026-11-27T18:00:00.000000Z"


async def test_a_condition_time_in_a_status_update_is_stored_to_the_second(http: ApiHttp) -> None:
    status, created = await http.post(f"{NS}/pods", {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "busybox:1.36"}]}})
    assert status == 201, created
    status, patched = await http.patch(f"{NS}/pods/p/status", {"status": {"conditions": [
        {"type": "Ready", "status": "False", "lastTransitionTime": ISOFORMAT, "lastProbeTime": None}]}})
    assert status == 200, patched
    [ready] = [c for c in patched["status"]["conditions"] if c["type"] == "Ready"]
    assert ready["lastTransitionTime"] == "2026-11-27T19:52:34Z" and ready["lastProbeTime"] is None
