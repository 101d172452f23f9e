"""The PersistentVolume binder (Kubernetes' persistentvolume-binder controller, pkg/controller/volume/persistentvolume):
binds claims to volumes and keeps both phases.

A claim without spec.volumeName is matched against the volumes of its class that nothing claims: a volume pre-bound
to it (spec.claimRef naming it) first, else the smallest volume large enough with every requested access mode, the
same volume mode, and labels its selector matches. Binding writes the volume's claimRef and phase Bound, then the
claim's volumeName (with pv.kubernetes.io/bind-completed) and its status Bound with the volume's capacity and access
modes. A claim of a WaitForFirstConsumer class waits for the scheduler to pick a node (the
volume.kubernetes.io/selected-node annotation, written by the VolumeBinding plugin) and then binds only to a volume
that node reaches. When nothing matches and the class names a provisioner, the claim is annotated
volume.kubernetes.io/storage-provisioner for it (minik.controllers.localpath provisions ``minik.io/local-path``).

A volume is Available while unclaimed, Bound while its claim exists, and Released once its claim is gone; then its
reclaim policy decides: Retain keeps it Released, Delete deletes it (the provisioner of a dynamically provisioned
volume does), Recycle is not supported (Failed).
"""

from __future__ import annotations

import copy
from typing import Any

from minik.aio.clock import Clock
from minik.api import volumes as vol
from minik.api.errors import StatusError
from minik.api.timestamps import now_rfc3339
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, is_being_deleted
from minik.informers import object_key

CLAIM, VOLUME = "claim|", "volume|"
#: the volumes no claim names, by class: what an unbound claim may bind to
FREE_BY_CLASS = "free-by-class"
#: the volumes that name a claim, by NAMESPACE/NAME of the claim
BY_CLAIM = "by-claim"


def _free_by_class(pv: Obj) -> tuple[str, ...]:
    return () if vol.claimed_by(pv) else (vol.volume_class(pv),)


def _by_claim(pv: Obj) -> tuple[str, ...]:
    claimed = vol.claimed_by(pv)
    return (claimed,) if claimed else ()


def claim_ref(claim: Obj) -> Obj:
    meta = claim["metadata"]
    return {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": meta.get("namespace", ""),
            "name": meta["name"], "uid": meta.get("uid", ""), "resourceVersion": meta.get("resourceVersion", "")}


