"""The Job controller (Kubernetes' job controller): run pods until ``completions`` of them succeed, at most
``parallelism`` at a time, and give up after ``backoffLimit`` failures or ``activeDeadlineSeconds``.

- Every pod carries the ``batch.kubernetes.io/job-tracking`` finalizer, so it cannot vanish before it is counted:
  a finished pod's uid first goes into status.uncountedTerminatedPods (one status write), then its finalizer is
  removed, then it moves to status.succeeded or status.failed (the next write). A pod being deleted before it
  succeeded counts as failed (podReplacementPolicy TerminatingOrFailed).
- A failed pod is replaced after an exponential back-off (10 s doubling to 10 min after the latest failure since
  the last success); restartPolicy OnFailure counts container restarts against backoffLimit instead.
- Indexed Jobs give each pod an index (annotation and label ``batch.kubernetes.io/job-completion-index``, the
  JOB_COMPLETION_INDEX variable, hostname ``JOB-INDEX``) and report status.completedIndexes.
- A suspended Job deletes its active pods (condition Suspended, reason JobSuspended); resuming restarts the
  activeDeadlineSeconds clock (JobResumed).
- The end is announced first with SuccessCriteriaMet or FailureTarget; Complete or Failed (with completionTime for
  success) follows once no pod is left terminating or uncounted, as Kubernetes 1.32 does.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.selectors import LabelSelector, selector_from_dict
from minik.api.timestamps import parse_time, rfc3339
from minik.client import JSON_PATCH, Client
from minik.controllers import jobutil as ju
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, controller_ref, is_being_deleted
from minik.controllers.claims import claim, fresh_owner_check
from minik.controllers.expectations import Expectations
from minik.controllers.pods import deletion_rank, is_active, is_ready
from minik.controllers.replicaset import slow_start
from minik.informers import object_key

#: at most this many pods created or deleted by one sync (MaxPodCreateDeletePerSync)
MAX_POD_CHANGES_PER_SYNC = 500
#: at most this many uids in status.uncountedTerminatedPods (MaxUncountedPods)
MAX_UNCOUNTED = 500
#: keys of pods with the tracking finalizer whose Job is gone start with this (they are not Job keys)
ORPHAN_PREFIX = "pod:"


class JobController(Controller):
    name = "job"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None, *, backoff_seconds: float = 10.0,
                 max_backoff_seconds: float = 600.0) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.backoff_seconds = backoff_seconds
        self.max_backoff_seconds = max_backoff_seconds
        self.expectations = Expectations()
        #: per Job key, the uids of pods whose finalizer removal was sent but not yet seen by the informer
        self.removing: dict[str, set[str]] = {}
        self.backoffs: dict[str, ju.BackoffRecord] = {}
        self.jobs = factory.informer("jobs")
        self.pods = factory.informer("pods")
        self.jobs.add_handlers(self.enqueue, self._job_updated, self._job_deleted)
        self.pods.add_handlers(self._pod_added, self._pod_updated, self._pod_deleted)

    # -- event handlers ----------------------------------------------------------------------------------------
    def _job_updated(self, old: Obj, new: Obj) -> None:
        self.enqueue(new)
        deadline = (new.get("spec") or {}).get("activeDeadlineSeconds")
        start = parse_time((new.get("status") or {}).get("startTime"))
        if deadline is not None and start is not None and \
                (old.get("spec") or {}).get("activeDeadlineSeconds") != deadline:
            self.enqueue_after(new, max(0.0, start + int(deadline) - self.clock.now()))

    def _job_deleted(self, job: Obj) -> None:
        key = object_key(job)
        self.expectations.forget(key)
        self.removing.pop(key, None)
        self.backoffs.pop(key, None)
        for pod in self.pods.list(job["metadata"].get("namespace")):  # its pods' finalizers must go now
            ref = controller_ref(pod)
            if ju.has_finalizer(pod) and ref is not None and ref.get("uid") == job["metadata"].get("uid"):
                self.queue.add(ORPHAN_PREFIX + object_key(pod))

    def _owner(self, pod: Obj) -> Obj | None:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "Job":
            return None
        job = self.jobs.get(f"{pod['metadata'].get('namespace')}/{ref.get('name')}")
        return job if job is not None and job["metadata"].get("uid") == ref.get("uid") else None

    def _pod_added(self, pod: Obj) -> None:
        owner = self._owner(pod)
        if owner is None:
            self._maybe_orphan(pod)
            return
        key = object_key(owner)
        self.expectations.creation_observed(key)
        if is_being_deleted(pod):
            self.expectations.deletion_observed(key, pod["metadata"].get("uid", ""))
        self.enqueue(owner)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        owner = self._owner(new)
        if owner is None:
            previous = self._owner(old)
            if previous is not None:
                self.enqueue(previous)
            self._maybe_orphan(new)
            return
        key = object_key(owner)
        if is_being_deleted(new) and not is_being_deleted(old):
            self.expectations.deletion_observed(key, new["metadata"].get("uid", ""))
        if not ju.has_finalizer(new):
            self.removing.get(key, set()).discard(new["metadata"].get("uid", ""))
        self.enqueue(owner)

    def _pod_deleted(self, pod: Obj) -> None:
        owner = self._owner(pod)
        if owner is None:
            return
        key = object_key(owner)
        uid = pod["metadata"].get("uid", "")
        self.expectations.deletion_observed(key, uid)
        self.removing.get(key, set()).discard(uid)
        self.enqueue(owner)

    def _maybe_orphan(self, pod: Obj) -> None:
        """A pod still carrying our finalizer whose Job is gone (or that no Job owns) needs it removed."""
        if ju.has_finalizer(pod):
            self.queue.add(ORPHAN_PREFIX + object_key(pod))

    # -- sync --------------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        if key.startswith(ORPHAN_PREFIX):
            await self._sync_orphan(key[len(ORPHAN_PREFIX):])
            return
        cached = self.jobs.get(key)
        if cached is None:
            self.expectations.forget(key)
            self.removing.pop(key, None)
            self.backoffs.pop(key, None)
            return
        managed_by = (cached.get("spec") or {}).get("managedBy")
        if managed_by not in (None, "kubernetes.io/job-controller"):
            return  # another controller owns this Job's status
        job = copy.deepcopy(cached)
        if ju.finished(job):
            await self._release_finished(key, job)
            return
        await JobSync(self, key, job).run()

    async def _release_finished(self, key: str, job: Obj) -> None:
        """A finished Job's pods that still carry the finalizer (a previous sync was interrupted) lose it."""
        pods = [p for p in self._owned_pods(job) if ju.has_finalizer(p)]
        await self.remove_finalizers(key, pods)

    def _owned_pods(self, job: Obj) -> list[Obj]:
        uid = job["metadata"].get("uid")
        return [p for p in self.pods.list(job["metadata"].get("namespace"))
                if (controller_ref(p) or {}).get("uid") == uid]

    async def _sync_orphan(self, pod_key: str) -> None:
        pod = self.pods.get(pod_key)
        if pod is None or not ju.has_finalizer(pod):
            return
        ref = controller_ref(pod)
        if ref is not None and ref.get("kind") == "Job":
            job = self.jobs.get(f"{pod['metadata'].get('namespace')}/{ref.get('name')}")
            if job is not None and job["metadata"].get("uid") == ref.get("uid") and not is_being_deleted(job):
                self.enqueue(job)  # it has its Job: that sync counts it
                return
        await self._remove_finalizer(pod)

    # -- pods --------------------------------------------------------------------------------------------------
    async def remove_finalizers(self, key: str, pods: list[Obj]) -> list[bool]:
        """Remove the tracking finalizer from each pod; which removals succeeded (a pod gone counts)."""
        if not pods:
            return []
        removing = self.removing.setdefault(key, set())
        removing.update(p["metadata"]["uid"] for p in pods)
        results = await asyncio.gather(*(self._remove_finalizer(p) for p in pods), return_exceptions=True)
        done = []
        for pod, result in zip(pods, results):
            if isinstance(result, BaseException):
                removing.discard(pod["metadata"]["uid"])
                if not isinstance(result, Exception):
                    raise result
                self.log.warning("removing the tracking finalizer failed", pod=object_key(pod), error=str(result))
            done.append(not isinstance(result, BaseException))
        return done

    async def _remove_finalizer(self, pod: Obj) -> None:
        meta = pod["metadata"]
        finalizers = [f for f in meta.get("finalizers") or [] if f != ju.TRACKING_FINALIZER]
        ops: list[Obj] = [{"op": "test", "path": "/metadata/uid", "value": meta["uid"]},
                          {"op": "replace", "path": "/metadata/finalizers", "value": finalizers}]
        try:
            await self.client.patch("pods", meta["name"], ops, meta.get("namespace"), content_type=JSON_PATCH)
        except StatusError as exc:
            if exc.code != 404:
                raise

    async def create_pods(self, key: str, job: Obj, indexes: list[int | None]) -> int:
        """Create one pod per index (None for NonIndexed) in slow-start batches; how many were created."""
        self.expectations.expect_creations(key, len(indexes))
        pending = iter(indexes)

        async def create_next() -> None:
            pod = ju.job_pod(job, next(pending))
            try:
                created = await self.client.create("pods", pod, job["metadata"].get("namespace"))
            except StatusError as exc:
                causes = (exc.details or {}).get("causes") or []
                if any(c.get("reason") == "NamespaceTerminating" for c in causes):
                    return  # every later create would fail the same way
                self.event(job, "Warning", "FailedCreate", f"Error creating: {exc.message}")
                raise
            self.event(job, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")

        created, error = await slow_start(len(indexes), create_next)
        if created < len(indexes):
            self.expectations.creation_failed(key, len(indexes) - created)
        if error is not None:
            raise error
        return created

    async def delete_pods(self, key: str, job: Obj, pods: list[Obj], keep_finalizer: bool) -> int:
        """Delete pods; unless ``keep_finalizer`` (the Job failed: they will be counted), their finalizer goes
        first so that they are not counted as failures. How many deletions succeeded."""
        self.expectations.expect_deletions(key, [p["metadata"]["uid"] for p in pods])

        async def delete(pod: Obj) -> None:
            meta = pod["metadata"]
            try:
                if not keep_finalizer and ju.has_finalizer(pod):
                    await self._remove_finalizer(pod)
                await self.client.delete("pods", meta["name"], meta.get("namespace"),
                                         preconditions={"uid": meta["uid"]})
            except StatusError as exc:
                self.expectations.deletion_observed(key, meta["uid"])
                if exc.code != 404:
                    self.event(job, "Warning", "FailedDelete", f"Error deleting: {exc.message}")
                    raise
                return
            self.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")

        results = await asyncio.gather(*(delete(p) for p in pods), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for error in errors:
            if not isinstance(error, Exception):
                raise error
        if errors:
            raise errors[0]
        return len(pods)


@dataclass
class _Counts:
    """What one sync counted of a Job's pods; the pod changes it makes update them."""

    active: list[Obj]
    active_count: int
    terminating: int
    ready: int
    succeeded: int
    failed: int


class JobSync:
    """One sync of one Job: what it counts, decides and writes (Kubernetes' syncJob with its syncJobCtx)."""

    def __init__(self, controller: JobController, key: str, job: Obj) -> None:
        self.c = controller
        self.key = key
        self.job = job
        self.spec: Obj = job.get("spec") or {}
        self.status: Obj = job.setdefault("status", {})
        self.now = controller.clock.now()
        self.indexed = self.spec.get("completionMode") == "Indexed"
        self.completions: int | None = ju.spec_int(job, "completions")
        self.parallelism: int = ju.spec_int(job, "parallelism", 1)
        self.pods: list[Obj] = []
        self.uncounted_succeeded: list[str] = []
        self.uncounted_failed: list[str] = []
        #: an Indexed Job's completed indexes as its status had them, and with the pods that succeeded since
        self.prev_indexes: set[int] = set()
        self.succeeded_indexes: set[int] = set()
        self.backoff = ju.BackoffRecord()
        self.finished_condition: Obj | None = None
        self.original_status = copy.deepcopy(job.get("status") or {})

    @property
    def suspended(self) -> bool:
        return bool(self.spec.get("suspend"))

    def _selector(self) -> LabelSelector:
        try:
            return selector_from_dict(self.spec.get("selector"))
        except ValueError:
            return LabelSelector.nothing()

    async def run(self) -> None:
        """Count the Job's pods, decide whether it has ended, create or delete pods, then write what it counted."""
        await self._claim()
        counts = self._count()
        if not self.status.get("startTime") and not self.suspended:
            self.status["startTime"] = rfc3339(self.now)
        self._decide_end(counts.failed)
        manage_error = await self._act(counts)
        self.status["active"] = counts.active_count
        self.status["ready"] = counts.ready
        self.status["terminating"] = counts.terminating
        if not self.status.get("active"):
            self.status.pop("active")
        await self._track_and_finish()
        if manage_error is not None:
            raise manage_error

    async def _claim(self) -> None:
        """The pods the Job owns (adopting and releasing as its selector says), and the uids it has not counted."""
        c, job = self.c, self.job
        self.pods = await claim(c.client, "pods", job, self._selector(), c.pods.list(job["metadata"].get("namespace")),
                                fresh_owner_check(c.client, "jobs", job))
        uncounted = self.status.get("uncountedTerminatedPods") or {}
        self.uncounted_succeeded = list(uncounted.get("succeeded") or [])
        self.uncounted_failed = list(uncounted.get("failed") or [])

    def _count(self) -> _Counts:
        """Active, terminating and ready pods; succeeded and failed ones, counted or not yet; and the back-off
        after the latest failures."""
        active = [p for p in self.pods if is_active(p)]
        terminating = sum(1 for p in self.pods if is_being_deleted(p) and
                          (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))
        new_succeeded, new_failed = self._newly_finished()
        succeeded = self._succeeded(new_succeeded)
        failed = int(self.status.get("failed") or 0) + len(self.uncounted_failed) + len(new_failed)
        self.backoff = self.c.backoffs.get(self.key, ju.BackoffRecord()).after(
            [ju.finish_time(p, self.now) for p in new_succeeded], [ju.finish_time(p, self.now) for p in new_failed])
        return _Counts(active, len(active), terminating, sum(1 for p in active if is_ready(p)), succeeded, failed)

    def _newly_finished(self) -> tuple[list[Obj], list[Obj]]:
        """The pods that succeeded and failed since the last count: they still carry the finalizer and are in no
        uncounted list (nor having their finalizer removed)."""
        counted_elsewhere = (set(self.uncounted_succeeded) | set(self.uncounted_failed) |
                             self.c.removing.get(self.key, set()))
        fresh = [p for p in self.pods if ju.has_finalizer(p) and p["metadata"]["uid"] not in counted_elsewhere]
        return ([p for p in fresh if (p.get("status") or {}).get("phase") == "Succeeded"],
                [p for p in fresh if ju.is_failed(p, self.job)])

    def _succeeded(self, new_succeeded: list[Obj]) -> int:
        """How many pods succeeded: completed indexes for an Indexed Job (noting them), else a count."""
        if not self.indexed:
            return int(self.status.get("succeeded") or 0) + len(self.uncounted_succeeded) + len(new_succeeded)
        completions = self.completions or 0
        self.prev_indexes = ju.parse_indexes(self.status.get("completedIndexes"), completions)
        self.succeeded_indexes = self.prev_indexes | {
            i for p in self.pods if (p.get("status") or {}).get("phase") == "Succeeded" and ju.has_finalizer(p)
            for i in [ju.completion_index(p)] if i is not None and i < completions}
        return len(self.succeeded_indexes)

    def _decide_end(self, failed: int) -> None:
        """Whether the Job has failed (too many failures, past its deadline); else look again at the deadline."""
        self.finished_condition = _true(self.job, ju.SUCCESS_CRITERIA_MET) or _true(self.job, ju.FAILURE_TARGET)
        if self.finished_condition is not None:
            return
        if failed > ju.spec_int(self.job, "backoffLimit", 6) or ju.past_backoff_limit_on_failure(self.job, self.pods):
            self.finished_condition = ju.new_condition(ju.FAILURE_TARGET, *ju.BACKOFF_LIMIT_EXCEEDED, self.now)
        elif self._past_deadline():
            self.finished_condition = ju.new_condition(ju.FAILURE_TARGET, *ju.DEADLINE_EXCEEDED, self.now)
        elif self.spec.get("activeDeadlineSeconds") is not None and not self.suspended:
            start = parse_time(self.status.get("startTime")) or self.now
            self.c.enqueue_key_after(self.key, max(0.0, start + int(self.spec["activeDeadlineSeconds"]) - self.now))

    async def _act(self, counts: _Counts) -> Exception | None:
        """A failing Job's active pods go; a running one gets the pods it wants (and ends once enough of them
        succeeded). Updates ``counts``; returns the error of the pod changes, raised after the status is written."""
        c = self.c
        if self.finished_condition is not None:
            if self.finished_condition["type"] != ju.FAILURE_TARGET:
                return None
            counts.active_count = 0
            if not counts.active:
                return None
            counts.ready = 0
            try:
                counts.terminating += await c.delete_pods(self.key, self.job, counts.active, keep_finalizer=True)
            except Exception as exc:  # noqa: BLE001 - status first, then retry
                return exc
            return None
        error: Exception | None = None
        managed = c.expectations.satisfied(self.key) and not is_being_deleted(self.job)
        if managed:
            try:
                counts.active_count, counts.terminating, counts.ready = await self._manage(
                    counts.active, counts.succeeded, counts.terminating, counts.ready)
            except Exception as exc:  # noqa: BLE001 - status first, then retry
                error = exc
        if self._done(counts):
            self.finished_condition = ju.new_condition(ju.SUCCESS_CRITERIA_MET, *ju.COMPLETIONS_REACHED, self.now)
        elif managed:
            self._suspension_conditions()
        return error

    def _done(self, counts: _Counts) -> bool:
        """Enough pods succeeded (any, without ``completions``) and none is active."""
        if counts.active_count:
            return False
        return counts.succeeded > 0 if self.completions is None else counts.succeeded >= self.completions

    def _past_deadline(self) -> bool:
        deadline = self.spec.get("activeDeadlineSeconds")
        start = parse_time(self.status.get("startTime"))
        if deadline is None or start is None or self.suspended:
            return False
        return self.now - start >= int(deadline)

    def _suspension_conditions(self) -> None:
        c = self.c
        if self.suspended:
            if ju.ensure_condition(self.status, ju.SUSPENDED, "True", "JobSuspended", "Job suspended", self.now):
                c.event(self.job, "Normal", "Suspended", "Job suspended")
        elif ju.ensure_condition(self.status, ju.SUSPENDED, "False", "JobResumed", "Job resumed", self.now):
            c.event(self.job, "Normal", "Resumed", "Job resumed")
            # activeDeadlineSeconds counts the time the Job has been active without a pause
            self.status["startTime"] = rfc3339(self.now)

    async def _manage(self, active: list[Obj], succeeded: int, terminating: int, ready: int) -> tuple[int, int, int]:
        """Create or delete pods toward the wanted number of active ones; (active, terminating, ready) after."""
        c, job = self.c, self.job
        if self.suspended:
            if active:
                removed = await c.delete_pods(self.key, job, sorted(active, key=deletion_rank), keep_finalizer=False)
                return len(active) - removed, terminating + removed, 0
            return 0, terminating, ready
        if self.completions is None:
            want = len(active) if succeeded > 0 else self.parallelism
        else:
            want = max(0, min(self.completions - succeeded, self.parallelism))
        remove = self._pods_to_remove(active, max(0, len(active) - want))[:MAX_POD_CHANGES_PER_SYNC]
        if remove:
            removed = await c.delete_pods(self.key, job, remove, keep_finalizer=False)
            ready -= sum(1 for p in remove if is_ready(p))
            return len(active) - removed, terminating + removed, ready
        blocking = terminating if self.spec.get("podReplacementPolicy") == "Failed" else 0
        missing = min(want - blocking - len(active), MAX_POD_CHANGES_PER_SYNC)
        if missing <= 0:
            return len(active), terminating, ready
        wait = self.backoff.remaining(self.now, c.backoff_seconds, c.max_backoff_seconds)
        if wait > 0:
            c.enqueue_key_after(self.key, wait)
            return len(active), terminating, ready
        indexes: list[int | None]
        if self.indexed:
            taken = self.succeeded_indexes | {i for p in active for i in [ju.completion_index(p)] if i is not None}
            if blocking:
                taken |= {i for p in self.pods if is_being_deleted(p) for i in [ju.completion_index(p)]
                          if i is not None}
            free = [i for i in range(self.completions or 0) if i not in taken]
            indexes = list(free[:missing])
        else:
            indexes = [None] * missing
        created = await c.create_pods(self.key, job, indexes) if indexes else 0
        return len(active) + created, terminating, ready

    def _pods_to_remove(self, active: list[Obj], at_least: int) -> list[Obj]:
        """activePodsForRemoval: for Indexed Jobs first the pods with no, an out-of-range or a repeated index; then
        the least valuable pods (unscheduled, pending, not ready first)."""
        remove: list[Obj] = []
        left = active
        if self.indexed:
            seen: set[int] = set()
            left = []
            for pod in sorted(active, key=lambda p: (ju.completion_index(p) or -1, deletion_rank(p))):
                index = ju.completion_index(pod)
                if index is None or index >= (self.completions or 0) or index in seen:
                    remove.append(pod)
                else:
                    seen.add(index)
                    left.append(pod)
        if len(remove) < at_least:
            remove += sorted(left, key=deletion_rank)[:at_least - len(remove)]
        return remove

    # -- counting and finishing ----------------------------------------------------------------------------------
    async def _track_and_finish(self) -> None:
        """trackJobStatusAndRemoveFinalizers: note finished pods as uncounted (write), remove their finalizers,
        count those whose finalizer is gone, and add Complete or Failed once nothing is left to count (write)."""
        c, job, status = self.c, self.job, self.status
        removing = c.removing.get(self.key, set())
        with_finalizer = {p["metadata"]["uid"] for p in self.pods if ju.has_finalizer(p) and
                          p["metadata"]["uid"] not in removing}
        to_release, new_indexes = self._note_finished(with_finalizer)
        self._move_counted(with_finalizer)
        if self.indexed:
            self.prev_indexes |= new_indexes
            status["completedIndexes"] = ju.format_indexes(self.prev_indexes)
            status["succeeded"] = len(self.prev_indexes)
            if not status["completedIndexes"]:
                status.pop("completedIndexes")
        interim = self.finished_condition
        if interim is not None and _true(job, interim["type"]) is None:
            status.setdefault("conditions", []).append(interim)
        self._write_uncounted()
        if status != self.original_status:
            await self._write()
            c.backoffs[self.key] = self.backoff
        released = await c.remove_finalizers(self.key, to_release)
        for pod, ok in zip(to_release, released):
            if ok:
                with_finalizer.discard(pod["metadata"]["uid"])
        self._move_counted(with_finalizer)
        self._write_uncounted()
        finished_now = self._enact_finished()
        if status != self.original_status:
            await self._write()
        if finished_now:
            self._record_finished()

    def _note_finished(self, with_finalizer: set[str]) -> tuple[list[Obj], set[int]]:
        """The pods whose finalizer may go (finished ones; all once the Job ends or is being deleted), each noted
        first as uncounted (or, for an Indexed Job, as a completed index, which are returned), at most
        MAX_UNCOUNTED of them."""
        can_remove_all = is_being_deleted(self.job) or self.finished_condition is not None
        new_indexes: set[int] = set()
        to_release: list[Obj] = []
        for pod in self.pods:
            if pod["metadata"]["uid"] not in with_finalizer:
                continue
            phase = (pod.get("status") or {}).get("phase")
            failed = ju.is_failed(pod, self.job)
            if not (can_remove_all or phase == "Succeeded" or failed):
                continue
            to_release.append(pod)
            self._note(pod, phase == "Succeeded", failed, new_indexes)
            if len(new_indexes) + len(self.uncounted_succeeded) + len(self.uncounted_failed) >= MAX_UNCOUNTED:
                break
        return to_release, new_indexes

    def _note(self, pod: Obj, succeeded: bool, failed: bool, new_indexes: set[int]) -> None:
        """Note one finished pod as uncounted, or its completion index; a pod of a failing Job counts as failed."""
        uid = pod["metadata"]["uid"]
        uncounted_s, uncounted_f = self.uncounted_succeeded, self.uncounted_failed
        index = ju.completion_index(pod)
        in_range = index is not None and index < (self.completions or 0)
        failing_all = self.finished_condition is not None and self.finished_condition["type"] == ju.FAILURE_TARGET
        if succeeded and uid not in uncounted_f:
            if self.indexed:
                if index is not None and in_range and index not in self.prev_indexes:
                    new_indexes.add(index)
            elif uid not in uncounted_s:
                uncounted_s.append(uid)
        elif (failed or failing_all) and uid not in uncounted_f and uid not in uncounted_s:
            if not self.indexed or in_range:
                uncounted_f.append(uid)

    def _move_counted(self, with_finalizer: set[str]) -> None:
        """Uncounted uids whose pod no longer carries the finalizer join the counters."""
        for field, uids in (("succeeded", self.uncounted_succeeded), ("failed", self.uncounted_failed)):
            kept = [uid for uid in uids if uid in with_finalizer]
            if len(kept) != len(uids):
                self.status[field] = int(self.status.get(field) or 0) + len(uids) - len(kept)
                uids[:] = kept

    def _write_uncounted(self) -> None:
        uncounted: Obj = {}
        if self.uncounted_succeeded:
            uncounted["succeeded"] = list(self.uncounted_succeeded)
        if self.uncounted_failed:
            uncounted["failed"] = list(self.uncounted_failed)
        self.status["uncountedTerminatedPods"] = uncounted
        for field in ("succeeded", "failed"):
            if not self.status.get(field):
                self.status.pop(field, None)

    def _enact_finished(self) -> bool:
        interim = self.finished_condition
        if interim is None or self.uncounted_succeeded or self.uncounted_failed:
            return False
        if int(self.status.get("terminating") or 0) > 0:
            return False
        final = ju.COMPLETE if interim["type"] == ju.SUCCESS_CRITERIA_MET else ju.FAILED
        if _true(self.job, final) is not None:
            return False
        self.status.setdefault("conditions", []).append(
            ju.new_condition(final, interim.get("reason", ""), interim.get("message", ""), self.now))
        if final == ju.COMPLETE:
            self.status["completionTime"] = rfc3339(self.now)
        return True

    def _record_finished(self) -> None:
        interim = self.finished_condition or {}
        if interim.get("type") == ju.SUCCESS_CRITERIA_MET:
            if self.completions is not None and int(self.status.get("succeeded") or 0) > self.completions:
                self.c.event(self.job, "Warning", "TooManySucceededPods",
                             "Too many succeeded pods running after completion count reached")
            self.c.event(self.job, "Normal", "Completed", "Job completed")
        else:
            self.c.event(self.job, "Warning", interim.get("reason", ""), interim.get("message", ""))

    async def _write(self) -> None:
        """Write the status; the returned object carries the resourceVersion the next write needs."""
        try:
            written = await self.c.client.update_status("jobs", self.job)
        except StatusError as exc:
            if exc.code == 404:
                return
            raise
        self.job["metadata"]["resourceVersion"] = written["metadata"]["resourceVersion"]
        self.original_status = copy.deepcopy(self.status)


def _true(job: Obj, type_: str) -> Obj | None:
    c = ju.condition(job, type_)
    return c if c is not None and c.get("status") == "True" else None

