"""CronJobs through a real API server with the CronJob controller on a settable clock: the test moves time a minute
at a time instead of waiting for it."""

from __future__ import annotations

from typing import Any

import pytest
from controller_helpers import eventually

from minik.client import Client
from minik.controllers.manager import ControllerSettings
from minik.testing.clock import FakeClock

Obj = dict[str, Any]


@pytest.fixture
def controller_settings(clock: FakeClock) -> ControllerSettings:
    return ControllerSettings(workers=2, clock=clock, enabled=["cronjob"])


def cronjob(name: str, policy: str = "Allow") -> Obj:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": "* * * * *", "concurrencyPolicy": policy,
                     "jobTemplate": {"spec": {"template": {"spec": {
                         "restartPolicy": "Never", "containers": [{"name": "tick", "image": "busybox:1.36"}]}}}}}}


async def jobs_of(api: Client, name: str, count: int) -> list[Obj]:
    items = [j for j in (await api.list("jobs", "default"))["items"]
             if any(r["name"] == name for r in j["metadata"].get("ownerReferences") or [])]
    return items if len(items) == count else []


async def test_a_cronjob_every_minute_creates_a_job_each_minute(api: Client, clock: FakeClock) -> None:
    await api.create("cronjobs", cronjob("tick"), "default")
    await api.create("cronjobs", cronjob("single", "Forbid"), "default")
    for minute in (1, 2, 3):
        clock.step(60)
        made = await eventually(lambda minute=minute: jobs_of(api, "tick", minute))
    names = sorted(j["metadata"]["name"] for j in made)
    minutes = [int(n.rsplit("-", 1)[1]) for n in names]
    assert minutes == [minutes[0], minutes[0] + 1, minutes[0] + 2]
    tick = await api.get("cronjobs", "tick", "default")
    assert sorted(r["name"] for r in tick["status"]["active"]) == names
    assert tick["status"]["lastScheduleTime"].endswith(":00Z")
    assert len(await jobs_of(api, "single", 1)) == 1  # Forbid: the first is still running
