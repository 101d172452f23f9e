"""AdmissionReview: the request a webhook is sent and what its response says, as Kubernetes builds and checks
them (k8s.io/apiserver/pkg/admission/plugin/webhook/request), and the errors a rejection or a failure becomes."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

import orjson

from minik.api.errors import StatusError
from minik.apiserver.admission.base import Attributes
from minik.apiserver.admission.webhook.matching import Invocation

Obj = dict[str, Any]

ADMISSION_GROUP = "admission.k8s.io"
#: the AdmissionReview versions minik speaks, in its order of preference
REVIEW_VERSIONS = ("v1", "v1beta1")
_OPTIONS_KINDS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class CallError(Exception):
    """The webhook could not be called or answered nonsense (Kubernetes' ErrCallingWebhook): the webhook's
    failurePolicy decides what the request gets."""

    def __init__(self, webhook: str, reason: str) -> None:
        super().__init__(f'failed calling webhook "{webhook}": {reason}')
        self.webhook = webhook
        self.reason = reason


def review_version(accepted: tuple[str, ...]) -> str:
    """The first version of the webhook's admissionReviewVersions that minik speaks."""
    for version in accepted:
        if version in REVIEW_VERSIONS:
            return version
    return ""


def user_info(attrs: Attributes) -> Obj:
    info: Obj = {"username": attrs.user.name}
    if attrs.user.uid:
        info["uid"] = attrs.user.uid
    if attrs.user.groups:
        info["groups"] = list(attrs.user.groups)
    if attrs.user.extra:
        info["extra"] = {key: list(values) for key, values in attrs.user.extra}
    return info


def request_options(attrs: Attributes) -> Obj | None:
    """The request's CreateOptions, UpdateOptions or DeleteOptions, as the webhook sees them."""
    kind = _OPTIONS_KINDS.get(attrs.operation)
    if kind is None:
        return None
    options: Obj = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    for key, value in (attrs.options or {}).items():
        if key not in ("kind", "apiVersion") and value is not None:
            options[key] = value
    if attrs.dry_run:
        options["dryRun"] = ["All"]
    return options


def admission_request(uid: str, invocation: Invocation, attrs: Attributes, dry_run: bool) -> Obj:
    """The ``request`` of an AdmissionReview (also what a matchCondition reads as ``request``)."""
    return request_for(uid, (invocation.group, invocation.version, invocation.resource, invocation.kind), attrs,
                       dry_run)


def request_for(uid: str, target: tuple[str, str, str, str], attrs: Attributes, dry_run: bool) -> Obj:
    """An AdmissionRequest for the group, version, resource and kind of ``target`` (the request's own, or the
    equivalent a webhook asked for)."""
    resource = attrs.resource
    group, version, plural, kind = target
    request: Obj = {
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": plural},
        "requestKind": {"group": resource.group, "version": resource.version, "kind": resource.kind},
        "requestResource": {"group": resource.group, "version": resource.version, "resource": resource.plural},
    }
    if attrs.subresource:
        request["subResource"] = request["requestSubResource"] = attrs.subresource
    if attrs.name:
        request["name"] = attrs.name
    namespace = attrs.namespace or (attrs.name if resource.plural == "namespaces" and not resource.group else "")
    if namespace:
        request["namespace"] = namespace
    request.update({"operation": attrs.operation, "userInfo": user_info(attrs), "object": attrs.obj,
                    "oldObject": attrs.old, "dryRun": dry_run})
    options = request_options(attrs)
    if options is not None:
        request["options"] = options
    return request


def review_body(request: Obj, version: str) -> bytes:
    return orjson.dumps({"kind": "AdmissionReview", "apiVersion": f"{ADMISSION_GROUP}/{version}",
                         "request": request})


@dataclass
class Response:
    allowed: bool
    status: Obj | None = None
    #: the JSON patch operations of a mutating webhook's answer (empty when it changes nothing)
    patch: list[Any] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parse_response(webhook: str, body: bytes, uid: str, version: str, mutating: bool) -> Response:
    """Check the answer as Kubernetes' VerifyAdmissionResponse does; CallError when it is not an AdmissionReview
    for this request."""
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise CallError(webhook, f"failed to call webhook: couldn't get version/kind; json parse error: {exc}") \
            from None
    if not isinstance(review, dict):
        raise CallError(webhook, "failed to call webhook: couldn't get version/kind; json parse error: "
                                 "the response is not a JSON object")
    invalid = "received invalid webhook response: "
    expected = f"{ADMISSION_GROUP}/{version}, Kind=AdmissionReview"
    got = f"{review.get('apiVersion') or ''}, Kind={review.get('kind') or ''}"
    response = review.get("response")
    if not isinstance(response, dict):
        raise CallError(webhook, invalid + "webhook response was absent")
    if response.get("uid") != uid:
        raise CallError(webhook, invalid + f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    if got != expected:
        raise CallError(webhook, invalid + f"expected webhook response of {expected}, got {got}")
    raw_patch = response.get("patch")
    patch_type = response.get("patchType") or ""
    patch: list[Any] = []
    if raw_patch:
        if not patch_type:
            raise CallError(webhook, invalid + "webhook returned response.patch but not response.patchType")
        if not mutating:
            raise CallError(webhook, invalid + "validating webhook may not return response.patch")
        if patch_type != "JSONPatch":
            raise CallError(webhook, invalid + f'webhook returned invalid response.patchType of "{patch_type}"')
        try:
            decoded = orjson.loads(base64.b64decode(str(raw_patch), validate=True))
        except (binascii.Error, ValueError, orjson.JSONDecodeError) as exc:
            raise StatusError(500, "InternalError", f"Internal error occurred: {exc}") from None
        if not isinstance(decoded, list):
            raise StatusError(500, "InternalError", "Internal error occurred: a JSON patch must be a list of "
                                                    "operations")
        patch = decoded
    status = response.get("status")
    warnings = response.get("warnings")
    return Response(response.get("allowed") is True, status if isinstance(status, dict) else None, patch,
                    [str(w) for w in warnings] if isinstance(warnings, list) else [])


def rejection(webhook: str, status: Obj | None) -> StatusError:
    """What the client gets when a webhook says no (Kubernetes' ToStatusErr): its status, with a code of at least
    400 and the message ``admission webhook "NAME" denied the request: MESSAGE``."""
    status = status or {}
    code = status.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 400 else 400
    denied = f'admission webhook "{webhook}" denied the request'
    message, reason = str(status.get("message") or ""), str(status.get("reason") or "")
    if message:
        text = f"{denied}: {message}"
    elif reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    details = status.get("details")
    return StatusError(code, reason, text, details if isinstance(details, dict) else {})


def call_failure(error: CallError) -> StatusError:
    """A failing webhook whose failurePolicy is Fail: 500, Kubernetes' NewInternalError of the failure."""
    return StatusError(500, "InternalError", f"Internal error occurred: {error}", {"causes": [{"message": str(error)}]})


def dry_run_unsupported(webhook: str) -> StatusError:
    return StatusError(400, "BadRequest", f'admission webhook "{webhook}" does not support dry run')
