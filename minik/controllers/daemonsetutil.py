"""DaemonSet arithmetic (Kubernetes' daemon/util): which nodes should run a daemon pod, the pod a node gets (its
node affinity pinned to that node, the tolerations Kubernetes adds to daemon pods), the node a pod targets, and
the revision hash that tells updated pods from old ones."""

from __future__ import annotations

import copy
import math
from typing import Any

from minik.api.placement import (
    TAINT_DISK_PRESSURE,
    TAINT_MEMORY_PRESSURE,
    TAINT_NETWORK_UNAVAILABLE,
    TAINT_NOT_READY,
    TAINT_PID_PRESSURE,
    TAINT_UNREACHABLE,
    TAINT_UNSCHEDULABLE,
    required_node_affinity_matches,
    untolerated_taint,
)
from minik.controllers.base import Obj
from minik.controllers.deploymentutil import template_hash

#: the label that carries the hash of the template a daemon pod was made from (apps.ControllerRevisionHashLabelKey)
REVISION_HASH_LABEL = "controller-revision-hash"


def _toleration(key: str, effect: str) -> Obj:
    return {"key": key, "operator": "Exists", "effect": effect}


def daemon_tolerations(pod_spec: Obj) -> list[Obj]:
    """The pod's tolerations plus the ones Kubernetes adds to every daemon pod, so that a daemon keeps running on
    (and is placed on) nodes that are not ready, unreachable, under pressure or cordoned."""
    added = [_toleration(TAINT_NOT_READY, "NoExecute"), _toleration(TAINT_UNREACHABLE, "NoExecute"),
             _toleration(TAINT_DISK_PRESSURE, "NoSchedule"), _toleration(TAINT_MEMORY_PRESSURE, "NoSchedule"),
             _toleration(TAINT_PID_PRESSURE, "NoSchedule"), _toleration(TAINT_UNSCHEDULABLE, "NoSchedule")]
    if pod_spec.get("hostNetwork"):
        added.append(_toleration(TAINT_NETWORK_UNAVAILABLE, "NoSchedule"))
    tolerations = [dict(t) for t in pod_spec.get("tolerations") or []]
    for toleration in added:
        # AddOrUpdateTolerationInPodSpec: a toleration with the same key, operator and effect is replaced
        tolerations = [t for t in tolerations if not (t.get("key") == toleration["key"] and
                                                      (t.get("operator") or "Equal") == "Exists" and
                                                      t.get("effect") == toleration["effect"])]
        tolerations.append(toleration)
    return tolerations


def pin_to_node(affinity: Obj | None, node_name: str) -> Obj:
    """The pod's affinity with its required node affinity replaced by one term selecting ``node_name`` by
    metadata.name (ReplaceDaemonSetPodNodeNameNodeAffinity); preferred terms and pod (anti-)affinity stay."""
    out = copy.deepcopy(affinity or {})
    node_affinity = out.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
    return out


def target_node(pod: Obj) -> str | None:
    """The node a daemon pod is for: spec.nodeName once bound, else the node its node affinity pins
    (GetTargetNodeName)."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and \
                    len(field.get("values") or []) == 1:
                return str(field["values"][0])
    return None


def should_run(ds: Obj, node: Obj) -> tuple[bool, bool]:
    """(should run, should continue running) a daemon pod of ``ds`` on ``node`` (NodeShouldRunDaemonPod): the
    template's nodeName, nodeSelector and required node affinity must fit; an untolerated NoSchedule or NoExecute
    taint keeps a new pod off, and only an untolerated NoExecute taint removes a running one."""
    template_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    name = (node.get("metadata") or {}).get("name")
    if template_spec.get("nodeName") and template_spec["nodeName"] != name:
        return False, False
    if not required_node_affinity_matches(template_spec, node):
        return False, False
    taints = (node.get("spec") or {}).get("taints") or []
    tolerations = daemon_tolerations(template_spec)
    if untolerated_taint(taints, tolerations, lambda t: t.get("effect") in ("NoSchedule", "NoExecute")) is None:
        return True, True
    return False, untolerated_taint(taints, tolerations, lambda t: t.get("effect") == "NoExecute") is None


def revision_hash(ds: Obj) -> str:
    """The hash of the DaemonSet's template (with its collision count), as its ControllerRevision would be named."""
    return template_hash((ds.get("spec") or {}).get("template") or {}, (ds.get("status") or {}).get("collisionCount"))


def is_updated(pod: Obj, hash_: str) -> bool:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_HASH_LABEL) == hash_


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """An int-or-percent (maxUnavailable, maxSurge) against ``total`` (GetScaledValueFromIntOrPercent)."""
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = int(value[:-1])
        except ValueError:
            return 0
        exact = percent * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return 0
    return int(value or 0)


def surge_and_unavailable(ds: Obj, desired: int) -> tuple[int, int]:
    """maxSurge and maxUnavailable resolved against the number of nodes that should run the daemon; at least one
    pod may always be unavailable when neither allows anything."""
    strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    surge = scaled_value(rolling.get("maxSurge", 0), desired, True)
    unavailable = scaled_value(rolling.get("maxUnavailable", 1), desired, True)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable
