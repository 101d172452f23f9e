"""The batch/v1 group: Job and CronJob."""

from __future__ import annotations

import copy
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from minik.api import validation as v
from minik.api.cron import parse_schedule
from minik.api.kinds.common import (
    SELECTOR_MISMATCH,
    Causes,
    Obj,
    dict_at,
    ensure_dict,
    expect_object,
    labels_of,
    set_default,
)
from minik.api.kinds.podspec import default_pod_template
from minik.api.kinds.podvalidation import validate_pod_template
from minik.api.selectors import selector_from_dict
from minik.api.strategy import Strategy

__all__ = ["JobStrategy", "CronJobStrategy", "CONTROLLER_UID_LABEL", "JOB_NAME_LABEL"]

CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
MAX_INT32 = 2 ** 31 - 1
#: a CronJob's name plus the 11 characters of a job's time suffix must fit a DNS-1035 label
CRONJOB_NAME_MAX = 52


def _validate_job_spec(spec: Any, path: str) -> Causes:
    """What a Job's spec and a CronJob's job template share."""
    if not isinstance(spec, dict):
        return expect_object(spec, path)
    causes: Causes = []
    for field in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        causes += v.validate_nonnegative(spec.get(field), v.child(path, field))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            causes.append(v.not_supported(v.child(path, "completionMode"), mode, ["NonIndexed", "Indexed"]))
        elif mode == "Indexed" and spec.get("completions") is None:
            causes.append(v.required(v.child(path, "completions"), "when completion mode is Indexed"))
    causes += v.validate_enum(spec.get("podReplacementPolicy"), v.child(path, "podReplacementPolicy"),
                              ("Failed", "TerminatingOrFailed"), required_=False)
    if spec.get("suspend") not in (None, True, False):
        causes.append(v.type_invalid(v.child(path, "suspend"), spec["suspend"], "must be a boolean"))
    template = spec.get("template")
    causes += validate_pod_template(template, v.child(path, "template"))
    policy = dict_at(template, "spec").get("restartPolicy")
    if isinstance(template, dict) and policy not in ("OnFailure", "Never"):
        causes.append(v.not_supported(v.child(path, "template", "spec", "restartPolicy"), policy or "",
                                      ["OnFailure", "Never"]))
    return causes


def _default_job_spec(spec: Obj) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    set_default(spec, "completionMode", "NonIndexed")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    set_default(spec, "podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
    default_pod_template(spec)


def generate_job_selector(job: Obj) -> None:
    """What Kubernetes' job strategy does once the job has a uid (unless spec.manualSelector): label the template
    with the job's name and uid, and select on the uid."""
    meta, spec = dict_at(job, "metadata"), job.get("spec")
    uid, name = meta.get("uid"), meta.get("name")
    if not uid or not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    template = ensure_dict(spec, "template")
    template_meta = ensure_dict(template, "metadata") if template is not None else None
    labels = ensure_dict(template_meta, "labels") if template_meta is not None else None
    if labels is None:
        return
    for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(key, str(name or ""))
    for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(key, str(uid))
    selector = ensure_dict(spec, "selector")
    match_labels = ensure_dict(selector, "matchLabels") if selector is not None else None
    if match_labels is not None:
        match_labels.setdefault(CONTROLLER_UID_LABEL, str(uid))


class JobStrategy(Strategy):
    has_status = True
    tracks_generation = True
    orphans_dependents_by_default = True  # core/v1 and batch/v1 keep the old default

    def initial_status(self, obj: Obj) -> Obj | None:
        return {}

    def default(self, obj: Obj) -> None:
        spec = ensure_dict(obj, "spec")
        if spec is None:
            return
        _default_job_spec(spec)
        meta = ensure_dict(obj, "metadata")
        labels = labels_of(spec.get("template"))
        if meta is not None and labels and not meta.get("labels"):
            meta["labels"] = dict(labels)

    def validate(self, obj: Obj) -> Causes:
        """Generates the selector first when the job has its uid (Kubernetes does this in its Validate too, the
        first point where the uid is known)."""
        generate_job_selector(obj)
        return self._validate_job(obj)

    def _validate_job(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        causes += _validate_job_spec(spec, "spec")
        if not isinstance(spec, dict):
            return causes
        selector = spec.get("selector")
        if selector is None:
            return causes + [v.required("spec.selector")]
        selector_causes = v.validate_label_selector(selector, "spec.selector")
        if selector_causes:
            return causes + selector_causes
        matcher = selector_from_dict(selector)
        labels = labels_of(spec.get("template"))
        if not matcher.matches(labels):
            causes.append(v.invalid("spec.template.metadata.labels", labels, SELECTOR_MISMATCH))
        uid = dict_at(obj, "metadata").get("uid")
        if spec.get("manualSelector") is not True and uid and \
                not matcher.matches({CONTROLLER_UID_LABEL: str(uid)}):
            causes.append(v.invalid("spec.selector", selector, "`selector` not auto-generated"))
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        causes = v.validate_object_meta_update(obj.get("metadata"), old.get("metadata")) + self._validate_job(obj)
        spec, old_spec = dict_at(obj, "spec"), dict_at(old, "spec")
        for field in ("completions", "selector", "completionMode", "podFailurePolicy", "backoffLimitPerIndex"):
            causes += v.validate_immutable(spec.get(field), old_spec.get(field), f"spec.{field}")
        old_template = copy.deepcopy(old_spec.get("template"))
        new_template = spec.get("template")
        suspended_never_started = old_spec.get("suspend") is True and not dict_at(old, "status").get("startTime")
        if suspended_never_started and isinstance(old_template, dict) and isinstance(new_template, dict):
            # a suspended job that never ran may have its scheduling directives changed (KEP-2926)
            old_meta, new_meta = ensure_dict(old_template, "metadata"), dict_at(new_template, "metadata")
            for key in ("labels", "annotations"):
                if old_meta is not None:
                    old_meta[key] = new_meta.get(key)
                    if old_meta[key] is None:
                        old_meta.pop(key)
            old_pod, new_pod = ensure_dict(old_template, "spec"), dict_at(new_template, "spec")
            for key in ("nodeSelector", "affinity", "tolerations", "schedulingGates"):
                if old_pod is not None:
                    if key in new_pod:
                        old_pod[key] = new_pod[key]
                    else:
                        old_pod.pop(key, None)
        if new_template != old_template:
            causes.append(v.invalid("spec.template", new_template, v.FIELD_IMMUTABLE))
        return causes

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["status.successful"] = str(dict_at(obj, "status").get("succeeded") or 0)
        return fields


class CronJobStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def initial_status(self, obj: Obj) -> Obj | None:
        return {}

    def default(self, obj: Obj) -> None:
        spec = ensure_dict(obj, "spec")
        if spec is None:
            return
        set_default(spec, "concurrencyPolicy", "Allow")
        if spec.get("suspend") is None:
            spec["suspend"] = False
        if spec.get("successfulJobsHistoryLimit") is None:
            spec["successfulJobsHistoryLimit"] = 3
        if spec.get("failedJobsHistoryLimit") is None:
            spec["failedJobsHistoryLimit"] = 1
        template = ensure_dict(spec, "jobTemplate")
        job_spec = ensure_dict(template, "spec") if template is not None else None
        if job_spec is not None:
            default_pod_template(job_spec)

    def _validate_cronjob(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return causes + expect_object(spec, "spec")
        schedule = spec.get("schedule")
        if not schedule:
            causes.append(v.required("spec.schedule"))
        elif not isinstance(schedule, str):
            causes.append(v.type_invalid("spec.schedule", schedule, "must be a string"))
        else:
            try:
                parse_schedule(schedule)
            except ValueError as exc:
                causes.append(v.invalid("spec.schedule", schedule, str(exc)))
            if "TZ" in schedule:
                causes.append(v.invalid("spec.schedule", schedule,
                                        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
        time_zone = spec.get("timeZone")
        if time_zone is not None:
            try:
                ZoneInfo(str(time_zone))
            except (ZoneInfoNotFoundError, ValueError):
                causes.append(v.invalid("spec.timeZone", time_zone, f"unknown time zone {time_zone}"))
        causes += v.validate_enum(spec.get("concurrencyPolicy"), "spec.concurrencyPolicy",
                                  ("Allow", "Forbid", "Replace"))
        for field in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
            causes += v.validate_nonnegative(spec.get(field), f"spec.{field}")
        template = spec.get("jobTemplate")
        if not isinstance(template, dict):
            return causes + expect_object(template, "spec.jobTemplate")
        template_meta = dict_at(template, "metadata")
        causes += v.validate_labels(template_meta.get("labels"), "spec.jobTemplate.metadata.labels")
        causes += v.validate_annotations(template_meta.get("annotations"), "spec.jobTemplate.metadata.annotations")
        job_spec = template.get("spec")
        causes += _validate_job_spec(job_spec, "spec.jobTemplate.spec")
        if isinstance(job_spec, dict):
            if job_spec.get("selector") is not None:
                causes.append(v.invalid("spec.jobTemplate.spec.selector", job_spec["selector"],
                                        "`selector` will be auto-generated"))
            if job_spec.get("manualSelector") is True:
                causes.append(v.not_supported("spec.jobTemplate.spec.manualSelector", True, ["nil", "false"]))
        return causes

    def validate(self, obj: Obj) -> Causes:
        causes = self._validate_cronjob(obj)
        name = dict_at(obj, "metadata").get("name")
        if isinstance(name, str) and len(name) > CRONJOB_NAME_MAX:
            causes.append(v.invalid("metadata.name", name, f"must be no more than {CRONJOB_NAME_MAX} characters"))
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        return v.validate_object_meta_update(obj.get("metadata"), old.get("metadata")) + self._validate_cronjob(obj)
