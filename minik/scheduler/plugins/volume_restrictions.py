"""VolumeRestrictions (kube-scheduler's plugin of that name): a claim with the ReadWriteOncePod access mode serves
one pod at a time, so a pod whose such claim another pod already uses waits until that pod is gone. (The plugin's
other rules, for cloud disks that cannot attach twice, have no volume type here to apply to.)"""

from __future__ import annotations

from minik.api import volumes as vol
from minik.scheduler.framework import SKIP, SUCCESS, CycleState, NodeInfo, PodInfo, Status, unschedulable

RWOP_CONFLICT = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
_RWOP = "ReadWriteOncePod"


class VolumeRestrictions:
    name = "VolumeRestrictions"

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        names = set()
        for name in vol.pod_claims(pod.pod):
            claim = state.cluster.claim(pod.namespace, name)
            if claim is not None and _RWOP in ((claim.get("spec") or {}).get("accessModes") or []):
                names.add(name)
        if not names:
            return SKIP
        for node in state.nodes.all():
            for other in node.pods.values():
                if other.key == pod.key or other.namespace != pod.namespace or other.terminal:
                    continue
                if names & set(vol.pod_claims(other.pod)):
                    return unschedulable(RWOP_CONFLICT)
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS
