"""The apps/v1 group: Deployment, ReplicaSet, DaemonSet, StatefulSet."""

from __future__ import annotations

import copy
from typing import Any

from minik.api import validation as v
from minik.api.kinds.common import (
    Causes,
    Obj,
    dict_at,
    ensure_dict,
    expect_object,
    int_or_percent_value,
    set_default,
    validate_int_or_percent,
    validate_not_more_than_100_percent,
    validate_restart_always,
    validate_workload_selector,
)
from minik.api.kinds.podspec import default_pod_template
from minik.api.kinds.podvalidation import validate_pod_template
from minik.api.strategy import Strategy

__all__ = ["DeploymentStrategy", "ReplicaSetStrategy", "DaemonSetStrategy", "StatefulSetStrategy"]

DEFAULT_REVISION_HISTORY_LIMIT = 10


class _WorkloadStrategy(Strategy):
    """What every apps/v1 controller shares: status and generation, a selector that must match the template's
    labels and may never change, a template whose pods restart Always."""

    has_status = True
    tracks_generation = True
    kind_name = ""
    #: the word Kubernetes uses in "empty selector is invalid for <word>"
    selector_word = ""
    #: apps/v1 forbids changing the selector (StatefulSet reports it through its own update rule)
    immutable_selector = True

    def initial_status(self, obj: Obj) -> Obj | None:
        return {}

    def default(self, obj: Obj) -> None:
        spec = ensure_dict(obj, "spec")
        if spec is not None:
            self.default_spec(spec)
            default_pod_template(spec)

    def default_spec(self, spec: Obj) -> None:
        """Kind-specific spec defaults."""

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return causes + expect_object(spec, "spec")
        causes += v.validate_nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
        causes += v.validate_nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
        causes += validate_workload_selector(spec, "spec", self.selector_word)
        template = spec.get("template")
        causes += validate_pod_template(self.template_to_validate(spec), "spec.template")
        if isinstance(template, dict):
            causes += validate_restart_always(template, "spec.template", self.kind_name)
        return causes + self.validate_spec(spec)

    def validate_spec(self, spec: Obj) -> Causes:
        """Kind-specific spec rules."""
        return []

    def template_to_validate(self, spec: Obj) -> Any:
        """The pod template as its pods will have it (a StatefulSet's pods get a volume per claim template)."""
        return spec.get("template")

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        causes = super().validate_update(obj, old)
        if not self.immutable_selector:
            return causes
        return causes + v.validate_immutable(dict_at(obj, "spec").get("selector"),
                                             dict_at(old, "spec").get("selector"), "spec.selector")


class _ReplicatedStrategy(_WorkloadStrategy):
    def default_spec(self, spec: Obj) -> None:
        if spec.get("replicas") is None:
            spec["replicas"] = 1

    def validate(self, obj: Obj) -> Causes:
        return super().validate(obj) + v.validate_nonnegative(dict_at(obj, "spec").get("replicas"), "spec.replicas")


