"""The two TTL controllers against known caches, on a settable clock: finished Jobs and old Events expire."""

from __future__ import annotations

from objects import T0, job

from minik.api.timestamps import rfc3339
from minik.controllers.eventttl import EventTTLController
from minik.controllers.ttlafterfinished import TTLAfterFinishedController
from minik.testing.clock import FakeClock
from minik.testing.controllers import RecordingClient, StaticInformerFactory


def finished_job(ttl: int) -> dict:
    j = job("pi", ttlSecondsAfterFinished=ttl)
    j["status"] = {"conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": rfc3339(T0)}]}
    return j


async def test_a_finished_job_is_deleted_with_its_pods_once_its_ttl_has_passed() -> None:
    j = finished_job(100)
    client = RecordingClient([j])
    clock = FakeClock(T0 + 50)
    controller = TTLAfterFinishedController(client, StaticInformerFactory(client, {"jobs": [j]}), clock=clock)
    await controller.sync("default/pi")
    assert not client.writes()
    clock.step(51)
    assert len(controller.queue) == 1
    await controller.sync("default/pi")
    [delete] = client.writes("delete", "jobs")
    assert delete.options == {"propagation_policy": "Foreground", "preconditions": {"uid": j["metadata"]["uid"]}}


def event(name: str, last: float) -> dict:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default", "uid": f"ev-{name}", "resourceVersion": "7",
                         "creationTimestamp": rfc3339(T0 - 7200)},
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
            "reason": "Pulled", "lastTimestamp": rfc3339(last)}


async def test_an_event_not_updated_for_the_ttl_is_removed_and_a_recent_one_kept() -> None:
    old, recent = event("old", T0 - 3601), event("recent", T0 - 10)
    client = RecordingClient([old, recent])
    clock = FakeClock(T0)
    controller = EventTTLController(client, StaticInformerFactory(client, {"events": [old, recent]}), clock=clock)
    await controller.sync("default/old")
    await controller.sync("default/recent")
    [delete] = client.writes("delete", "events")
    assert delete.name == "old" and delete.options["preconditions"] == {"uid": "ev-old", "resourceVersion": "7"}
    clock.step(3591)
    assert len(controller.queue) == 1  # the recent one, once its hour is up


def test_the_controller_keeps_only_an_events_identity_and_times() -> None:
    from minik.controllers.eventttl import last_seen, times_only

    event = {"metadata": {"name": "web.1", "namespace": "default", "uid": "u1", "resourceVersion": "7",
                          "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"a": "b"}},
             "involvedObject": {"kind": "Pod", "name": "web"}, "reason": "Scheduled", "message": "m" * 200,
             "lastTimestamp": "2026-01-01T00:05:00Z", "series": {"count": 3, "lastObservedTime": "2026-01-01T00:09:00Z"}}
    kept = times_only(event)
    assert kept == {"metadata": {"name": "web.1", "namespace": "default", "uid": "u1", "resourceVersion": "7",
                                 "creationTimestamp": "2026-01-01T00:00:00Z"},
                    "lastTimestamp": "2026-01-01T00:05:00Z", "series": {"lastObservedTime": "2026-01-01T00:09:00Z"}}
    assert last_seen(kept) == last_seen(event)
