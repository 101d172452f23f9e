"""Dynamic admission control, as Kubernetes calls it: the plugins whose behaviour is configured through the API
(admission webhooks, ValidatingAdmissionPolicies) and what they share (the configurations they follow in the
store, one HTTPS client). Start ``DynamicAdmission`` before requests are served and stop it after the last one."""

from __future__ import annotations

from minik.api.registry import Registry
from minik.apiserver.admission.base import AdmissionPlugin, ObjectReader
from minik.apiserver.admission.mutating_webhook import MutatingAdmissionWebhook
from minik.apiserver.admission.policy.source import PolicySource
from minik.apiserver.admission.validating_policy import ValidatingAdmissionPolicyPlugin
from minik.apiserver.admission.validating_webhook import ValidatingAdmissionWebhook
from minik.apiserver.admission.webhook.client import WebhookClient
from minik.apiserver.admission.webhook.config import MUTATING_PREFIX, VALIDATING_PREFIX, WebhookSource
from minik.apiserver.admission.webhook.dispatch import Authorize, WebhookCaller
from minik.store import Store

__all__ = ["DynamicAdmission"]


class DynamicAdmission:
    """MutatingAdmissionWebhook, ValidatingAdmissionPolicy and ValidatingAdmissionWebhook."""

    def __init__(self, store: Store, reader: ObjectReader, registry: Registry,
                 authorize: Authorize | None = None) -> None:
        self.mutating = WebhookSource(store, MUTATING_PREFIX)
        self.validating = WebhookSource(store, VALIDATING_PREFIX)
        self.policies = PolicySource(store)
        self.client = WebhookClient(reader)
        caller = WebhookCaller(reader, registry, self.client, authorize)
        self._plugins: list[AdmissionPlugin] = [
            MutatingAdmissionWebhook(self.mutating, caller),
            ValidatingAdmissionPolicyPlugin(self.policies, reader, registry, authorize),
            ValidatingAdmissionWebhook(self.validating, caller)]

    def plugins(self) -> list[AdmissionPlugin]:
        """The plugins, to be put last in the chain, in Kubernetes' order: every built-in mutating step runs
        before the mutating webhooks, every built-in validating step before the policies, and the policies before
        the validating webhooks."""
        return list(self._plugins)

    def start(self) -> None:
        self.mutating.start()
        self.validating.start()
        self.policies.start()

    async def stop(self) -> None:
        await self.mutating.stop()
        await self.validating.stop()
        await self.policies.stop()
        await self.client.close()