class PersistentVolumeBinder(Controller):
    name = "persistentvolume-binder"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.claims = factory.informer("persistentvolumeclaims")
        self.volumes = factory.informer("persistentvolumes")
        self.classes = factory.informer("storageclasses.storage.k8s.io")
        self.nodes = factory.informer("nodes")  # the selected node's labels, for volumes' node affinity
        #: claims whose WaitForFirstConsumer event was recorded
        self._told_waiting: set[str] = set()
        self.volumes.add_indexers({FREE_BY_CLASS: _free_by_class, BY_CLAIM: _by_claim})
        self.claims.add_handlers(self._claim_changed, lambda old, new: self._claim_changed(new),
                                 self._claim_gone)
        self.volumes.add_handlers(self._volume_changed, lambda old, new: self._volume_changed(new),
                                  self._volume_gone)
        self.classes.add_handlers(self._class_changed, lambda old, new: self._class_changed(new))

    # -- handlers -------------------------------------------------------------------------------------------------
    def _claim_changed(self, claim: Obj) -> None:
        self.queue.add(CLAIM + object_key(claim))

    def _claim_gone(self, claim: Obj) -> None:
        self._told_waiting.discard(claim["metadata"].get("uid", ""))
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if volume_name:
            self.queue.add(VOLUME + volume_name)
        for pv in self.volumes.by_index(BY_CLAIM, vol.claim_key(claim)):
            self.queue.add(VOLUME + object_key(pv))

    def _volume_changed(self, pv: Obj) -> None:
        self.queue.add(VOLUME + object_key(pv))
        claimed = vol.claimed_by(pv)
        if claimed:
            self.queue.add(CLAIM + claimed)
        elif not is_being_deleted(pv):  # a new free volume may serve a waiting claim of its class
            self._enqueue_unbound_claims(vol.volume_class(pv))

    def _volume_gone(self, pv: Obj) -> None:
        claimed = vol.claimed_by(pv)
        if claimed:
            self.queue.add(CLAIM + claimed)

    def _class_changed(self, storage_class: Obj) -> None:
        self._enqueue_unbound_claims(storage_class["metadata"]["name"])

    def _enqueue_unbound_claims(self, class_name: str) -> None:
        for claim in self.claims.list():
            if not (claim.get("spec") or {}).get("volumeName") and vol.claim_class(claim) == class_name:
                self.queue.add(CLAIM + object_key(claim))

    async def sync(self, key: str) -> None:
        if key.startswith(CLAIM):
            await self.sync_claim(key[len(CLAIM):])
        elif key.startswith(VOLUME):
            await self.sync_volume(key[len(VOLUME):])

    # -- claims ---------------------------------------------------------------------------------------------------
    async def sync_claim(self, key: str) -> None:
        claim = self.claims.get(key)
        if claim is None:
            return
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if volume_name:
            await self._sync_bound_claim(claim, volume_name)
        elif not is_being_deleted(claim):
            await self._sync_unbound_claim(claim)

    def _storage_class(self, claim: Obj) -> Obj | None:
        name = vol.claim_class(claim)
        return self.classes.get(name) if name else None

    async def _sync_unbound_claim(self, claim: Obj) -> None:
        storage_class = self._storage_class(claim)
        waits = vol.binding_mode(storage_class) == vol.WAIT_FOR_FIRST_CONSUMER
        annotations = claim["metadata"].get("annotations") or {}
        selected = annotations.get(vol.SELECTED_NODE)
        if waits and not selected:
            await self._set_claim_phase(claim, "Pending")
            uid = claim["metadata"].get("uid", "")
            if uid not in self._told_waiting:  # once per claim: every write to a claim would repeat it
                self._told_waiting.add(uid)
                self.event(claim, "Normal", "WaitForFirstConsumer",
                           "waiting for first consumer to be created before binding")
            return
        pv = self.find_volume(claim, selected if waits else None)
        if pv is not None:
            await self.bind(pv, claim)
            return
        await self._set_claim_phase(claim, "Pending")
        class_name = vol.claim_class(claim)
        if class_name and storage_class is None:
            self.event(claim, "Warning", "ProvisioningFailed",
                       f'storageclass.storage.k8s.io "{class_name}" not found')
            return
        provisioner = str((storage_class or {}).get("provisioner") or "")
        if storage_class is None or not provisioner:
            self.event(claim, "Normal", "FailedBinding",
                       "no persistent volumes available for this claim and no storage class is set")
            return
        # handed to the class's provisioner, even kubernetes.io/no-provisioner (nothing answers: an administrator
        # makes the volume), as Kubernetes' PV controller hands over to an external provisioner
        if annotations.get(vol.STORAGE_PROVISIONER) == provisioner:
            return  # handed over already (said once, when it was)
        meta = claim["metadata"]
        await self.client.patch("persistentvolumeclaims", meta["name"], {"metadata": {
            "annotations": {vol.STORAGE_PROVISIONER: provisioner, vol.BETA_STORAGE_PROVISIONER: provisioner},
            "resourceVersion": meta.get("resourceVersion")}}, meta.get("namespace"))
        self.event(claim, "Normal", "ExternalProvisioning",
                   f"Waiting for a volume to be created either by the external provisioner '{provisioner}' or "
                   f"manually by the system administrator. If volume creation is delayed, please verify that the "
                   f"provisioner is running and correctly registered.")

    def find_volume(self, claim: Obj, node_name: str | None) -> Obj | None:
        """The volume to bind the claim to: one pre-bound to it, else the smallest free match (on ``node_name``
        when given: a WaitForFirstConsumer claim's selected node)."""
        key = vol.claim_key(claim)
        uid = claim["metadata"].get("uid")
        node = (self.nodes.get(node_name) or {"metadata": {"name": node_name, "labels": {
            "kubernetes.io/hostname": node_name}}}) if node_name else None
        class_name = vol.claim_class(claim)
        for pv in self.volumes.by_index(BY_CLAIM, key):  # pre-bound to this claim (by name, or by its uid)
            ref_uid = ((pv.get("spec") or {}).get("claimRef") or {}).get("uid")
            if (not ref_uid or ref_uid == uid) and vol.volume_class(pv) == class_name and self._usable(pv) and \
                    (node is None or vol.volume_fits_node(pv, node)) and vol.volume_matches(pv, claim):
                return pv
        best: Obj | None = None
        for pv in self.volumes.by_index(FREE_BY_CLASS, class_name):
            if not self._usable(pv) or not vol.volume_matches(pv, claim):
                continue
            if node is not None and not vol.volume_fits_node(pv, node):
                continue
            if best is None or vol.volume_size(pv) < vol.volume_size(best):
                best = pv
        return best

    @staticmethod
    def _usable(pv: Obj) -> bool:
        return not is_being_deleted(pv) and (pv.get("status") or {}).get("phase") not in ("Released", "Failed")

    async def bind(self, pv: Obj, claim: Obj) -> None:
        """Bind both ways: the volume first (its claimRef is what reserves it), then the claim."""
        name = pv["metadata"]["name"]
        self.log.info("binding", claim=vol.claim_key(claim), volume=name)
        pv = await self._bind_volume(pv, claim)
        await self._bind_claim(claim, pv)

    async def _bind_volume(self, pv: Obj, claim: Obj) -> Obj:
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        meta = pv["metadata"]
        if ref.get("uid") != claim["metadata"].get("uid") or ref.get("name") != claim["metadata"]["name"]:
            patch: Obj = {"metadata": {"resourceVersion": meta.get("resourceVersion")},
                          "spec": {"claimRef": claim_ref(claim)}}
            if not ref:
                patch["metadata"]["annotations"] = {vol.BOUND_BY_CONTROLLER: "yes"}
            pv = await self.client.patch("persistentvolumes", meta["name"], patch)
        if (pv.get("status") or {}).get("phase") != "Bound":
            pv = await self.client.patch_status("persistentvolumes", meta["name"], {"status": {
                "phase": "Bound", "lastPhaseTransitionTime": now_rfc3339()}})
        return pv

    async def _bind_claim(self, claim: Obj, pv: Obj) -> None:
        meta = claim["metadata"]
        name, namespace = meta["name"], meta.get("namespace")
        annotations = meta.get("annotations") or {}
        if (claim.get("spec") or {}).get("volumeName") != pv["metadata"]["name"] or \
                annotations.get(vol.BIND_COMPLETED) != "yes":
            claim = await self.client.patch("persistentvolumeclaims", name, {
                "metadata": {"resourceVersion": meta.get("resourceVersion"),
                             "annotations": {vol.BIND_COMPLETED: "yes", vol.BOUND_BY_CONTROLLER: "yes"}},
                "spec": {"volumeName": pv["metadata"]["name"]}}, namespace)
        status = claim.get("status") or {}
        spec = pv.get("spec") or {}
        wanted = {"phase": "Bound", "accessModes": spec.get("accessModes") or [],
                  "capacity": dict(spec.get("capacity") or {})}
        if any(status.get(k) != v for k, v in wanted.items()):
            await self.client.patch_status("persistentvolumeclaims", name, {"status": wanted}, namespace)

    async def _sync_bound_claim(self, claim: Obj, volume_name: str) -> None:
        pv = self.volumes.get(volume_name)
        phase = (claim.get("status") or {}).get("phase")
        if pv is None:
            if phase == "Bound":
                await self._set_claim_phase(claim, "Lost")
                self.event(claim, "Warning", "ClaimLost",
                           "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
            return
        ref = (pv.get("spec") or {}).get("claimRef")
        if not ref or not ref.get("name"):
            if not is_being_deleted(claim):  # a claim that names its volume: bind the volume to it
                await self.bind(pv, claim)
            return
        if vol.claimed_by(pv) == vol.claim_key(claim) and ref.get("uid") in ("", None, claim["metadata"].get("uid")):
            await self.bind(pv, claim)
            return
        if phase == "Bound":
            await self._set_claim_phase(claim, "Lost")
            self.event(claim, "Warning", "ClaimMisbound",
                       "Two claims are bound to the same volume, this one is bound incorrectly")

    async def _set_claim_phase(self, claim: Obj, phase: str) -> None:
        if (claim.get("status") or {}).get("phase") == phase:
            return
        meta = claim["metadata"]
        try:
            await self.client.patch_status("persistentvolumeclaims", meta["name"], {
                "metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": {"phase": phase}},
                meta.get("namespace"))
        except StatusError as exc:
            if exc.code != 404:
                raise

    # -- volumes --------------------------------------------------------------------------------------------------
    async def sync_volume(self, name: str) -> None:
        pv = self.volumes.get(name)
        if pv is None:
            return
        ref = (pv.get("spec") or {}).get("claimRef")
        phase = (pv.get("status") or {}).get("phase")
        if not ref or not ref.get("name"):
            await self._set_volume_phase(pv, "Available")
            return
        if not ref.get("uid"):  # pre-bound by name by an administrator: free until that claim binds
            await self._set_volume_phase(pv, "Available")
            return
        claim = self.claims.get(f"{ref.get('namespace', '')}/{ref['name']}")
        if claim is None:  # the cache may lag a new claim: ask before releasing a volume
            claim = await self._live_claim(ref)
        if claim is not None and claim["metadata"].get("uid") == ref.get("uid"):
            if (claim.get("spec") or {}).get("volumeName") == name:
                await self._set_volume_phase(pv, "Bound")
            # else pre-bound (a provisioned volume): the claim's sync binds both, straight to Bound
            return
        if phase not in ("Released", "Failed"):
            pv = await self._set_volume_phase(pv, "Released") or pv
            phase = "Released"
        if phase == "Released":
            await self._reclaim(pv)

    async def _live_claim(self, ref: Obj) -> Obj | None:
        try:
            return await self.client.get("persistentvolumeclaims", ref["name"], ref.get("namespace"))
        except StatusError as exc:
            if exc.code == 404:
                return None
            raise

    async def _reclaim(self, pv: Obj) -> None:
        """What a Released volume becomes: Retain keeps it; Delete deletes a provisioned volume (its provisioner
        does, minik.controllers.localpath for local-path), and fails for one nothing can delete; Recycle fails."""
        spec = pv.get("spec") or {}
        policy = spec.get("persistentVolumeReclaimPolicy") or "Retain"
        name = pv["metadata"]["name"]
        if policy == "Retain":
            return
        provisioned_by = (pv["metadata"].get("annotations") or {}).get(vol.PROVISIONED_BY)
        if policy == "Delete" and provisioned_by:
            return  # the provisioner's to delete
        reason = "VolumeFailedDelete" if policy == "Delete" else "VolumeFailedRecycle"
        message = (f'error getting deleter volume plugin for volume "{name}": no deletable volume plugin matched'
                   if policy == "Delete" else "No recycler plugin found for the volume!")
        await self._set_volume_phase(pv, "Failed", message=message)
        self.event(pv, "Warning", reason, message)

    async def _set_volume_phase(self, pv: Obj, phase: str, message: str | None = None) -> Obj | None:
        status = pv.get("status") or {}
        if status.get("phase") == phase and (message is None or status.get("message") == message):
            return None
        wanted: dict[str, Any] = {"phase": phase, "lastPhaseTransitionTime": now_rfc3339()}
        if message is not None:
            wanted["message"] = message
        try:
            # on the version read: a phase decided from a stale copy must not overwrite a newer one
            fresh: Obj = await self.client.patch_status("persistentvolumes", pv["metadata"]["name"], {
                "metadata": {"resourceVersion": pv["metadata"].get("resourceVersion")}, "status": wanted})
            return copy.deepcopy(fresh)
        except StatusError as exc:
            if exc.code != 404:
                raise
            return None
