"""ValidatingAdmissionWebhook: the ValidatingWebhookConfigurations' webhooks, called in parallel with the object
as it will be stored (after every mutation and the kind's own validation). Any refusal or failure (under
failurePolicy Fail) refuses the request: the first one in Kubernetes' order of the webhooks is what the client
gets."""

from __future__ import annotations

import asyncio

from minik.api.errors import StatusError
from minik.apiserver.admission.base import Attributes
from minik.apiserver.admission.webhook.config import WebhookSource
from minik.apiserver.admission.webhook.dispatch import WebhookCaller, exempt


class ValidatingAdmissionWebhook:
    name = "ValidatingAdmissionWebhook"

    def __init__(self, source: WebhookSource, caller: WebhookCaller) -> None:
        self._source = source
        self._caller = caller

    async def validate(self, attrs: Attributes) -> None:
        hooks = self._source.webhooks
        if not hooks or exempt(attrs):
            return
        invocations = [invocation for hook in hooks if (invocation := self._caller.invocation(hook, attrs))]
        if not invocations:
            return
        if len(invocations) == 1:
            await self._caller.call(invocations[0], attrs, mutating=False)
            return
        results = await asyncio.gather(*(self._caller.call(i, attrs, mutating=False) for i in invocations),
                                       return_exceptions=True)
        for result in results:
            if isinstance(result, StatusError):
                raise result
        for result in results:
            if isinstance(result, BaseException):
                raise result
