"""Pods: defaults, create and update validation, field selectors, graceful deletion, binding."""

from __future__ import annotations

import copy
from typing import Any

from minik.api import validation as v
from minik.api.kinds import ephemeral
from minik.api.kinds.common import Causes, Obj, dict_at, dicts_at, list_at
from minik.api.kinds.podspec import default_container, default_pod, pod_qos_class
from minik.api.kinds.podvalidation import MAX_INT32, validate_pod_spec, validate_tolerations
from minik.api.strategy import Strategy

POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _restore(target: Obj, source: Obj, key: str) -> None:
    """Make ``target[key]`` what it is in ``source`` (absent when absent)."""
    if key in source:
        target[key] = copy.deepcopy(source[key])
    else:
        target.pop(key, None)


def _only_added_tolerations(new: list[Any], old: list[Any], path: str) -> Causes:
    for toleration in old:
        if not isinstance(toleration, dict):
            continue
        base = {k: val for k, val in toleration.items() if k != "tolerationSeconds"}
        if not any(isinstance(t, dict) and {k: val for k, val in t.items() if k != "tolerationSeconds"} == base
                   for t in new):
            return [v.forbidden(path, "existing toleration can not be modified except its tolerationSeconds")]
    return []


def validate_pod_update(pod: Obj, old: Obj) -> Causes:
    """Kubernetes' ValidatePodUpdate: a pod's spec is immutable but for images, activeDeadlineSeconds (shorter
    only), added tolerations, terminationGracePeriodSeconds and removed scheduling gates."""
    spec, old_spec = dict_at(pod, "spec"), dict_at(old, "spec")
    for list_name in ("containers", "initContainers"):
        if len(list_at(spec, list_name)) != len(list_at(old_spec, list_name)):
            return [v.forbidden(v.child("spec", list_name), "pod updates may not add or remove containers")]
    causes = _only_added_tolerations(list_at(spec, "tolerations"), list_at(old_spec, "tolerations"),
                                     "spec.tolerations")
    deadline, old_deadline = spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if deadline is not None:
        if not v.is_int(deadline) or not 0 <= deadline <= MAX_INT32:
            return causes + [v.invalid("spec.activeDeadlineSeconds", deadline, v.inclusive_range_error(0, MAX_INT32))]
        if v.is_int(old_deadline) and old_deadline < deadline:
            return causes + [v.invalid("spec.activeDeadlineSeconds", deadline,
                                       "must be less than or equal to previous value")]
    elif old_deadline is not None:
        causes.append(v.invalid("spec.activeDeadlineSeconds", None, "must not update from a positive integer to "
                                                                    "nil value"))
    old_gates = [g.get("name") for g in dicts_at(old_spec, "schedulingGates")]
    for i, gate in enumerate(dicts_at(spec, "schedulingGates")):
        if gate.get("name") not in old_gates:
            causes.append(v.forbidden(v.index("spec.schedulingGates", i),
                                      f"only deletion is allowed, but found new scheduling gate '{gate.get('name')}'"))
    munged = copy.deepcopy(spec)
    for list_name in ("containers", "initContainers"):
        for container, old_container in zip(list_at(munged, list_name), list_at(old_spec, list_name)):
            if isinstance(container, dict) and isinstance(old_container, dict):
                _restore(container, old_container, "image")
    for key in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates"):
        _restore(munged, old_spec, key)
    if munged != old_spec:
        causes.append(v.forbidden("spec", POD_UPDATE_FORBIDDEN))
    return causes


#: the conditions the system owns; any other condition type must be a qualified name (Kubernetes'
#: validatePodConditions)
SYSTEM_POD_CONDITIONS = frozenset(("PodScheduled", "Ready", "Initialized"))


def _validate_ips(status: Obj, field: str) -> Causes:
    entries = status.get(field)
    if entries is None:
        return []
    if not isinstance(entries, list):
        return [v.type_invalid(f"status.{field}", entries, "must be a list")]
    causes: Causes = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        path = v.index(f"status.{field}", i)
        ip = entry.get("ip") if isinstance(entry, dict) else None
        if not isinstance(ip, str):
            causes.append(v.type_invalid(v.child(path, "ip"), ip, "must be a string"))
            continue
        causes += [v.invalid(path, ip, message) for message in v.is_valid_ip(ip)]
        if ip in seen:
            causes.append(v.duplicate(path, entry))
        seen.add(ip)
    return causes


def validate_pod_status(status: Any) -> Causes:
    """Kubernetes' checks of a pod's status on a status write: condition types, the nominated node's name, and the
    pod's and host's IPs."""
    if status is None:
        return []
    if not isinstance(status, dict):
        return [v.type_invalid("status", status, "must be an object")]
    causes: Causes = []
    conditions = status.get("conditions")
    if conditions is not None and not isinstance(conditions, list):
        causes.append(v.type_invalid("status.conditions", conditions, "must be a list"))
    for i, condition in enumerate(conditions if isinstance(conditions, list) else []):
        if not isinstance(condition, dict):
            causes.append(v.type_invalid(v.index("status.conditions", i), condition, "must be an object"))
            continue
        kind = condition.get("type")
        if kind in SYSTEM_POD_CONDITIONS:
            continue
        path = v.child(v.index("status.conditions", i), "Type")
        if not isinstance(kind, str):
            causes.append(v.type_invalid(path, kind, "must be a string"))
        else:
            causes += [v.invalid(path, kind, message) for message in v.is_qualified_name(kind)]
    nominated = status.get("nominatedNodeName")
    if nominated:
        if not isinstance(nominated, str):
            causes.append(v.type_invalid("status.nominatedNodeName", nominated, "must be a string"))
        else:
            causes += [v.invalid("status.nominatedNodeName", nominated, message)
                       for message in v.is_dns1123_subdomain(nominated)]
    return causes + _validate_ips(status, "podIPs") + _validate_ips(status, "hostIPs")


def assign_pod(pod: Obj, node_name: str, now: str) -> None:
    """What a Binding does to its pod: set spec.nodeName (once) and the PodScheduled condition. ValueError with
    Kubernetes' message when the pod is already assigned or being deleted (the API answers 409 Conflict)."""
    meta, spec = dict_at(pod, "metadata"), pod.setdefault("spec", {})
    if meta.get("deletionTimestamp"):
        raise ValueError(f"pod {meta.get('name')} is being deleted, cannot be assigned to a host")
    if spec.get("nodeName"):
        raise ValueError(f'pod {meta.get("name")} is already assigned to node "{spec["nodeName"]}"')
    spec["nodeName"] = node_name
    status = pod.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                       "lastTransitionTime": now})
    status["conditions"] = conditions


class PodStrategy(Strategy):
    has_status = True
    return_deleted_object = True

    def initial_status(self, obj: Obj) -> Obj | None:
        return {"phase": "Pending", "qosClass": pod_qos_class(dict_at(obj, "spec"))}

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        super().prepare_for_update(obj, old)
        # the Priority admission plugin keeps the priority it resolved on create
        spec, old_spec = obj.get("spec"), dict_at(old, "spec")
        if isinstance(spec, dict):
            for key in ("priority", "preemptionPolicy"):
                if spec.get(key) is None and key in old_spec:
                    spec[key] = old_spec[key]

    def default(self, obj: Obj) -> None:
        default_pod(obj)
        # defaulted as Kubernetes' SetDefaults_Pod does, so that a create setting them hears only that it may not
        for container in dicts_at(dict_at(obj, "spec"), "ephemeralContainers"):
            default_container(container)

    def _validate_pod(self, obj: Obj) -> Causes:
        causes = super().validate(obj) + validate_pod_spec(obj.get("spec"), "spec", in_pod=True)
        spec = obj.get("spec")
        if isinstance(spec, dict) and spec.get("ephemeralContainers"):
            causes += ephemeral.validate_ephemeral_containers(spec)
        return causes

    def prepare_for_subresource_update(self, subresource: str, obj: Obj, old: Obj) -> None:
        if subresource == ephemeral.SUBRESOURCE:
            ephemeral.prepare_update(obj, old)
        else:
            super().prepare_for_subresource_update(subresource, obj, old)

    def validate_subresource_update(self, subresource: str, obj: Obj, old: Obj) -> Causes:
        if subresource != ephemeral.SUBRESOURCE:
            return super().validate_subresource_update(subresource, obj, old)
        return v.validate_object_meta_update(obj.get("metadata"), old.get("metadata")) + self._validate_pod(obj) + \
            ephemeral.validate_update(obj, old)

    def validate(self, obj: Obj) -> Causes:
        causes = self._validate_pod(obj)
        spec = dict_at(obj, "spec")
        if spec.get("ephemeralContainers"):
            causes.append(v.forbidden("spec.ephemeralContainers", "cannot be set on create"))
        if spec.get("nodeName") and spec.get("schedulingGates"):
            causes.append(v.forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        return v.validate_object_meta_update(obj.get("metadata"), old.get("metadata")) + \
            self._validate_pod(obj) + validate_pod_update(obj, old)

    def validate_status_update(self, obj: Obj, old: Obj) -> Causes:
        """Kubernetes' ValidatePodStatusUpdate: the spec and the metadata that could fail validation are the old
        pod's (prepare_for_status_update copies them), so only what may never change and the status itself are
        checked; the pod's spec is not validated again on every status write."""
        return v.validate_object_meta_update(obj.get("metadata"), old.get("metadata")) + \
            validate_pod_status(obj.get("status"))

    trigger_field = "spec.nodeName"

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        spec, status = dict_at(obj, "spec"), dict_at(obj, "status")
        pod_ips = dicts_at(status, "podIPs")
        fields.update({
            "spec.nodeName": str(spec.get("nodeName") or ""),
            "spec.restartPolicy": str(spec.get("restartPolicy") or ""),
            "spec.schedulerName": str(spec.get("schedulerName") or ""),
            "spec.serviceAccountName": str(spec.get("serviceAccountName") or ""),
            "spec.hostNetwork": "true" if spec.get("hostNetwork") is True else "false",
            "status.phase": str(status.get("phase") or ""),
            "status.podIP": str((pod_ips[0].get("ip") if pod_ips else status.get("podIP")) or ""),
            "status.nominatedNodeName": str(status.get("nominatedNodeName") or ""),
        })
        return fields

    def deletion_grace_period(self, obj: Obj, requested: int | None) -> int | None:
        """Kubernetes' CheckGracefulDelete: the requested period, else the pod's terminationGracePeriodSeconds;
        0 for a pod that never reached a node or has finished; a negative period counts as 1."""
        spec, status = dict_at(obj, "spec"), dict_at(obj, "status")
        period = requested if requested is not None else spec.get("terminationGracePeriodSeconds")
        try:
            seconds = int(period) if period is not None else 0
        except (TypeError, ValueError):
            seconds = 0
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            return 0
        return 1 if seconds < 0 else seconds


__all__ = ["PodStrategy", "assign_pod", "validate_pod_status", "validate_pod_update", "validate_tolerations", "POD_UPDATE_FORBIDDEN"]