class DeploymentStrategy(_ReplicatedStrategy):
    kind_name = "Deployment"
    selector_word = "deployment"

    def default_spec(self, spec: Obj) -> None:
        super().default_spec(spec)
        strategy = ensure_dict(spec, "strategy")
        if strategy is not None:
            set_default(strategy, "type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = ensure_dict(strategy, "rollingUpdate")
                if rolling is not None:
                    set_default(rolling, "maxUnavailable", "25%")
                    set_default(rolling, "maxSurge", "25%")
        set_default(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
        set_default(spec, "progressDeadlineSeconds", 600)

    def validate_spec(self, spec: Obj) -> Causes:
        strategy = dict_at(spec, "strategy")
        kind = strategy.get("type")
        causes: Causes = []
        if kind == "Recreate":
            if strategy.get("rollingUpdate") is not None:
                causes.append(v.forbidden("spec.strategy.rollingUpdate",
                                          "may not be specified when strategy `type` is 'Recreate'"))
        elif kind == "RollingUpdate":
            rolling = strategy.get("rollingUpdate")
            if not isinstance(rolling, dict):
                causes.append(v.required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil"))
            else:
                at = "spec.strategy.rollingUpdate"
                unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
                causes += validate_int_or_percent(unavailable, f"{at}.maxUnavailable")
                causes += validate_int_or_percent(surge, f"{at}.maxSurge")
                if int_or_percent_value(unavailable) == 0 and int_or_percent_value(surge) == 0:
                    causes.append(v.invalid(f"{at}.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0"))
                causes += validate_not_more_than_100_percent(unavailable, f"{at}.maxUnavailable")
        else:
            causes.append(v.not_supported("spec.strategy", kind or "", ["Recreate", "RollingUpdate"]))
        deadline = spec.get("progressDeadlineSeconds")
        causes += v.validate_nonnegative(deadline, "spec.progressDeadlineSeconds")
        if v.is_int(deadline) and deadline <= (spec.get("minReadySeconds") or 0):
            causes.append(v.invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
        return causes


class ReplicaSetStrategy(_ReplicatedStrategy):
    kind_name = "ReplicaSet"
    selector_word = "deployment"  # sic: Kubernetes reuses the Deployment message

    def initial_status(self, obj: Obj) -> Obj | None:
        return {"replicas": 0}

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["status.replicas"] = str(dict_at(obj, "status").get("replicas") or 0)
        return fields


class DaemonSetStrategy(_WorkloadStrategy):
    kind_name = "DaemonSet"
    selector_word = "daemonset"

    def initial_status(self, obj: Obj) -> Obj | None:
        return {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}

    def default_spec(self, spec: Obj) -> None:
        strategy = ensure_dict(spec, "updateStrategy")
        if strategy is not None:
            set_default(strategy, "type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = ensure_dict(strategy, "rollingUpdate")
                if rolling is not None:
                    set_default(rolling, "maxUnavailable", 1)
                    if rolling.get("maxSurge") is None:
                        rolling["maxSurge"] = 0
        set_default(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)

    def validate_spec(self, spec: Obj) -> Causes:
        strategy = dict_at(spec, "updateStrategy")
        kind = strategy.get("type")
        if kind == "OnDelete":
            return []
        if kind != "RollingUpdate":
            return [v.not_supported("spec.updateStrategy", kind or "", ["RollingUpdate", "OnDelete"])]
        rolling = strategy.get("rollingUpdate")
        at = "spec.updateStrategy.rollingUpdate"
        if not isinstance(rolling, dict):
            return [v.required(at)]
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        causes = validate_int_or_percent(unavailable, f"{at}.maxUnavailable")
        causes += validate_int_or_percent(surge, f"{at}.maxSurge")
        causes += validate_not_more_than_100_percent(unavailable, f"{at}.maxUnavailable")
        causes += validate_not_more_than_100_percent(surge, f"{at}.maxSurge")
        has_unavailable, has_surge = int_or_percent_value(unavailable) != 0, int_or_percent_value(surge) != 0
        if has_unavailable and has_surge:
            causes.append(v.invalid(f"{at}.maxSurge", surge, "may not be set when maxUnavailable is non-zero"))
        elif not has_unavailable and not has_surge:
            causes.append(v.required(f"{at}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
        return causes


STATEFULSET_UPDATE_FORBIDDEN = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', "
    "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
)


class StatefulSetStrategy(_ReplicatedStrategy):
    kind_name = "StatefulSet"
    selector_word = "statefulset"
    name_rule = "label"
    immutable_selector = False

    def initial_status(self, obj: Obj) -> Obj | None:
        return {"replicas": 0, "availableReplicas": 0}

    def default_spec(self, spec: Obj) -> None:
        super().default_spec(spec)
        set_default(spec, "podManagementPolicy", "OrderedReady")
        strategy = ensure_dict(spec, "updateStrategy")
        if strategy is not None:
            if strategy.get("type") in (None, ""):
                strategy["type"] = "RollingUpdate"
                ensure_dict(strategy, "rollingUpdate")
            rolling = strategy.get("rollingUpdate")
            if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict) and rolling.get("partition") is None:
                rolling["partition"] = 0
        policy = ensure_dict(spec, "persistentVolumeClaimRetentionPolicy")
        if policy is not None:
            set_default(policy, "whenDeleted", "Retain")
            set_default(policy, "whenScaled", "Retain")
        set_default(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)

    def validate_spec(self, spec: Obj) -> Causes:
        causes: Causes = []
        policy = spec.get("podManagementPolicy")
        if not policy:
            causes.append(v.required("spec.podManagementPolicy"))
        elif policy not in ("OrderedReady", "Parallel"):
            causes.append(v.invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
        strategy = dict_at(spec, "updateStrategy")
        kind = strategy.get("type")
        if not kind:
            causes.append(v.required("spec.updateStrategy"))
        elif kind == "OnDelete":
            if strategy.get("rollingUpdate") is not None:
                causes.append(v.invalid("spec.updateStrategy.rollingUpdate", strategy["rollingUpdate"],
                                        "only allowed for updateStrategy 'RollingUpdate'"))
        elif kind == "RollingUpdate":
            rolling = dict_at(strategy, "rollingUpdate")
            causes += v.validate_nonnegative(rolling.get("partition"), "spec.updateStrategy.rollingUpdate.partition")
        else:
            causes.append(v.invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'"))
        retention = dict_at(spec, "persistentVolumeClaimRetentionPolicy")
        for field in ("whenDeleted", "whenScaled"):
            causes += v.validate_enum(retention.get(field), f"spec.persistentVolumeClaimRetentionPolicy.{field}",
                                      ("Retain", "Delete"), required_=False)
        return causes

    def template_to_validate(self, spec: Obj) -> Any:
        """The template with a persistentVolumeClaim volume for each volumeClaimTemplate, as the controller gives
        its pods: mounts may name the claim templates (Kubernetes validates the union of the two)."""
        template = spec.get("template")
        claims = [c for c in spec.get("volumeClaimTemplates") or [] if isinstance(c, dict)]
        if not claims or not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
            return template
        pod_spec = template["spec"]
        volumes = pod_spec.get("volumes") if isinstance(pod_spec.get("volumes"), list) else []
        named = {vol.get("name") for vol in volumes if isinstance(vol, dict)}
        added = [{"name": name, "persistentVolumeClaim": {"claimName": name}}
                 for name in (dict_at(c, "metadata").get("name") for c in claims) if name and name not in named]
        return {**template, "spec": {**pod_spec, "volumes": [*volumes, *added]}} if added else template

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        causes = super().validate_update(obj, old)
        spec, old_spec = copy.deepcopy(dict_at(obj, "spec")), dict_at(old, "spec")
        for key in ("replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
                    "minReadySeconds"):
            spec.pop(key, None)
        rest = {k: val for k, val in old_spec.items() if k not in (
            "replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
            "minReadySeconds")}
        if spec != rest:
            causes.append(v.forbidden("spec", STATEFULSET_UPDATE_FORBIDDEN))
        return causes
