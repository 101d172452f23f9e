"""Objects as the API would hand them to a controller's cache, for the sync tests."""

from __future__ import annotations

import itertools
from typing import Any

from minik.api.timestamps import rfc3339

Obj = dict[str, Any]
_uids = itertools.count(1000)
T0 = 1_700_000_000.0


def uid() -> str:
    return f"u-{next(_uids)}"


def meta(name: str, namespace: str | None = "default", **extra: Any) -> Obj:
    m: Obj = {"name": name, "uid": uid(), "resourceVersion": "1", "creationTimestamp": rfc3339(T0), **extra}
    if namespace:
        m["namespace"] = namespace
    return m


def ref(owner: Obj, block: bool = True) -> Obj:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": block}


def node(name: str, *, labels: dict[str, str] | None = None, taints: list[Obj] | None = None,
         ready: str = "True", heartbeat: float = T0) -> Obj:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": meta(name, None, labels={"kubernetes.io/hostname": name, **(labels or {})}),
            "spec": {"taints": taints} if taints else {},
            "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady",
                                       "lastHeartbeatTime": rfc3339(heartbeat),
                                       "lastTransitionTime": rfc3339(T0)}]}}


def pod(name: str, *, labels: dict[str, str] | None = None, owner: Obj | None = None, node_name: str | None = None,
        phase: str | None = None, ready: bool = False, annotations: dict[str, str] | None = None,
        finalizers: list[str] | None = None, deleting: bool = False, restarts: int = 0,
        tolerations: list[Obj] | None = None, created: float = T0, affinity: Obj | None = None) -> Obj:
    m = meta(name, labels=labels or {}, creationTimestamp=rfc3339(created))
    if owner is not None:
        m["ownerReferences"] = [ref(owner)]
    if annotations:
        m["annotations"] = annotations
    if finalizers:
        m["finalizers"] = finalizers
    if deleting:
        m["deletionTimestamp"] = rfc3339(T0)
        m["deletionGracePeriodSeconds"] = 30
    spec: Obj = {"containers": [{"name": "app", "image": "busybox:1.36"}]}
    if node_name:
        spec["nodeName"] = node_name
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity:
        spec["affinity"] = affinity
    status: Obj = {}
    if phase:
        status["phase"] = phase
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False",
                                 "lastTransitionTime": rfc3339(T0)}]
        status["containerStatuses"] = [{"name": "app", "restartCount": restarts, "ready": ready}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": spec, "status": status}


def template(labels: dict[str, str], **spec: Any) -> Obj:
    return {"metadata": {"labels": labels},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}], **spec}}


def daemonset(name: str, *, strategy: Obj | None = None, **pod_spec: Any) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta(name, generation=1),
            "spec": {"selector": {"matchLabels": labels}, "template": template(labels, **pod_spec),
                     "updateStrategy": strategy or {"type": "RollingUpdate",
                                                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}},
            "status": {}}


def job(name: str, **spec: Any) -> Obj:
    m = meta(name, generation=1)
    labels = {"batch.kubernetes.io/controller-uid": m["uid"], "batch.kubernetes.io/job-name": name}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": m,
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
                     "suspend": False, "podReplacementPolicy": "TerminatingOrFailed",
                     "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": m["uid"]}},
                     "template": template(labels, restartPolicy="Never"), **spec},
            "status": {}}
