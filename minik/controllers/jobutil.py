"""Job bookkeeping (Kubernetes' job controller utilities): conditions, completion indexes and their interval
strings, which pods count as failed, the pod failure back-off, and the pods a Job makes."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from minik.aio.backoff import exponential
from minik.api.timestamps import parse_time, rfc3339
from minik.controllers.base import Obj
from minik.controllers.pods import pod_from_template

#: on every pod a Job creates, so that a pod is never gone before the Job has counted it
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
#: annotation and label with an Indexed Job pod's index; the env variable reads the label
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
#: the longest generateName a pod gets (Kubernetes' MaxGeneratedNameLength: 63 minus the random suffix)
MAX_GENERATED_NAME = 58

COMPLETE, FAILED = "Complete", "Failed"
SUCCESS_CRITERIA_MET, FAILURE_TARGET, SUSPENDED = "SuccessCriteriaMet", "FailureTarget", "Suspended"
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF_LIMIT_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")


# -- conditions ------------------------------------------------------------------------------------------------
def condition(job: Obj, type_: str) -> Obj | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c
    return None


def finished(job: Obj) -> str | None:
    """COMPLETE or FAILED when the Job has that condition True (IsJobFinished), else None."""
    for type_ in (COMPLETE, FAILED):
        c = condition(job, type_)
        if c is not None and c.get("status") == "True":
            return type_
    return None


def new_condition(type_: str, reason: str, message: str, now: float, status: str = "True") -> Obj:
    stamp = rfc3339(now)
    return {"type": type_, "status": status, "lastProbeTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def ensure_condition(status: Obj, type_: str, value: str, reason: str, message: str, now: float) -> bool:
    """ensureJobConditionStatus: set the condition (a False condition is only written over an existing one);
    True when something changed."""
    conditions = status.setdefault("conditions", [])
    for c in conditions:
        if c.get("type") == type_:
            if c.get("status") == value and c.get("reason") == reason and c.get("message") == message:
                return False
            transition = c.get("lastTransitionTime") if c.get("status") == value else rfc3339(now)
            c.update({"status": value, "reason": reason, "message": message, "lastProbeTime": rfc3339(now),
                      "lastTransitionTime": transition})
            return True
    if value != "True":
        if not conditions:
            status.pop("conditions")
        return False
    conditions.append(new_condition(type_, reason, message, now))
    return True


# -- indexes ---------------------------------------------------------------------------------------------------
def parse_indexes(text: str | None, completions: int) -> set[int]:
    """The indexes in a completedIndexes string such as ``1,3-5`` (those below ``completions``)."""
    out: set[int] = set()
    for part in filter(None, (text or "").split(",")):
        first, _, last = part.partition("-")
        try:
            low, high = int(first), int(last or first)
        except ValueError:
            continue
        out.update(i for i in range(low, min(high, completions - 1) + 1))
    return out


def format_indexes(indexes: set[int]) -> str:
    """Sorted intervals: ``0,2-4`` (a run of two or more as ``first-last``)."""
    parts: list[str] = []
    ordered = sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def completion_index(pod: Obj) -> int | None:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(COMPLETION_INDEX)
    try:
        index = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return index if index >= 0 else None


# -- pods ------------------------------------------------------------------------------------------------------
def has_finalizer(pod: Obj) -> bool:
    return TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or [])


def is_failed(pod: Obj, job: Obj) -> bool:
    """isPodFailed: Failed, or (unless the Job only replaces Failed pods) being deleted before succeeding."""
    phase = (pod.get("status") or {}).get("phase")
    if ((job.get("spec") or {}).get("podReplacementPolicy")) == "Failed":
        return phase == "Failed"
    return phase == "Failed" or (bool((pod.get("metadata") or {}).get("deletionTimestamp")) and phase != "Succeeded")


def finish_time(pod: Obj, now: float) -> float:
    """When a pod finished: its containers' latest finishedAt, else its deletion time, else ``now``."""
    latest: float | None = None
    status = pod.get("status") or {}
    for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        stamp = parse_time(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        if stamp is not None and (latest is None or stamp > latest):
            latest = stamp
    if latest is not None:
        return latest
    return parse_time((pod.get("metadata") or {}).get("deletionTimestamp")) or now


def restarts(pod: Obj) -> int:
    status = pod.get("status") or {}
    return sum(int(cs.get("restartCount") or 0)
               for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []))


def past_backoff_limit_on_failure(job: Obj, pods: list[Obj]) -> bool:
    """restartPolicy OnFailure: the containers of the running and pending pods restarted backoffLimit times."""
    spec = job.get("spec") or {}
    if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
        return False
    total = sum(restarts(p) for p in pods if (p.get("status") or {}).get("phase") in ("Running", "Pending"))
    limit = int(spec.get("backoffLimit", 6))
    return total > 0 if limit == 0 else total >= limit


def job_pod(job: Obj, index: int | None) -> Obj:
    """A pod for ``job`` (with the tracking finalizer); for an Indexed Job, for ``index``: its annotation and label,
    JOB_COMPLETION_INDEX in every container, hostname ``JOB-INDEX`` and a name that starts ``JOB-INDEX-``."""
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    name = job["metadata"]["name"]
    generate_name = None
    extra_labels = None
    if index is not None:
        extra_labels = {COMPLETION_INDEX: str(index)}
        suffix = f"-{index}-"
        generate_name = name[:MAX_GENERATED_NAME - len(suffix)] + suffix
    pod = pod_from_template(template, job, generate_name=generate_name, extra_labels=extra_labels)
    meta, spec = pod["metadata"], pod["spec"]
    finalizers = meta.setdefault("finalizers", [])
    if TRACKING_FINALIZER not in finalizers:
        finalizers.append(TRACKING_FINALIZER)
    if index is not None:
        meta.setdefault("annotations", {})[COMPLETION_INDEX] = str(index)
        spec["hostname"] = f"{name}-{index}"
        env_var = {"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
            "fieldPath": f"metadata.labels['{COMPLETION_INDEX}']"}}}
        for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            env = container.setdefault("env", [])
            if not any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
                env.append(copy.deepcopy(env_var))
    return pod


# -- the pod failure back-off ----------------------------------------------------------------------------------
@dataclass
class BackoffRecord:
    """Failures since the last success and when the last one happened (Kubernetes' backoffRecord)."""

    failures: int = 0
    last_failure: float | None = None

    def after(self, succeeded: list[float], failed: list[float]) -> BackoffRecord:
        """The record once pods finished at these times (success resets it; failures after it count)."""
        if not succeeded:
            if not failed:
                return BackoffRecord(self.failures, self.last_failure)
            return BackoffRecord(self.failures + len(failed), max(failed))
        last_success = max(succeeded)
        later = sorted(t for t in failed if t > last_success)
        return BackoffRecord(len(later), later[-1] if later else None)

    def remaining(self, now: float, base: float, maximum: float) -> float:
        """Seconds until a new pod may be created: ``base * 2**(failures-1)`` (at most ``maximum``) after the last
        failure."""
        if self.failures == 0 or self.last_failure is None:
            return 0.0
        delay = exponential(base, maximum, self.failures - 1)
        return max(0.0, delay - (now - self.last_failure))


def spec_int(job: Obj, field: str, default: Any = None) -> Any:
    value = (job.get("spec") or {}).get(field)
    return default if value is None else int(value)
