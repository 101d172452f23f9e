"""The token cleaner (Kubernetes' tokencleaner, which kubeadm turns on): a bootstrap token Secret in kube-system
(type bootstrap.kubernetes.io/token) is deleted once its ``expiration`` has passed, so `minik token list` and the
Secrets show only tokens that still work. The API server already refuses an expired token; this removes it."""

from __future__ import annotations

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.tokens import BOOTSTRAP_TYPE, NAMESPACE, read_bootstrap_secret
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder


def is_bootstrap_token(secret: Obj) -> bool:
    return secret.get("type") == BOOTSTRAP_TYPE and \
        (secret.get("metadata") or {}).get("namespace") == NAMESPACE


class TokenCleaner(Controller):
    name = "tokencleaner"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 1, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.secrets = factory.informer("secrets")
        self.secrets.add_handlers(self._changed, lambda old, new: self._changed(new))

    def _changed(self, secret: Obj) -> None:
        if is_bootstrap_token(secret):
            self.enqueue(secret)

    async def sync(self, key: str) -> None:
        secret = self.secrets.get(key)
        if secret is None or not is_bootstrap_token(secret):
            return
        token = read_bootstrap_secret(secret)
        if token is None or token.expiration is None:
            return  # malformed (the authenticator refuses it) or never expires; an unreadable expiry reads
            # as long past, so it goes
        remaining = token.expiration.timestamp() - self.clock.now()
        if remaining > 0:
            self.enqueue_after(secret, remaining)
            return
        meta = secret["metadata"]
        try:
            await self.client.delete("secrets", meta["name"], meta["namespace"],
                                     preconditions={"uid": meta["uid"], "resourceVersion": meta["resourceVersion"]})
        except StatusError as exc:
            if exc.code not in (404, 409):  # 409: changed since (perhaps a new expiry): the next sync decides
                raise
            return
        self.log.info("deleted expired bootstrap token", secret=key)
