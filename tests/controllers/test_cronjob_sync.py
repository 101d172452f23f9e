"""CronJob syncs against known caches (sample-controller style), on a settable clock."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from objects import meta, ref, template

from minik.api.timestamps import rfc3339
from minik.controllers.cronjob import SCHEDULED_TIMESTAMP, CronJobController
from minik.testing.clock import FakeClock
from minik.testing.controllers import RecordingClient, StaticInformerFactory

#: a whole minute, so schedule arithmetic in the tests is easy to read
MINUTE = datetime(2024, 5, 1, 12, 0, tzinfo=UTC).timestamp()


def cronjob(schedule: str = "* * * * *", *, created: float = MINUTE - 30, **spec: Any) -> dict:
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": meta("tick", generation=1, creationTimestamp=rfc3339(created)),
            "spec": {"schedule": schedule, "concurrencyPolicy": "Allow", "suspend": False,
                     "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                     "jobTemplate": {"metadata": {"labels": {"app": "tick"}},
                                     "spec": {"template": template({"app": "tick"}, restartPolicy="Never")}},
                     **spec},
            "status": {}}


def child(cj: dict, name: str, *, finished: str | None = None, start: float = MINUTE) -> dict:
    status: dict[str, Any] = {"startTime": rfc3339(start)}
    if finished:
        status["conditions"] = [{"type": finished, "status": "True"}]
        if finished == "Complete":
            status["completionTime"] = rfc3339(start + 5)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(name, ownerReferences=[ref(cj)]),
            "spec": {}, "status": status}


def active(job: dict) -> dict:
    return {"kind": "Job", "namespace": "default", "name": job["metadata"]["name"], "uid": job["metadata"]["uid"],
            "apiVersion": "batch/v1"}


class Harness:
    def __init__(self, cj: dict, jobs: list[dict] | None = None, now: float = MINUTE + 1) -> None:
        jobs = jobs or []
        self.client = RecordingClient(copy.deepcopy([cj, *jobs]))  # the API's copies, apart from the caches
        self.clock = FakeClock(now)
        factory = StaticInformerFactory(self.client, {"cronjobs": [cj], "jobs": jobs})
        self.controller = CronJobController(self.client, factory, clock=self.clock)
        self.events: list[tuple[str, str]] = []
        self.controller.event = lambda obj, t, r, m: self.events.append((t, r))  # type: ignore[method-assign]

    async def sync(self) -> None:
        await self.controller.sync("default/tick")

    @property
    def status(self) -> dict[str, Any]:
        return self.client.stored("cronjobs", "tick", "default")["status"]  # type: ignore[index]


async def test_a_due_time_starts_a_job_named_after_it_and_the_next_minute_is_awaited() -> None:
    h = Harness(cronjob())
    await h.sync()
    [create] = h.client.writes("create", "jobs")
    job = create.body
    assert job["metadata"]["name"] == f"tick-{int(MINUTE // 60)}"
    assert job["metadata"]["annotations"] == {SCHEDULED_TIMESTAMP: "2024-05-01T12:00:00Z"}
    assert job["metadata"]["labels"] == {"app": "tick"}
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert h.status["lastScheduleTime"] == "2024-05-01T12:00:00Z"
    assert [r["name"] for r in h.status["active"]] == [job["metadata"]["name"]]
    h.clock.step(58)
    assert len(h.controller.queue) == 0
    h.clock.step(1.5)  # just past 12:01
    assert len(h.controller.queue) == 1


async def test_a_time_already_started_is_not_started_again() -> None:
    cj = cronjob()
    cj["status"] = {"lastScheduleTime": rfc3339(MINUTE)}
    h = Harness(cj)
    await h.sync()
    assert not h.client.writes("create", "jobs")


async def test_forbid_skips_a_time_while_a_job_is_active() -> None:
    cj = cronjob(concurrencyPolicy="Forbid")
    running = child(cj, "tick-1", start=MINUTE - 60)
    cj["status"] = {"active": [active(running)], "lastScheduleTime": rfc3339(MINUTE - 60)}
    h = Harness(cj, [running])
    await h.sync()
    assert not h.client.writes("create", "jobs")
    assert ("Normal", "JobAlreadyActive") in h.events


async def test_replace_deletes_the_active_job_before_starting_the_next() -> None:
    cj = cronjob(concurrencyPolicy="Replace")
    running = child(cj, "tick-1", start=MINUTE - 60)
    cj["status"] = {"active": [active(running)], "lastScheduleTime": rfc3339(MINUTE - 60)}
    h = Harness(cj, [running])
    await h.sync()
    assert [(a.verb, a.name) for a in h.client.writes()][:2] == [("delete", "tick-1"),
                                                                 ("create", f"tick-{int(MINUTE // 60)}")]
    assert [r["name"] for r in h.status["active"]] == [f"tick-{int(MINUTE // 60)}"]


async def test_a_time_missed_by_more_than_the_starting_deadline_is_skipped() -> None:
    h = Harness(cronjob(startingDeadlineSeconds=10), now=MINUTE + 30)
    await h.sync()
    assert not h.client.writes("create", "jobs")


async def test_a_suspended_cronjob_starts_nothing() -> None:
    h = Harness(cronjob(suspend=True))
    await h.sync()
    assert not h.client.writes()


async def test_the_schedule_is_read_in_the_time_zone() -> None:
    nine_tokyo = datetime(2024, 5, 2, 0, 0, tzinfo=UTC).timestamp()  # 09:00 in Tokyo
    h = Harness(cronjob("0 9 * * *", timeZone="Asia/Tokyo", created=nine_tokyo - 3600), now=nine_tokyo + 2)
    await h.sync()
    [create] = h.client.writes("create", "jobs")
    assert create.body["metadata"]["annotations"][SCHEDULED_TIMESTAMP] == "2024-05-02T09:00:00+09:00"


async def test_finished_jobs_leave_the_active_list_and_the_oldest_beyond_the_history_limits_are_deleted() -> None:
    cj = cronjob(successfulJobsHistoryLimit=1, failedJobsHistoryLimit=0, suspend=True)
    done = [child(cj, f"tick-{i}", finished="Complete", start=MINUTE - 600 + 60 * i) for i in range(3)]
    failed = child(cj, "tick-f", finished="Failed", start=MINUTE - 60)
    cj["status"] = {"active": [active(done[2])]}
    h = Harness(cj, [*done, failed])
    await h.sync()
    deletes = h.client.writes("delete", "jobs")
    assert sorted(a.name for a in deletes) == ["tick-0", "tick-1", "tick-f"]
    assert all(a.options["propagation_policy"] == "Background" for a in deletes)
    assert "active" not in h.status and h.status["lastSuccessfulTime"] == rfc3339(MINUTE - 600 + 120 + 5)
    assert ("Normal", "SawCompletedJob") in h.events


async def test_a_job_the_cache_does_not_list_as_active_yet_is_checked_against_the_live_cronjob() -> None:
    cj = cronjob()
    running = child(cj, "tick-1", start=MINUTE - 60)
    cj["status"] = {"lastScheduleTime": rfc3339(MINUTE)}
    h = Harness(cj, [running])
    h.client.stored("cronjobs", "tick", "default")["status"]["active"] = [active(running)]  # type: ignore[index]
    await h.sync()
    assert ("Warning", "UnexpectedJob") not in h.events
    assert not h.client.writes()
    stranger = child(cj, "tick-2", start=MINUTE - 30)
    h2 = Harness(cj, [stranger])
    await h2.sync()
    assert ("Warning", "UnexpectedJob") in h2.events
