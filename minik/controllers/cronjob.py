"""The CronJob controller (Kubernetes' cronjob controller v2): a Job for each time the schedule fires.

The schedule is read by minik.api.cron (the standard five fields and the @descriptors, as validation accepts
them) in spec.timeZone, or the controller's local zone. At each sync the most recent unmet schedule time since
status.lastScheduleTime (or the CronJob's creation) is started, unless it is more than startingDeadlineSeconds
late (MissSchedule), the CronJob is suspended, or concurrencyPolicy says no: Forbid skips while a Job is active
(JobAlreadyActive), Replace deletes the active ones first. The Job is named ``NAME-<minutes since the epoch>``, so
a restart never starts one time twice. Finished Jobs beyond successfulJobsHistoryLimit and
failedJobsHistoryLimit are deleted, oldest first; status keeps active, lastScheduleTime and lastSuccessfulTime.

The controller's clock is settable, so tests move time instead of waiting for it.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from minik.aio.clock import Clock
from minik.api.cron import Schedule, parse_schedule
from minik.api.errors import StatusError
from minik.api.timestamps import parse_time, rfc3339
from minik.client import Client
from minik.controllers import jobutil as ju
from minik.controllers.base import (
    Controller,
    InformerFactory,
    Obj,
    Recorder,
    controller_ref,
    is_being_deleted,
    owner_reference,
)

SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
#: the requeue lands this long after the schedule fires, so the sync sees the time as due (nextScheduleDelta)
NEXT_SCHEDULE_DELTA = 0.1
#: more missed start times than this earn a warning (and the computation stops walking them one by one)
TOO_MANY_MISSED = 100


def _zone(cj: Obj) -> tzinfo | None:
    """The CronJob's time zone; None for the controller's local zone. ZoneInfoNotFoundError for an unknown one."""
    name = (cj.get("spec") or {}).get("timeZone")
    return ZoneInfo(str(name)) if name else None


def _at(seconds: float, zone: tzinfo | None) -> datetime:
    return datetime.fromtimestamp(seconds, zone) if zone is not None else datetime.fromtimestamp(seconds)


def next_time(schedule: Schedule, after: float, zone: tzinfo | None) -> float | None:
    """The first time after ``after`` (seconds since the epoch) when the schedule fires, read in ``zone``."""
    fire = schedule.next_after(_at(after, zone))
    return None if fire is None else fire.timestamp()


def most_recent(schedule: Schedule, earliest: float, now: float, zone: tzinfo | None) -> tuple[float | None, int]:
    """The latest time in (earliest, now] when the schedule fires, and about how many times it fired there."""
    first = next_time(schedule, earliest, zone)
    if first is None or first > now:
        return None, 0
    second = next_time(schedule, first, zone)
    if second is None or second > now:
        return first, 1
    interval = second - first
    missed, start = 0, first
    if interval > 0 and (now - first) / interval > TOO_MANY_MISSED:
        # far behind: count by the interval and walk only the last stretch
        missed = int((now - first) // interval) - TOO_MANY_MISSED
        start = max(first, now - (TOO_MANY_MISSED + 1) * interval)
    latest, count = start, 1
    t = next_time(schedule, start, zone)
    while t is not None and t <= now:
        latest, count = t, count + 1
        t = next_time(schedule, t, zone)
    return latest, missed + count


def scheduled_timestamp(seconds: float, zone: tzinfo | None) -> str:
    """RFC 3339 in the CronJob's zone (``Z`` for UTC), as the scheduled-timestamp annotation carries it."""
    stamp = _at(seconds, zone if zone is not None else datetime.now().astimezone().tzinfo).replace(microsecond=0)
    if stamp.utcoffset() == UTC.utcoffset(None):
        return rfc3339(seconds)
    return stamp.isoformat()


def job_name(cj: Obj, scheduled: float) -> str:
    return f"{cj['metadata']['name']}-{int(scheduled // 60)}"


def job_from_template(cj: Obj, scheduled: float, zone: tzinfo | None) -> Obj:
    template = copy.deepcopy((cj.get("spec") or {}).get("jobTemplate") or {})
    tmeta = template.get("metadata") or {}
    meta: Obj = {"name": job_name(cj, scheduled), "labels": dict(tmeta.get("labels") or {}),
                 "annotations": {**(tmeta.get("annotations") or {}),
                                 SCHEDULED_TIMESTAMP: scheduled_timestamp(scheduled, zone)},
                 "ownerReferences": [owner_reference(cj)]}
    if not meta["labels"]:
        del meta["labels"]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": template.get("spec") or {}}


def job_reference(job: Obj) -> Obj:
    meta = job["metadata"]
    return {"kind": "Job", "namespace": meta.get("namespace"), "name": meta["name"], "uid": meta["uid"],
            "apiVersion": "batch/v1", "resourceVersion": meta.get("resourceVersion")}


def _start_time(job: Obj) -> tuple[int, float, str]:
    """byJobStartTime: Jobs with a start time first, oldest first, then by name."""
    start = parse_time((job.get("status") or {}).get("startTime"))
    return (1 if start is None else 0, start or 0.0, job["metadata"]["name"])


