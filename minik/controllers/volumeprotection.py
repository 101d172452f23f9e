"""The storage protection controllers (Kubernetes' pvc-protection and pv-protection): a claim being deleted keeps
its ``kubernetes.io/pvc-protection`` finalizer, so stays Terminating, while a pod that has not finished uses it; a
volume being deleted keeps ``kubernetes.io/pv-protection`` while a claim is bound to it. The finalizers are added
on create by the StorageObjectInUseProtection admission plugin."""

from __future__ import annotations

from minik.aio.clock import Clock
from minik.api import volumes as vol
from minik.api.errors import StatusError
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, is_being_deleted
from minik.informers import object_key

PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"
#: pods by NAMESPACE/CLAIM of each claim they use
BY_CLAIM = "claims"
_FINISHED = ("Succeeded", "Failed")


def _claims_of(pod: Obj) -> tuple[str, ...]:
    namespace = pod["metadata"].get("namespace", "")
    return tuple(f"{namespace}/{name}" for name in vol.pod_claims(pod))


def _uses(pod: Obj) -> bool:
    """Whether a pod still uses its claims: it has not finished (a pod being deleted uses them until it is gone,
    or until it finished)."""
    return (pod.get("status") or {}).get("phase") not in _FINISHED


async def remove_finalizer(client: Client, resource: str, obj: Obj, finalizer: str) -> None:
    meta = obj["metadata"]
    kept = [f for f in meta.get("finalizers") or [] if f != finalizer]
    try:
        await client.patch(resource, meta["name"], {"metadata": {
            "finalizers": kept, "resourceVersion": meta.get("resourceVersion")}}, meta.get("namespace"))
    except StatusError as exc:
        if exc.code != 404:
            raise


class PVCProtectionController(Controller):
    name = "pvc-protection"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.claims = factory.informer("persistentvolumeclaims")
        self.pods = factory.informer("pods")
        self.pods.add_indexers({BY_CLAIM: _claims_of})
        self.claims.add_handlers(self._claim_changed, lambda old, new: self._claim_changed(new))
        self.pods.add_handlers(None, lambda old, new: self._pod_changed(new), self._pod_changed)

    def _claim_changed(self, claim: Obj) -> None:
        if is_being_deleted(claim) and PVC_PROTECTION in (claim["metadata"].get("finalizers") or []):
            self.enqueue(claim)

    def _pod_changed(self, pod: Obj) -> None:
        for key in _claims_of(pod):
            claim = self.claims.get(key)
            if claim is not None:
                self._claim_changed(claim)

    async def sync(self, key: str) -> None:
        claim = self.claims.get(key)
        if claim is None or not is_being_deleted(claim) or \
                PVC_PROTECTION not in (claim["metadata"].get("finalizers") or []):
            return
        if any(_uses(pod) for pod in self.pods.by_index(BY_CLAIM, key)):
            return
        if await self._used_live(claim):  # the cache may lag a pod just created: ask, as Kubernetes does
            return
        self.log.info("claim no longer in use; removing its finalizer", claim=key)
        await remove_finalizer(self.client, "persistentvolumeclaims", claim, PVC_PROTECTION)

    async def _used_live(self, claim: Obj) -> bool:
        meta = claim["metadata"]
        pods = await self.client.list("pods", meta.get("namespace"))
        key = object_key(claim)
        return any(_uses(pod) and key in _claims_of(pod) for pod in pods.get("items") or [])


class PVProtectionController(Controller):
    name = "pv-protection"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.volumes = factory.informer("persistentvolumes")
        self.volumes.add_handlers(self._changed, lambda old, new: self._changed(new))

    def _changed(self, pv: Obj) -> None:
        if is_being_deleted(pv) and PV_PROTECTION in (pv["metadata"].get("finalizers") or []):
            self.enqueue(pv)

    async def sync(self, key: str) -> None:
        pv = self.volumes.get(key)
        if pv is None or not is_being_deleted(pv) or PV_PROTECTION not in (pv["metadata"].get("finalizers") or []):
            return
        if (pv.get("status") or {}).get("phase") == "Bound":  # a claim is bound to it
            return
        self.log.info("volume no longer bound; removing its finalizer", volume=key)
        await remove_finalizer(self.client, "persistentvolumes", pv, PV_PROTECTION)
