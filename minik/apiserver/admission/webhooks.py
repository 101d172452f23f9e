"""The two webhook admission plugins and what they share (the configurations they follow, one HTTPS client):
start ``Webhooks`` before requests are served and stop it after the last one."""

from __future__ import annotations

from minik.api.registry import Registry
from minik.apiserver.admission.base import AdmissionPlugin, ObjectReader
from minik.apiserver.admission.mutating_webhook import MutatingAdmissionWebhook
from minik.apiserver.admission.validating_webhook import ValidatingAdmissionWebhook
from minik.apiserver.admission.webhook.client import WebhookClient
from minik.apiserver.admission.webhook.config import MUTATING_PREFIX, VALIDATING_PREFIX, WebhookSource
from minik.apiserver.admission.webhook.dispatch import Authorize, WebhookCaller
from minik.store import Store

__all__ = ["Webhooks"]


class Webhooks:
    """The mutating and validating webhook plugins, over one client and the configurations they follow."""

    def __init__(self, store: Store, reader: ObjectReader, registry: Registry,
                 authorize: Authorize | None = None) -> None:
        self.mutating = WebhookSource(store, MUTATING_PREFIX)
        self.validating = WebhookSource(store, VALIDATING_PREFIX)
        self.client = WebhookClient(reader)
        caller = WebhookCaller(reader, registry, self.client, authorize)
        self._plugins: list[AdmissionPlugin] = [MutatingAdmissionWebhook(self.mutating, caller),
                                                ValidatingAdmissionWebhook(self.validating, caller)]

    def plugins(self) -> list[AdmissionPlugin]:
        """The two plugins, to be put last in the chain (Kubernetes' order: every built-in mutating step runs
        before the mutating webhooks, every built-in validating step before the validating webhooks)."""
        return list(self._plugins)

    def start(self) -> None:
        self.mutating.start()
        self.validating.start()

    async def stop(self) -> None:
        await self.mutating.stop()
        await self.validating.stop()
        await self.client.close()