class CronJobController(Controller):
    name = "cronjob"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.cronjobs = factory.informer("cronjobs")
        self.jobs = factory.informer("jobs")
        self.cronjobs.add_handlers(self.enqueue, lambda old, new: self.enqueue(new))
        self.jobs.add_handlers(self._job_changed, lambda old, new: self._job_changed(new), self._job_changed)

    def _job_changed(self, job: Obj) -> None:
        ref = controller_ref(job)
        if ref is None or ref.get("kind") != "CronJob":
            return
        cj = self.cronjobs.get(f"{job['metadata'].get('namespace')}/{ref.get('name')}")
        if cj is not None and cj["metadata"].get("uid") == ref.get("uid"):
            self.enqueue(cj)

    async def sync(self, key: str) -> None:
        cached = self.cronjobs.get(key)
        if cached is None:
            return
        cj = copy.deepcopy(cached)
        cj.setdefault("status", {})
        uid = cj["metadata"]["uid"]
        jobs = [j for j in self.jobs.list(cj["metadata"].get("namespace"))
                if (controller_ref(j) or {}).get("uid") == uid]
        requeue, changed = await CronJobSync(self, cj, jobs).run()
        if await self._cleanup_finished(cj, jobs):
            changed = True
        if changed and cj["status"] != (cached.get("status") or {}):
            await self.client.update_status("cronjobs", cj)
        if requeue is not None:
            self.enqueue_key_after(key, requeue)

    async def _cleanup_finished(self, cj: Obj, jobs: list[Obj]) -> bool:
        spec = cj.get("spec") or {}
        changed = False
        for kind, field in ((ju.COMPLETE, "successfulJobsHistoryLimit"), (ju.FAILED, "failedJobsHistoryLimit")):
            limit = spec.get(field)
            if limit is None:
                continue
            done = sorted((j for j in jobs if ju.finished(j) == kind and not is_being_deleted(j)), key=_start_time)
            for job in done[:max(0, len(done) - int(limit))]:
                if await self.delete_job(cj, job):
                    changed = True
        return changed

    async def delete_job(self, cj: Obj, job: Obj) -> bool:
        meta = job["metadata"]
        try:
            await self.client.delete("jobs", meta["name"], meta.get("namespace"), propagation_policy="Background")
        except StatusError as exc:
            if exc.code != 404:
                self.event(cj, "Warning", "FailedDelete", f"Deleted job: {exc.message}")
                return False
        status = cj.setdefault("status", {})
        status["active"] = [r for r in status.get("active") or [] if r.get("uid") != meta.get("uid")]
        if not status["active"]:
            del status["active"]
        self.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {meta['name']}")
        return True


