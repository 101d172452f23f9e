"""The ephemeral volume controller (Kubernetes' ephemeral-volume): a pod's generic ephemeral volume
(``ephemeral.volumeClaimTemplate``) gets its claim, named POD-VOLUME, owned by the pod, so the claim is bound and
provisioned as any other, and deleted with the pod by the garbage collector. A claim of that name that the pod
does not own is left alone, and the pod waits (an event says why), as in Kubernetes."""

from __future__ import annotations

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, is_being_deleted
from minik.informers import object_key


def ephemeral_claims(pod: Obj) -> list[tuple[str, Obj]]:
    """(claim name, volumeClaimTemplate) of each ephemeral volume of the pod."""
    name = pod["metadata"]["name"]
    out = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        template = ((volume.get("ephemeral") or {}) if isinstance(volume, dict) else {}).get("volumeClaimTemplate")
        if isinstance(template, dict):
            out.append((f"{name}-{volume.get('name', '')}", template))
    return out


def claim_for(pod: Obj, name: str, template: Obj) -> Obj:
    meta = pod["metadata"]
    template_meta = template.get("metadata") or {}
    claim_meta: Obj = {"name": name, "namespace": meta.get("namespace", ""),
                       "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                            "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]}
    for key in ("labels", "annotations"):
        if template_meta.get(key):
            claim_meta[key] = dict(template_meta[key])
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": claim_meta,
            "spec": dict(template.get("spec") or {})}


class EphemeralVolumeController(Controller):
    name = "ephemeral-volume"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.pods = factory.informer("pods")
        self.claims = factory.informer("persistentvolumeclaims")
        self.pods.add_handlers(self._pod_changed, lambda old, new: self._pod_changed(new))
        self.claims.add_handlers(None, None, self._claim_gone)

    def _pod_changed(self, pod: Obj) -> None:
        if not is_being_deleted(pod) and ephemeral_claims(pod):
            self.enqueue(pod)

    def _claim_gone(self, claim: Obj) -> None:
        for ref in claim["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Pod" and ref.get("controller"):
                self.queue.add(f"{claim['metadata'].get('namespace', '')}/{ref.get('name', '')}")

    async def sync(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or is_being_deleted(pod) or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        namespace = pod["metadata"].get("namespace", "")
        for name, template in ephemeral_claims(pod):
            existing = self.claims.get(f"{namespace}/{name}")
            if existing is not None:
                if not any(ref.get("uid") == pod["metadata"]["uid"]
                           for ref in existing["metadata"].get("ownerReferences") or []):
                    self.event(pod, "Warning", "FailedBinding",
                               f"PVC {namespace}/{name} was not created for pod {object_key(pod)} "
                               f"(pod is not owner)")
                continue
            try:
                await self.client.create("persistentvolumeclaims", claim_for(pod, name, template), namespace)
            except StatusError as exc:
                if exc.code != 409:
                    self.event(pod, "Warning", "FailedBinding", f"create PVC {name}: {exc.message}")
                    raise
