"""StatefulSet arithmetic (Kubernetes' statefulset/stateful_set_utils): ordinals and pod identity, the pod a
replica gets (from the current or the update revision), its PersistentVolumeClaims and their owners under the
retention policy, and the ControllerRevisions that keep each template.

A revision's ``data`` is the strategic merge patch that puts its template back: ``{"spec": {"template": {...,
"$patch": "replace"}}}``, as Kubernetes stores it, so `kubectl rollout undo sts` applies it unchanged.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import orjson

from minik.api.registry import ResourceType
from minik.api.strategy import Strategy
from minik.api.timestamps import parse_time
from minik.controllers.base import Obj, is_being_deleted, owner_reference
from minik.controllers.deploymentutil import _SAFE, _semantic, fnv32a
from minik.controllers.pods import is_ready, pod_from_template

#: the pod's name, on each pod of a StatefulSet (apps.StatefulSetPodNameLabel)
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
#: the pod's ordinal (apps.PodIndexLabel)
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
#: the name of the ControllerRevision a pod was made from (apps.ControllerRevisionHashLabelKey)
REVISION_LABEL = "controller-revision-hash"
#: the hash of a ControllerRevision's data, on the revision (history.ControllerRevisionHashLabel)
REVISION_HASH_LABEL = "controller.kubernetes.io/hash"

#: PersistentVolumeClaims by path, whether or not this build's registry serves the kind (the claims are the storage
#: part's; a missing kind answers 404 and only StatefulSets with volumeClaimTemplates notice)
CLAIMS = ResourceType("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", "persistentvolumeclaim", True,
                      Strategy())


# -- names and ordinals ------------------------------------------------------------------------------------------
def pod_name(sts: Obj, ordinal: int) -> str:
    return f"{sts['metadata']['name']}-{ordinal}"


def parent_and_ordinal(pod: Obj) -> tuple[str, int]:
    """(``web``, 3) for ``web-3``; ordinal -1 when the name has no ordinal (getParentNameAndOrdinal)."""
    name = str((pod.get("metadata") or {}).get("name") or "")
    parent, _, suffix = name.rpartition("-")
    if not parent or not suffix.isdigit():
        return "", -1
    return parent, int(suffix)


def is_member(sts: Obj, pod: Obj) -> bool:
    return parent_and_ordinal(pod)[0] == sts["metadata"]["name"]


def start_ordinal(sts: Obj) -> int:
    return int(((sts.get("spec") or {}).get("ordinals") or {}).get("start") or 0)


def replicas(sts: Obj) -> int:
    value = (sts.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def in_range(sts: Obj, ordinal: int) -> bool:
    start = start_ordinal(sts)
    return start <= ordinal < start + replicas(sts)


def claim_name(template: Obj, sts: Obj, ordinal: int) -> str:
    return f"{(template.get('metadata') or {}).get('name', '')}-{sts['metadata']['name']}-{ordinal}"


# -- pod states --------------------------------------------------------------------------------------------------
def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_running_and_ready(pod: Obj) -> bool:
    return phase(pod) == "Running" and is_ready(pod)


def is_running_and_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """Running, and Ready for at least minReadySeconds."""
    if not is_running_and_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            since = parse_time(condition.get("lastTransitionTime"))
            return since is not None and since + min_ready_seconds <= now
    return False


def is_healthy(pod: Obj) -> bool:
    return is_running_and_ready(pod) and not is_being_deleted(pod)


def pod_revision(pod: Obj) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL) or "")


# -- pods --------------------------------------------------------------------------------------------------------
def identity_matches(sts: Obj, pod: Obj) -> bool:
    parent, ordinal = parent_and_ordinal(pod)
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return ordinal >= 0 and parent == sts["metadata"]["name"] and \
        pod["metadata"].get("namespace") == sts["metadata"].get("namespace") and \
        labels.get(POD_NAME_LABEL) == pod["metadata"]["name"] and labels.get(POD_INDEX_LABEL) == str(ordinal)


def identity_labels(pod_name_: str, ordinal: int) -> dict[str, str]:
    return {POD_NAME_LABEL: pod_name_, POD_INDEX_LABEL: str(ordinal)}


def claims_for(sts: Obj, ordinal: int) -> dict[str, Obj]:
    """The claims a replica uses, by the volume name that mounts each (getPersistentVolumeClaims)."""
    spec = sts.get("spec") or {}
    match_labels = (spec.get("selector") or {}).get("matchLabels") or {}
    claims: dict[str, Obj] = {}
    for template in spec.get("volumeClaimTemplates") or []:
        claim = copy.deepcopy(template)
        meta = claim.setdefault("metadata", {})
        volume = str(meta.get("name") or "")
        meta["name"] = claim_name(template, sts, ordinal)
        meta["namespace"] = sts["metadata"].get("namespace")
        if match_labels:
            meta["labels"] = {**(meta.get("labels") or {}), **match_labels}
        for field in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
            meta.pop(field, None)
        claim.pop("status", None)
        claim["apiVersion"], claim["kind"] = "v1", "PersistentVolumeClaim"
        claims[volume] = claim
    return claims


def with_storage(sts: Obj, ordinal: int, pod_spec: Obj) -> None:
    """The pod's volumes: one persistentVolumeClaim volume per template (replacing a template volume of the same
    name), then the template's other volumes (updateStorage)."""
    claims = claims_for(sts, ordinal)
    if not claims:
        return
    volumes: list[Obj] = [{"name": name, "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
                          for name, claim in claims.items()]
    volumes += [v for v in pod_spec.get("volumes") or [] if v.get("name") not in claims]
    pod_spec["volumes"] = volumes


def storage_matches(sts: Obj, pod: Obj) -> bool:
    _, ordinal = parent_and_ordinal(pod)
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    for name, claim in claims_for(sts, ordinal).items():
        source = (volumes.get(name) or {}).get("persistentVolumeClaim") or {}
        if source.get("claimName") != claim["metadata"]["name"]:
            return False
    return True


def new_pod(sts: Obj, template: Obj, ordinal: int, revision: str) -> Obj:
    """Replica ``ordinal`` made from ``template``: its stable name, hostname and subdomain, identity labels, the
    revision label, and its claims' volumes (newStatefulSetPod)."""
    name = pod_name(sts, ordinal)
    pod = pod_from_template(template, sts, name=name,
                            extra_labels={**identity_labels(name, ordinal), REVISION_LABEL: revision})
    pod["metadata"]["namespace"] = sts["metadata"].get("namespace")
    spec = pod["spec"]
    spec["hostname"] = name
    service = (sts.get("spec") or {}).get("serviceName")
    if service:
        spec["subdomain"] = service
    with_storage(sts, ordinal, spec)
    return pod


# -- claim owners under the retention policy ---------------------------------------------------------------------
def retention(sts: Obj) -> tuple[str, str]:
    policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    return str(policy.get("whenDeleted") or "Retain"), str(policy.get("whenScaled") or "Retain")


def _plain_ref(owner: Obj, api_version: str, kind: str) -> Obj:
    meta = owner["metadata"]
    return {"apiVersion": api_version, "kind": kind, "name": meta["name"], "uid": meta["uid"]}


def claim_owners(claim: Obj, sts: Obj, pod: Obj | None, ordinal: int) -> list[Obj] | None:
    """The claim's ownerReferences as the retention policy wants them, or None when they are right already
    (updateClaimOwnerRefForSetAndPod): whenDeleted Delete makes the StatefulSet an owner (the garbage collector
    deletes the claim with the set); whenScaled Delete makes a scaled-down replica's pod the owner (the claim goes
    with that pod)."""
    when_deleted, when_scaled = retention(sts)
    scaled_down = not in_range(sts, ordinal)
    want_set = when_deleted == "Delete" and not (when_scaled == "Delete" and scaled_down)
    want_pod = when_scaled == "Delete" and scaled_down
    refs = list((claim.get("metadata") or {}).get("ownerReferences") or [])
    set_uid = sts["metadata"]["uid"]
    pod_uid = (pod or {}).get("metadata", {}).get("uid")
    out = [r for r in refs if not (r.get("uid") == set_uid and not want_set) and
           not (pod_uid and r.get("uid") == pod_uid and not want_pod)]
    if want_set and not any(r.get("uid") == set_uid for r in out):
        out.append(_plain_ref(sts, "apps/v1", "StatefulSet"))
    if want_pod and pod_uid and not any(r.get("uid") == pod_uid for r in out):
        out.append(_plain_ref(pod or {}, "v1", "Pod"))
    return None if out == refs else out


def claim_is_stale(claim: Obj | None, pod_name_: str) -> bool:
    """A claim that is going away, or that a previous pod of this name owns (its garbage collection is pending): a
    new pod must not be given it (PodClaimIsStale)."""
    if claim is None:
        return False
    if is_being_deleted(claim):
        return True
    return any(r.get("kind") == "Pod" and r.get("name") == pod_name_
               for r in (claim.get("metadata") or {}).get("ownerReferences") or [])


# -- revisions ---------------------------------------------------------------------------------------------------
def revision_data(sts: Obj) -> Obj:
    """The patch that restores the StatefulSet's template (getPatch)."""
    template = copy.deepcopy((sts.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def data_template(revision: Obj) -> Obj:
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def equal_data(a: Obj, b: Obj) -> bool:
    """Two revisions hold the same template, as Kubernetes' typed comparison sees it (empty is absent)."""
    return bool(_semantic(a.get("data")) == _semantic(b.get("data")))


def revision_hash(data: Obj, collision_count: int) -> str:
    raw = orjson.dumps(_semantic(data), option=orjson.OPT_SORT_KEYS)
    if collision_count:
        raw += str(collision_count).encode()
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(fnv32a(raw)))


def new_revision(sts: Obj, number: int, collision_count: int) -> Obj:
    """A ControllerRevision of the StatefulSet's current template, numbered ``number`` (newRevision): labelled
    with the template's labels (what `kubectl rollout history` selects by) and the hash, annotated with the set's
    annotations (kubernetes.io/change-cause among them), owned by the set."""
    data = revision_data(sts)
    hash_ = revision_hash(data, collision_count)
    labels = dict((((sts.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {})
    labels[REVISION_HASH_LABEL] = hash_
    meta: Obj = {"name": f"{sts['metadata']['name']}-{hash_}", "namespace": sts["metadata"].get("namespace"),
                 "labels": labels, "ownerReferences": [owner_reference(sts)]}
    annotations = (sts.get("metadata") or {}).get("annotations")
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta, "data": data,
            "revision": number}


def revision_number(revision: Obj) -> int:
    return int(revision.get("revision") or 0)


def applied(sts: Obj, revision: Obj) -> Obj:
    """The StatefulSet as it was at ``revision``: its template put back (ApplyRevision)."""
    out = copy.deepcopy(sts)
    out.setdefault("spec", {})["template"] = data_template(revision)
    return out


def max_unavailable(sts: Obj) -> int | None:
    """rollingUpdate.maxUnavailable against the replicas (rounded up, at least 1); None when not set."""
    rolling = (((sts.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {})
    value: Any = rolling.get("maxUnavailable")
    if value is None:
        return None
    if isinstance(value, str) and value.endswith("%"):
        try:
            count = math.ceil(int(value[:-1]) * replicas(sts) / 100)
        except ValueError:
            count = 1
    else:
        try:
            count = int(value)
        except (TypeError, ValueError):
            count = 1
    return max(1, count)


def partition(sts: Obj) -> int:
    strategy = (sts.get("spec") or {}).get("updateStrategy") or {}
    return int((strategy.get("rollingUpdate") or {}).get("partition") or 0)


def strategy_type(sts: Obj) -> str:
    return str(((sts.get("spec") or {}).get("updateStrategy") or {}).get("type") or "RollingUpdate")