class CronJobSync:
    """One sync of one CronJob (syncCronJob): reconcile the active list, then maybe start the due Job. ``run``
    returns (seconds until the next sync is wanted, whether the status changed)."""

    def __init__(self, controller: CronJobController, cj: Obj, jobs: list[Obj]) -> None:
        self.c = controller
        self.cj = cj
        self.jobs = jobs
        self.status: Obj = cj["status"]
        self.changed = False
        self.now = controller.clock.now()

    def _event(self, type_: str, reason: str, message: str) -> None:
        self.c.event(self.cj, type_, reason, message)

    async def run(self) -> tuple[float | None, bool]:
        await self._reconcile_active()
        if is_being_deleted(self.cj):
            return None, self.changed
        spec = self.cj.get("spec") or {}
        try:
            zone = _zone(self.cj)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            self._event("Warning", "UnknownTimeZone", f'invalid timeZone: "{spec.get("timeZone")}": {exc}')
            return None, self.changed
        if spec.get("suspend"):
            return None, self.changed
        try:
            schedule = parse_schedule(str(spec.get("schedule", "")))
        except ValueError as exc:
            self._event("Warning", "UnparseableSchedule", f'unparseable schedule: "{spec.get("schedule")}" : {exc}')
            return None, self.changed
        scheduled = self._next_unmet(schedule, zone)
        requeue = self._requeue(schedule, zone)
        if scheduled is None:
            return requeue, self.changed
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + int(deadline) < self.now:
            when = datetime.fromtimestamp(scheduled, UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")
            self._event("Warning", "MissSchedule", f"Missed scheduled time to start a job: {when}")
            return requeue, self.changed
        name = job_name(self.cj, scheduled)
        if any(r.get("name") == name for r in self.status.get("active") or []) or \
                parse_time(self.status.get("lastScheduleTime")) == float(int(scheduled)):
            return requeue, self.changed
        policy = spec.get("concurrencyPolicy", "Allow")
        if policy == "Forbid" and self.status.get("active"):
            self._event("Normal", "JobAlreadyActive",
                        "Not starting job because prior execution is running and concurrency policy is Forbid")
            return requeue, self.changed
        if policy == "Replace":
            for ref in list(self.status.get("active") or []):
                try:
                    job = await self.c.client.get("jobs", ref["name"], ref.get("namespace"))
                except StatusError as exc:
                    if exc.code != 404:
                        self._event("Warning", "FailedGet", f"Get job: {exc.message}")
                        raise
                    continue
                if not await self.c.delete_job(self.cj, job):
                    raise RuntimeError(f"could not replace job {ref.get('namespace')}/{ref['name']}")
                self.changed = True
        created = await self._create(scheduled, zone)
        if created is None:
            return requeue, self.changed
        self.status.setdefault("active", []).append(job_reference(created))
        self.status["lastScheduleTime"] = rfc3339(scheduled)
        self.changed = True
        return self._requeue(schedule, zone), self.changed

    async def _reconcile_active(self) -> None:
        active = self.status.get("active") or []
        active_uids = {r.get("uid") for r in active}
        for job in self.jobs:
            uid = job["metadata"]["uid"]
            done = ju.finished(job)
            if uid not in active_uids and not done:
                fresh = await self._fresh_status()  # the cache may not have our own status write yet
                if fresh is not None and uid in {r.get("uid") for r in fresh.get("active") or []}:
                    self.status.clear()
                    self.status.update(fresh)
                    active = self.status.get("active") or []
                    active_uids = {r.get("uid") for r in active}
                    continue
                self._event("Warning", "UnexpectedJob",
                            f"Saw a job that the controller did not create or forgot: {job['metadata']['name']}")
            elif uid in active_uids and done:
                self._event("Normal", "SawCompletedJob",
                            f"Saw completed job: {job['metadata']['name']}, condition: {done}")
                active = [r for r in active if r.get("uid") != uid]
                self.changed = True
            if done == ju.COMPLETE:
                completed = parse_time((job.get("status") or {}).get("completionTime"))
                last = parse_time(self.status.get("lastSuccessfulTime"))
                if completed is not None and (last is None or completed > last):
                    self.status["lastSuccessfulTime"] = rfc3339(completed)
                    self.changed = True
        known = {j["metadata"]["uid"] for j in self.jobs}
        for ref in list(active):
            if ref.get("uid") in known:
                continue
            try:  # the cache may lag behind a Job just created: ask the API before calling it missing
                await self.c.client.get("jobs", ref["name"], ref.get("namespace"))
            except StatusError as exc:
                if exc.code != 404:
                    raise
                self._event("Normal", "MissingJob", f"Active job went missing: {ref['name']}")
                active = [r for r in active if r.get("uid") != ref.get("uid")]
                self.changed = True
        if active:
            self.status["active"] = active
        else:
            self.status.pop("active", None)

    async def _fresh_status(self) -> Obj | None:
        meta = self.cj["metadata"]
        try:
            fresh = await self.c.client.get("cronjobs", meta["name"], meta.get("namespace"))
        except StatusError as exc:
            if exc.code == 404:
                return None
            raise
        if fresh["metadata"].get("uid") != meta.get("uid"):
            return None
        self.cj["metadata"]["resourceVersion"] = fresh["metadata"]["resourceVersion"]
        return dict(fresh.get("status") or {})

    def _earliest(self) -> float:
        return parse_time(self.status.get("lastScheduleTime")) or \
            parse_time(self.cj["metadata"].get("creationTimestamp")) or self.now

    def _next_unmet(self, schedule: Schedule, zone: tzinfo | None) -> float | None:
        earliest = self._earliest()
        deadline = (self.cj.get("spec") or {}).get("startingDeadlineSeconds")
        if deadline is not None:
            earliest = max(earliest, self.now - int(deadline))
        scheduled, missed = most_recent(schedule, earliest, self.now, zone)
        if missed > TOO_MANY_MISSED:
            self._event("Warning", "TooManyMissedTimes", f"too many missed start times: {missed}. Set or decrease "
                        ".spec.startingDeadlineSeconds or check clock skew")
        return scheduled

    def _requeue(self, schedule: Schedule, zone: tzinfo | None) -> float | None:
        """Seconds until the schedule next fires (nextScheduleTimeDuration)."""
        earliest = self._earliest()
        latest, _ = most_recent(schedule, earliest, self.now, zone)
        fire = next_time(schedule, latest if latest is not None else earliest, zone)
        return None if fire is None else max(0.0, fire + NEXT_SCHEDULE_DELTA - self.now)

    async def _create(self, scheduled: float, zone: tzinfo | None) -> Obj | None:
        request = job_from_template(self.cj, scheduled, zone)
        namespace = self.cj["metadata"].get("namespace")
        try:
            created = await self.c.client.create("jobs", request, namespace)
        except StatusError as exc:
            causes = (exc.details or {}).get("causes") or []
            if any(c.get("reason") == "NamespaceTerminating" for c in causes):
                raise
            if exc.code != 409:
                self._event("Warning", "FailedCreate", f"Error creating job: {exc.message}")
                raise
            existing = await self.c.client.get("jobs", request["metadata"]["name"], namespace)
            if (controller_ref(existing) or {}).get("uid") != self.cj["metadata"]["uid"]:
                return None  # someone else's Job: leave it alone
            if any(r.get("uid") == existing["metadata"]["uid"] for r in self.status.get("active") or []):
                return None
            return existing
        self._event("Normal", "SuccessfulCreate", f"Created job {created['metadata']['name']}")
        return created

