"""VolumeBinding (kube-scheduler's plugin of that name): a pod goes only where its claims' volumes can be reached.

- PreFilter: every claim the pod uses must exist and not be being deleted; an unbound claim of an Immediate class
  rules out every node ("pod has unbound immediate PersistentVolumeClaims"): the PV binder binds it first.
- Filter: a bound claim's volume must accept the node (its nodeAffinity: "node(s) had volume node affinity
  conflict"); an unbound claim of a WaitForFirstConsumer class needs, on that node, a free volume that matches it
  or a class with a provisioner ("node(s) didn't find available persistent volumes to bind"). A claim already
  annotated with a selected node fits only that node.
- PreBind: each unbound claim is annotated volume.kubernetes.io/selected-node with the node chosen, so the binder
  binds it to a volume there or the provisioner makes one there; the pod is bound once every claim is Bound (or
  goes back to the queue after ``BIND_TIMEOUT_SECONDS``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from minik.api import volumes as vol
from minik.scheduler.framework import (
    SKIP,
    SUCCESS,
    Binding,
    ClusterView,
    CycleState,
    NodeInfo,
    PodInfo,
    Status,
    unresolvable,
    unschedulable,
)

Obj = dict[str, Any]

UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NODE_CONFLICT = "node(s) had volume node affinity conflict"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
#: kube-scheduler's bindTimeoutSeconds: how long a pod waits for its claims to be bound before it is retried
BIND_TIMEOUT_SECONDS = 600.0


@dataclass
class _Claims:
    bound: list[Obj] = field(default_factory=list)
    """The volumes of the pod's bound claims."""
    unbound: list[Obj] = field(default_factory=list)
    """The pod's unbound claims (all of WaitForFirstConsumer classes)."""


def _claims(pod: PodInfo) -> list[str]:
    return vol.pod_claims(pod.pod)


def _node_view(node: NodeInfo) -> Obj:
    return {"metadata": {"name": node.name, "labels": dict(node.labels)}}


class VolumeBinding:
    name = "VolumeBinding"

    def __init__(self, bind_timeout_seconds: float = BIND_TIMEOUT_SECONDS) -> None:
        self.bind_timeout_seconds = bind_timeout_seconds

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        names = _claims(pod)
        if not names:
            return SKIP
        cluster = state.cluster
        found = _Claims()
        for name in names:
            claim = cluster.claim(pod.namespace, name)
            if claim is None:
                return unresolvable(f'persistentvolumeclaim "{name}" not found')
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                return unresolvable(f'persistentvolumeclaim "{name}" is being deleted')
            volume_name = (claim.get("spec") or {}).get("volumeName")
            if volume_name:
                pv = cluster.volume(volume_name)
                if pv is None:
                    return unresolvable(f'pvc {pod.namespace}/{name} is bound to non-existent pv "{volume_name}"')
                found.bound.append(pv)
                continue
            class_name = vol.claim_class(claim)
            storage_class = cluster.storage_class(class_name) if class_name else None
            if vol.binding_mode(storage_class) != vol.WAIT_FOR_FIRST_CONSUMER:
                return unresolvable(UNBOUND_IMMEDIATE)
            found.unbound.append(claim)
        state[self.name] = found
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        found: _Claims = state[self.name]
        view = _node_view(node)
        for pv in found.bound:
            if not vol.volume_fits_node(pv, view):
                return unresolvable(NODE_CONFLICT)
        for claim in found.unbound:
            if not self._can_bind(state.cluster, claim, view):
                return unschedulable(BIND_CONFLICT)
        return SUCCESS

    @staticmethod
    def _can_bind(cluster: ClusterView, claim: Obj, node: Obj) -> bool:
        selected = ((claim.get("metadata") or {}).get("annotations") or {}).get(vol.SELECTED_NODE)
        if selected and selected != node["metadata"]["name"]:
            return False
        class_name = vol.claim_class(claim)
        provisioner = (cluster.storage_class(class_name) or {}).get("provisioner")
        if provisioner and provisioner != "kubernetes.io/no-provisioner":
            return True  # a free volume here would do, and so would a new one
        for pv in cluster.candidate_volumes(vol.claim_key(claim), class_name):
            if (pv.get("status") or {}).get("phase") in ("Released", "Failed"):
                continue
            if vol.volume_matches(pv, claim) and vol.volume_fits_node(pv, node):
                return True
        return False

    # -- binding ----------------------------------------------------------------------------------------------
    def needs_pre_bind(self, cluster: ClusterView, pod: PodInfo) -> bool:
        for name in _claims(pod):
            claim = cluster.claim(pod.namespace, name)
            if claim is not None and (claim.get("status") or {}).get("phase") != "Bound":
                return True
        return False

    async def pre_bind(self, binding: Binding, pod: PodInfo, node: str) -> Status:
        cluster = binding.cluster
        names = _claims(pod)
        for name in names:
            claim = cluster.claim(pod.namespace, name)
            if claim is None or (claim.get("spec") or {}).get("volumeName"):
                continue
            annotations = (claim.get("metadata") or {}).get("annotations") or {}
            if annotations.get(vol.SELECTED_NODE) != node:
                await binding.patch_claim(pod.namespace, name, {"metadata": {"annotations": {
                    vol.SELECTED_NODE: node}}})

        def all_bound() -> bool:
            return all(((cluster.claim(pod.namespace, n) or {}).get("status") or {}).get("phase") == "Bound"
                       for n in names)

        keys = [f"{pod.namespace}/{n}" for n in names]
        if await binding.wait_until(all_bound, keys, self.bind_timeout_seconds):
            return SUCCESS
        return unschedulable("binding volumes: timed out waiting for the condition")
