"""The built-in dynamic provisioner of the ``local-path`` StorageClass (provisioner ``minik.io/local-path``), as
k3s's local-path provisioner: a claim the binder hands to it (annotation volume.kubernetes.io/storage-provisioner)
gets a PersistentVolume of its own, a directory on one node with node affinity to that node.

The node is the one the scheduler picked for the claim's first pod (volume.kubernetes.io/selected-node; the class
waits for the first consumer) or, for an Immediate class, the first Ready node by name. The directory is
``ROOT/pvc-UID_NAMESPACE_NAME``, ROOT being the node's minik.io/local-path-root annotation (its kubelet's data
directory), else the class's ``nodePath`` parameter, else /var/lib/minik/local-path. The volume is a hostPath of
type DirectoryOrCreate, pre-bound to the claim (the binder completes the binding), labelled minik.io/local-path-node.

The controller does no disk work: it may run far from the node. The node's kubelet makes the directory when a pod
mounts the volume, and removes the directories of local-path volumes that no longer exist
(minik.kubelet.localvolumes). So reclaimPolicy Delete is: the volume is Released, this controller deletes the
PersistentVolume, and the kubelet then deletes the directory; Retain keeps both.
"""

from __future__ import annotations

from minik.aio.clock import Clock
from minik.api import volumes as vol
from minik.api.errors import StatusError
from minik.api.placement import node_condition
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, is_being_deleted
from minik.controllers.volumebinder import claim_ref
from minik.informers import object_key

CLAIM, VOLUME = "claim|", "volume|"


def volume_name(claim: Obj) -> str:
    return f"pvc-{claim['metadata']['uid']}"


def volume_directory(root: str, claim: Obj) -> str:
    meta = claim["metadata"]
    return f"{root.rstrip('/')}/{volume_name(claim)}_{meta.get('namespace', '')}_{meta['name']}"


def provisioned_volume(claim: Obj, storage_class: Obj, node: str, root: str) -> Obj:
    """The PersistentVolume that serves ``claim`` on ``node``."""
    spec = claim.get("spec") or {}
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": volume_name(claim), "labels": {vol.LOCAL_PATH_NODE_LABEL: node},
                     "annotations": {vol.PROVISIONED_BY: vol.LOCAL_PATH_PROVISIONER}},
        "spec": {
            "capacity": {"storage": str(((spec.get("resources") or {}).get("requests") or {}).get("storage", "0"))},
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "storageClassName": storage_class["metadata"]["name"],
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "hostPath": {"path": volume_directory(root, claim), "type": "DirectoryOrCreate"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}},
            "claimRef": claim_ref(claim),
        },
    }


class LocalPathProvisioner(Controller):
    name = "local-path-provisioner"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.claims = factory.informer("persistentvolumeclaims")
        self.volumes = factory.informer("persistentvolumes")
        self.classes = factory.informer("storageclasses.storage.k8s.io")
        self.nodes = factory.informer("nodes")
        self.claims.add_handlers(self._claim_changed, lambda old, new: self._claim_changed(new))
        self.volumes.add_handlers(self._volume_changed, lambda old, new: self._volume_changed(new))

    def _claim_changed(self, claim: Obj) -> None:
        annotations = claim["metadata"].get("annotations") or {}
        if annotations.get(vol.STORAGE_PROVISIONER) == vol.LOCAL_PATH_PROVISIONER and \
                not (claim.get("spec") or {}).get("volumeName"):
            self.queue.add(CLAIM + object_key(claim))

    def _volume_changed(self, pv: Obj) -> None:
        if (pv["metadata"].get("annotations") or {}).get(vol.PROVISIONED_BY) == vol.LOCAL_PATH_PROVISIONER and \
                (pv.get("status") or {}).get("phase") == "Released":
            self.queue.add(VOLUME + object_key(pv))

    async def sync(self, key: str) -> None:
        if key.startswith(CLAIM):
            await self.provision(key[len(CLAIM):])
        elif key.startswith(VOLUME):
            await self.delete(key[len(VOLUME):])

    def _node_for(self, claim: Obj, storage_class: Obj) -> str | None:
        selected = (claim["metadata"].get("annotations") or {}).get(vol.SELECTED_NODE)
        if selected:
            return str(selected)
        if vol.binding_mode(storage_class) == vol.WAIT_FOR_FIRST_CONSUMER:
            return None
        ready = sorted(n["metadata"]["name"] for n in self.nodes.list()
                       if (node_condition(n, "Ready") or {}).get("status") == "True")
        return ready[0] if ready else None

    def _root(self, node_name: str, storage_class: Obj) -> str:
        node = self.nodes.get(node_name) or {}
        root = (node.get("metadata", {}).get("annotations") or {}).get(vol.LOCAL_PATH_ROOT_ANNOTATION)
        return str(root or (storage_class.get("parameters") or {}).get("nodePath") or vol.DEFAULT_LOCAL_PATH_ROOT)

    async def provision(self, key: str) -> None:
        claim = self.claims.get(key)
        if claim is None or is_being_deleted(claim) or (claim.get("spec") or {}).get("volumeName"):
            return
        storage_class = self.classes.get(vol.claim_class(claim))
        if storage_class is None or storage_class.get("provisioner") != vol.LOCAL_PATH_PROVISIONER:
            return
        if self.volumes.get(volume_name(claim)) is not None:
            return  # provisioned; the binder binds it
        node = self._node_for(claim, storage_class)
        if node is None:
            return  # waits for the scheduler's choice (or for a Ready node)
        self.event(claim, "Normal", "Provisioning",
                   f'External provisioner is provisioning volume for claim "{key}"')
        pv = provisioned_volume(claim, storage_class, node, self._root(node, storage_class))
        try:
            await self.client.create("persistentvolumes", pv)
        except StatusError as exc:
            if exc.code != 409:
                self.event(claim, "Warning", "ProvisioningFailed", f"failed to provision volume with StorageClass "
                                                                   f'"{storage_class["metadata"]["name"]}": '
                                                                   f"{exc.message}")
                raise
            return
        self.log.info("provisioned", claim=key, volume=pv["metadata"]["name"], node=node)
        self.event(claim, "Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {volume_name(claim)}")

    async def delete(self, name: str) -> None:
        """Delete a Released volume whose policy is Delete (its directory goes with it: its kubelet's sweep)."""
        pv = self.volumes.get(name)
        if pv is None or is_being_deleted(pv) or (pv.get("status") or {}).get("phase") != "Released":
            return
        if (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") != "Delete":
            return
        self.log.info("deleting released volume", volume=name)
        try:
            await self.client.delete("persistentvolumes", name, preconditions={"uid": pv["metadata"]["uid"]})
        except StatusError as exc:
            if exc.code not in (404, 409):
                raise
