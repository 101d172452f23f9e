"""MutatingAdmissionWebhook: the MutatingWebhookConfigurations' webhooks, called one after the other in
Kubernetes' order, each seeing the object as the ones before it left it; a webhook's JSON patch is applied and the
kind's defaults filled in again.

Reinvocation, as Kubernetes does it: a webhook whose reinvocationPolicy is IfNeeded is called a second time
(once) when a webhook after it changed the object; no webhook is called more than twice."""

from __future__ import annotations

import copy

import jsonpatch

from minik.api.errors import StatusError, internal
from minik.apiserver.admission.base import Attributes
from minik.apiserver.admission.webhook.config import Webhook, WebhookSource
from minik.apiserver.admission.webhook.dispatch import WebhookCaller, exempt


class MutatingAdmissionWebhook:
    name = "MutatingAdmissionWebhook"

    def __init__(self, source: WebhookSource, caller: WebhookCaller) -> None:
        self._source = source
        self._caller = caller

    async def admit(self, attrs: Attributes) -> None:
        hooks = self._source.webhooks
        if not hooks or exempt(attrs):
            return
        reinvocable: list[str] = []  # IfNeeded webhooks called so far
        reinvoke: set[str] = set()
        for hook in hooks:
            called, changed = await self._run(hook, attrs)
            if changed:
                reinvoke.update(reinvocable)
            if called and hook.reinvocation_policy == "IfNeeded":
                reinvocable.append(hook.key)
        for hook in hooks:
            if hook.key in reinvoke:
                await self._run(hook, attrs)

    async def _run(self, hook: Webhook, attrs: Attributes) -> tuple[bool, bool]:
        """(called, changed the object)."""
        invocation = self._caller.invocation(hook, attrs)
        if invocation is None:
            return False, False
        response = await self._caller.call(invocation, attrs, mutating=True)
        if response is None:
            return False, False
        if not response.patch:
            return True, False
        return True, apply_patch(hook.name, response.patch, attrs)


def apply_patch(webhook: str, patch: list[object], attrs: Attributes) -> bool:
    """Apply a webhook's JSON patch to the request's object in place; whether it changed anything. Errors are
    500s, as Kubernetes answers a patch it cannot apply."""
    obj = attrs.obj
    if obj is None:
        raise internal(f'admission webhook "{webhook}" attempted to modify the object, which is not supported for '
                       "this operation")
    try:
        patched = jsonpatch.JsonPatch(patch).apply(copy.deepcopy(obj))
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, ValueError, KeyError,
            IndexError) as exc:
        raise internal(str(exc)) from None
    if not isinstance(patched, dict) or not isinstance(patched.get("metadata", {}), dict):
        raise StatusError(500, "InternalError", f'Internal error occurred: admission webhook "{webhook}" left no '
                                                "object")
    attrs.resource.strategy.default(patched)
    if patched == obj:
        return False
    obj.clear()
    obj.update(patched)
    return True
