"""What the scheduler knows of the cluster besides nodes and pods (kube-scheduler's listers): namespace labels,
for inter-pod affinity's namespaceSelector; claims, volumes and storage classes, for VolumeBinding and
VolumeRestrictions; and Services and the pods' controllers (ReplicationControllers,
ReplicaSets, StatefulSets), whose selectors say which pods belong together, so that replicas spread across
nodes and zones even when they ask for nothing (kube-scheduler's default topology spread constraints).

Fed from informers by the scheduler, or from one list of each kind by ``minik explain``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minik.api.selectors import EQUALS, LabelSelector, Requirement, selector_from_dict
from minik.api.volumes import claimed_by, volume_class
from minik.scheduler.infos import PodInfo

Obj = dict[str, Any]

#: the kinds ClusterObjects follows: resource plural -> (kind, group)
RESOURCES = {"namespaces": ("Namespace", ""), "services": ("Service", ""),
             "replicationcontrollers": ("ReplicationController", ""), "replicasets": ("ReplicaSet", "apps"),
             "statefulsets": ("StatefulSet", "apps"),
             "persistentvolumeclaims": ("PersistentVolumeClaim", ""), "persistentvolumes": ("PersistentVolume", ""),
             "storageclasses": ("StorageClass", "storage.k8s.io")}
#: the storage kinds among RESOURCES: a change to one may make a pod waiting on its volumes fit
VOLUME_RESOURCES = frozenset({"persistentvolumeclaims", "persistentvolumes", "storageclasses"})
_CONTROLLER_KINDS = {("ReplicationController", ""), ("ReplicaSet", "apps"), ("StatefulSet", "apps")}


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


class ClusterObjects:
    def __init__(self) -> None:
        self._namespaces: dict[str, Mapping[str, str]] = {}
        self._services: dict[str, dict[str, Mapping[str, str]]] = {}
        self._controllers: dict[tuple[str, str, str], list[Requirement]] = {}
        self._storage: dict[str, dict[str, Obj]] = {resource: {} for resource in VOLUME_RESOURCES}
        #: volumes by the claim they name (NAMESPACE/NAME), or by class when they name none: a claim's candidates
        self._claimed: dict[str, dict[str, Obj]] = {}
        self._free: dict[str, dict[str, Obj]] = {}

    # -- feeding ---------------------------------------------------------------------------------------------
    def set(self, resource: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        name, namespace = meta.get("name") or "", meta.get("namespace") or ""
        spec = obj.get("spec") or {}
        if resource in VOLUME_RESOURCES:
            key = f"{namespace}/{name}" if namespace else name
            if resource == "persistentvolumes":
                self._unindex_volume(self._storage[resource].get(key))
                self._index_volume(obj)
            self._storage[resource][key] = obj
        elif resource == "namespaces":
            self._namespaces[name] = meta.get("labels") or {}
        elif resource == "services":
            selector = spec.get("selector")
            services = self._services.setdefault(namespace, {})
            if selector is None:  # a Service without a selector selects no pods
                services.pop(name, None)
            else:
                services[name] = selector
        elif resource in RESOURCES:
            kind = RESOURCES[resource][0]
            selector = spec.get("selector")
            if kind == "ReplicationController":
                requirements = [Requirement(k, EQUALS, (str(v),)) for k, v in (selector or {}).items()]
            else:
                try:
                    requirements = list(selector_from_dict(selector).requirements) if selector is not None else []
                except ValueError:
                    requirements = []
            self._controllers[(kind, namespace, name)] = requirements

    def delete(self, resource: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        name, namespace = meta.get("name") or "", meta.get("namespace") or ""
        if resource in VOLUME_RESOURCES:
            gone = self._storage[resource].pop(f"{namespace}/{name}" if namespace else name, None)
            if resource == "persistentvolumes":
                self._unindex_volume(gone)
        elif resource == "namespaces":
            self._namespaces.pop(name, None)
        elif resource == "services":
            self._services.get(namespace, {}).pop(name, None)
        elif resource in RESOURCES:
            self._controllers.pop((RESOURCES[resource][0], namespace, name), None)

    # -- reading (ClusterView) -------------------------------------------------------------------------------
    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self._namespaces.get(namespace)

    def claim(self, namespace: str, name: str) -> Obj | None:
        return self._storage["persistentvolumeclaims"].get(f"{namespace}/{name}")

    def volume(self, name: str) -> Obj | None:
        return self._storage["persistentvolumes"].get(name)

    def candidate_volumes(self, claim_key: str, class_name: str) -> list[Obj]:
        return [*self._claimed.get(claim_key, {}).values(), *self._free.get(class_name, {}).values()]

    @staticmethod
    def _volume_place(pv: Obj) -> tuple[bool, str]:
        claimed = claimed_by(pv)
        return (True, claimed) if claimed else (False, volume_class(pv))

    def _index_volume(self, pv: Obj) -> None:
        claimed, key = self._volume_place(pv)
        (self._claimed if claimed else self._free).setdefault(key, {})[pv["metadata"]["name"]] = pv

    def _unindex_volume(self, pv: Obj | None) -> None:
        if pv is None:
            return
        claimed, key = self._volume_place(pv)
        table = self._claimed if claimed else self._free
        entries = table.get(key)
        if entries is not None:
            entries.pop(pv["metadata"]["name"], None)
            if not entries:
                del table[key]

    def storage_class(self, name: str) -> Obj | None:
        return self._storage["storageclasses"].get(name)

    def default_spread_selector(self, pod: PodInfo) -> LabelSelector | None:
        """The selectors of the Services that select the pod and of its controller, combined (every requirement
        must hold); None when neither exists."""
        merged: dict[str, str] = {}
        labels = pod.labels
        for selector in self._services.get(pod.namespace, {}).values():
            if all(labels.get(k) == v for k, v in selector.items()):
                merged.update(selector)
        requirements = [Requirement(k, EQUALS, (str(v),)) for k, v in merged.items()]
        owner = pod.owner
        if owner is not None:
            kind, group = owner.get("kind") or "", _group(owner.get("apiVersion") or "")
            if (kind, group) in _CONTROLLER_KINDS:
                found = self._controllers.get((kind, pod.namespace, owner.get("name") or ""))
                if found:
                    requirements.extend(found)
        return LabelSelector(requirements) if requirements else None
