"""The root CA publisher (Kubernetes' root-ca-cert-publisher): every active namespace has a ConfigMap
``kube-root-ca.crt`` whose ``ca.crt`` is the cluster CA's PEM, made again when it is deleted and put back when its
data or its description annotation changes. Pods trust the API server with it: the ServiceAccount admission plugin
projects it into every pod's token volume as ``ca.crt``.

The controller follows only ConfigMaps of that name (a field selector), and namespaces. Without a CA (a cluster
serving plain HTTP) there is nothing to publish and it does nothing.
"""

from __future__ import annotations

import copy

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder

CONFIGMAP = "kube-root-ca.crt"
KEY = "ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")


class RootCACertPublisher(Controller):
    name = "root-ca-cert-publisher"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 1, clock: Clock | None = None,
                 recorder: Recorder | None = None, root_ca: bytes | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.root_ca = root_ca.decode() if root_ca else None
        self.namespaces = factory.informer("namespaces")
        self.configmaps = factory.informer("configmaps", field_selector=f"metadata.name={CONFIGMAP}")
        self.namespaces.add_handlers(self.enqueue, self._namespace_updated)
        self.configmaps.add_handlers(on_update=lambda _old, new: self._configmap_changed(new),
                                     on_delete=self._configmap_changed)

    def _namespace_updated(self, _old: Obj, new: Obj) -> None:
        if (new.get("status") or {}).get("phase", "Active") == "Active":
            self.enqueue(new)

    def _configmap_changed(self, configmap: Obj) -> None:
        meta = configmap.get("metadata") or {}
        if meta.get("name") == CONFIGMAP and meta.get("namespace"):
            self.queue.add(str(meta["namespace"]))

    async def sync(self, key: str) -> None:
        if self.root_ca is None:
            return
        current = self.configmaps.get(f"{key}/{CONFIGMAP}")
        data = {KEY: self.root_ca}
        if current is None:
            body = {"metadata": {"name": CONFIGMAP, "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                    "data": data}
            try:
                await self.client.create("configmaps", body, key)
            except StatusError as exc:
                # the namespace is gone or going: nothing to publish there (AlreadyExists means the cache is
                # behind: the retry finds the ConfigMap in it)
                if exc.code == 404 or _terminating(exc):
                    return
                raise
            self.log.info("published the root CA", namespace=key)
            return
        annotations = (current.get("metadata") or {}).get("annotations") or {}
        if current.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION):
            return
        repaired = copy.deepcopy(current)
        repaired["data"] = data
        repaired["metadata"]["annotations"] = {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}
        await self.client.update("configmaps", repaired, key)
        self.log.info("repaired the root CA", namespace=key)


def _terminating(exc: StatusError) -> bool:
    return any(cause.get("reason") == "NamespaceTerminating" for cause in (exc.details or {}).get("causes") or [])
