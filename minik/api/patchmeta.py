"""Strategic-merge-patch metadata of the built-in kinds: which lists merge by which key.

Kubernetes keeps this in struct tags (patchStrategy/patchMergeKey); here it is one table of types. A field not in
the table is a map (merged key by key) or, if it is a list, replaced whole.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """How a field merges: ``merge_key`` for lists of objects merged by that key, ``primitive_merge`` for lists of
    scalars merged as sets, ``retain_keys`` for maps that honour ``$retainKeys``; ``type`` names the element's
    (or the map's) own type in TYPES."""

    type: str | None = None
    merge_key: str | None = None
    primitive_merge: bool = False
    retain_keys: bool = False


def _list(key: str, type_: str | None = None) -> Field:
    return Field(type_, merge_key=key)


_CONDITIONS = _list("type")

TYPES: dict[str, dict[str, Field]] = {
    "ObjectMeta": {"finalizers": Field(primitive_merge=True), "ownerReferences": _list("uid")},
    "PodTemplateSpec": {"metadata": Field("ObjectMeta"), "spec": Field("PodSpec")},
    "PodSpec": {
        "containers": _list("name", "Container"), "initContainers": _list("name", "Container"),
        "ephemeralContainers": _list("name", "Container"), "volumes": Field("Volume", merge_key="name"),
        "imagePullSecrets": _list("name"), "hostAliases": _list("ip"),
        "topologySpreadConstraints": _list("topologyKey"), "readinessGates": _list("conditionType"),
        "schedulingGates": _list("name"), "resourceClaims": _list("name"),
    },
    "Volume": {},
    "Container": {"ports": _list("containerPort"), "env": _list("name"), "volumeMounts": _list("mountPath"),
                  "volumeDevices": _list("devicePath"), "resizePolicy": _list("resourceName")},
    "PodStatus": {"conditions": _CONDITIONS, "podIPs": _list("ip"), "hostIPs": _list("ip"),
                  "resourceClaimStatuses": _list("name")},
    "NodeSpec": {"podCIDRs": Field(primitive_merge=True)},
    "NodeStatus": {"conditions": _CONDITIONS, "addresses": _list("type")},
    "ServiceSpec": {"ports": _list("port")},
    "ServiceStatus": {"conditions": _CONDITIONS},
    "WorkloadSpec": {"template": Field("PodTemplateSpec"), "strategy": Field(retain_keys=True),
                     "updateStrategy": Field(retain_keys=True)},
    "WorkloadStatus": {"conditions": _CONDITIONS},
    "JobSpec": {"template": Field("PodTemplateSpec")},
    "CronJobSpec": {"jobTemplate": Field("JobTemplateSpec")},
    "JobTemplateSpec": {"metadata": Field("ObjectMeta"), "spec": Field("JobSpec")},
    "NamespaceStatus": {"conditions": _CONDITIONS},
}

#: the top-level fields of each kind
KINDS: dict[str, dict[str, Field]] = {
    "Pod": {"spec": Field("PodSpec"), "status": Field("PodStatus")},
    "Node": {"spec": Field("NodeSpec"), "status": Field("NodeStatus")},
    "Service": {"spec": Field("ServiceSpec"), "status": Field("ServiceStatus")},
    "Namespace": {"status": Field("NamespaceStatus")},
    "ReplicationController": {"spec": Field("WorkloadSpec"), "status": Field("WorkloadStatus")},
    "ReplicaSet": {"spec": Field("WorkloadSpec"), "status": Field("WorkloadStatus")},
    "Deployment": {"spec": Field("WorkloadSpec"), "status": Field("WorkloadStatus")},
    "DaemonSet": {"spec": Field("WorkloadSpec"), "status": Field("WorkloadStatus")},
    "StatefulSet": {"spec": Field("WorkloadSpec"), "status": Field("WorkloadStatus")},
    "Job": {"spec": Field("JobSpec"), "status": Field("WorkloadStatus")},
    "CronJob": {"spec": Field("CronJobSpec")},
}


def kind_fields(kind: str) -> dict[str, Field]:
    """The top-level fields of ``kind``, with metadata for every kind."""
    return {"metadata": Field("ObjectMeta"), **KINDS.get(kind, {})}


def fields_of(type_name: str | None) -> dict[str, Field]:
    return TYPES.get(type_name or "", {})
