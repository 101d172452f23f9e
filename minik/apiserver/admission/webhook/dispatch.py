"""One webhook call as both admission plugins make it: match the request (rules, selectors, matchConditions),
check dry-run support, post the AdmissionReview, read the answer; and the webhook's failurePolicy applied to a
webhook that cannot be called or answers nonsense (Fail: 500 InternalError; Ignore: as if it had not matched)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import structlog

from minik.api import matchconditions
from minik.api.kinds.admissionregistration import ADMISSION_GROUP, EXEMPT_RESOURCES, NO_SIDE_EFFECTS
from minik.api.registry import Registry
from minik.apiserver.admission.base import Attributes, ObjectReader
from minik.apiserver.admission.webhook.client import WebhookClient
from minik.apiserver.admission.webhook.config import Webhook
from minik.apiserver.admission.webhook.matching import Invocation, should_call
from minik.apiserver.admission.webhook.review import (
    CallError,
    Response,
    admission_request,
    call_failure,
    dry_run_unsupported,
    parse_response,
    rejection,
    review_body,
    review_version,
)
from minik.apiserver.auth.serviceaccounts import service_account_user
from minik.apiserver.authorization import AuthzAttributes, Decision
from minik.apiserver.request import User
from minik.apiserver.warnings import add_warning

log = structlog.get_logger("minik.admission.webhook")

#: the API server's authorizer, for the ``authorizer`` of matchConditions
Authorize = Callable[[User, AuthzAttributes], Awaitable[tuple[Decision, str]]]


def exempt(attrs: Attributes) -> bool:
    """Requests for the admission configurations themselves never reach a webhook."""
    return attrs.resource.group == ADMISSION_GROUP and attrs.resource.plural in EXEMPT_RESOURCES


class WebhookCaller:
    def __init__(self, reader: ObjectReader, registry: Registry, client: WebhookClient,
                 authorize: Authorize | None = None) -> None:
        self.reader = reader
        self.registry = registry
        self.client = client
        self.authorize = authorize

    def invocation(self, hook: Webhook, attrs: Attributes) -> Invocation | None:
        """Whether the rules and selectors send this request to ``hook`` (StatusError for a namespace that does not
        exist)."""
        return should_call(hook, attrs, self.reader, self.registry)

    async def call(self, invocation: Invocation, attrs: Attributes, mutating: bool) -> Response | None:
        """The webhook's answer (after its matchConditions: None when they do not match, or when the webhook
        failed and fails open). A refusal is raised as the client will see it; so is a failure under Fail."""
        hook = invocation.webhook
        try:
            return await self._call(invocation, attrs, mutating)
        except CallError as exc:
            if hook.fails_open:
                log.warning("failed calling webhook, failing open", webhook=hook.name, error=exc.reason)
                return None
            log.warning("failed calling webhook, failing closed", webhook=hook.name, error=exc.reason)
            raise call_failure(exc) from None

    async def _call(self, invocation: Invocation, attrs: Attributes, mutating: bool) -> Response | None:
        hook = invocation.webhook
        uid = str(uuid.uuid4())
        request = admission_request(uid, invocation, attrs, attrs.dry_run)
        if hook.conditions:
            result = await matchconditions.match(hook.conditions,
                                                 matchconditions.variables(attrs.obj, attrs.old, request),
                                                 authorizer_for(self.authorize, attrs.user))
            if result.error:
                raise CallError(hook.name, result.error)
            if not result.matches:
                return None
        if attrs.dry_run and hook.side_effects not in NO_SIDE_EFFECTS:
            raise dry_run_unsupported(hook.name)
        version = review_version(hook.review_versions)
        if not version:
            raise CallError(hook.name, "webhook does not accept known AdmissionReview versions: "
                                       + ", ".join(hook.review_versions))
        answer = await self.client.post(hook, review_body(request, version))
        response = parse_response(hook.name, answer, uid, version, mutating)
        for warning in response.warnings:
            add_warning(warning)
        if not response.allowed:
            raise rejection(hook.name, response.status)
        return response


def authorizer_for(authorize: Authorize | None, user: User) -> matchconditions.Authorize | None:
    """What CEL's ``authorizer`` asks, answered by the API server's authorizer for the requesting user (or the
    service account of ``authorizer.serviceAccount(namespace, name)``)."""
    if authorize is None:
        return None

    async def ask(check: matchconditions.AuthzCheck) -> tuple[bool, str]:
        if check.path:
            attrs = AuthzAttributes(check.verb, path=check.path, resource_request=False)
        else:
            attrs = AuthzAttributes(check.verb, check.group, check.resource, check.subresource, check.namespace,
                                    check.name)
        who = user if check.service_account is None else service_account_user(*check.service_account)
        decision, reason = await authorize(who, attrs)
        return decision is Decision.ALLOW, reason

    return ask
