"""The TTL-after-finished controller (Kubernetes' ttlafterfinished): a Job with spec.ttlSecondsAfterFinished is
deleted, with its pods (foreground propagation), that many seconds after it completed or failed."""

from __future__ import annotations

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.timestamps import parse_time
from minik.client import Client
from minik.controllers import jobutil as ju
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, is_being_deleted


def finish_time(job: Obj) -> float | None:
    """When the Job finished: the lastTransitionTime of its Complete or Failed condition."""
    kind = ju.finished(job)
    if kind is None:
        return None
    return parse_time((ju.condition(job, kind) or {}).get("lastTransitionTime"))


class TTLAfterFinishedController(Controller):
    name = "ttl-after-finished"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.jobs = factory.informer("jobs")
        self.jobs.add_handlers(self._consider, lambda old, new: self._consider(new))

    def _consider(self, job: Obj) -> None:
        if (job.get("spec") or {}).get("ttlSecondsAfterFinished") is not None and ju.finished(job) and \
                not is_being_deleted(job):
            self.enqueue(job)

    def expires_in(self, job: Obj) -> float | None:
        """Seconds until the Job expires (<= 0: now); None when it does not (no TTL, not finished)."""
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        finished = finish_time(job)
        if ttl is None or finished is None:
            return None
        return finished + int(ttl) - self.clock.now()

    async def sync(self, key: str) -> None:
        job = self.jobs.get(key)
        if job is None or is_being_deleted(job):
            return
        remaining = self.expires_in(job)
        if remaining is None:
            return
        if remaining > 0:
            self.enqueue_after(job, remaining)
            return
        # the cache may be stale (the TTL changed, the Job was re-created): decide on the live object
        meta = job["metadata"]
        try:
            fresh = await self.client.get("jobs", meta["name"], meta.get("namespace"))
        except StatusError as exc:
            if exc.code == 404:
                return
            raise
        remaining = self.expires_in(fresh)
        if remaining is None or is_being_deleted(fresh):
            return
        if remaining > 0:
            self.enqueue_after(fresh, remaining)
            return
        self.log.info("deleting expired job", job=key)
        try:
            await self.client.delete("jobs", meta["name"], meta.get("namespace"), propagation_policy="Foreground",
                                     preconditions={"uid": fresh["metadata"]["uid"]})
        except StatusError as exc:
            if exc.code not in (404, 409):
                raise
