"""The service account controller: every active namespace has a ServiceAccount named ``default``, made again if
it is deleted, as Kubernetes' controller of the name keeps it. Pods that name no service account run as it."""

from __future__ import annotations

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, is_being_deleted

DEFAULT = "default"


class ServiceAccountController(Controller):
    name = "serviceaccount"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 1, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.namespaces = factory.informer("namespaces")
        self.accounts = factory.informer("serviceaccounts")
        self.namespaces.add_handlers(self.enqueue, lambda _old, new: self.enqueue(new))
        self.accounts.add_handlers(on_delete=self._deleted)

    def _deleted(self, account: Obj) -> None:
        meta = account.get("metadata") or {}
        if meta.get("name") == DEFAULT and meta.get("namespace"):
            self.queue.add(str(meta["namespace"]))

    async def sync(self, key: str) -> None:
        namespace = self.namespaces.get(key)
        if namespace is None or is_being_deleted(namespace) or \
                (namespace.get("status") or {}).get("phase") == "Terminating":
            return
        if self.accounts.get(f"{key}/{DEFAULT}") is not None:
            return
        try:
            await self.client.create("serviceaccounts", {"metadata": {"name": DEFAULT}}, key)
        except StatusError as exc:
            if exc.reason == "AlreadyExists":
                return
            if exc.code == 403 and "being terminated" in exc.message:
                return  # the namespace began terminating since the cache saw it
            raise
        self.log.info("created the default service account", namespace=key)
