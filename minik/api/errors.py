"""Kubernetes Status errors.

Every failure that reaches a client is one of these, rendered as a ``metav1.Status`` with the HTTP code and
reason Kubernetes uses (k8s.io/apimachinery/pkg/api/errors).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from minik.jsonbytes import without_surrogates


@dataclass(frozen=True)
class Cause:
    """One entry of ``details.causes``: which field, why (a CauseType such as FieldValueInvalid), and a message."""

    field: str
    reason: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


#: metav1.StatusDetails' fields in the order Go's encoder writes them (each omitted when empty)
DETAIL_FIELDS = ("name", "group", "kind", "uid", "causes", "retryAfterSeconds")
#: metav1.StatusCause's fields likewise (its Type is written as "reason")
CAUSE_FIELDS = ("reason", "message", "field")


def _ordered(value: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """``value``'s non-empty fields in Go's order, then any others it has (none, in Kubernetes' own)."""
    ordered = {name: value[name] for name in fields if value.get(name) not in (None, "", [], 0)}
    ordered.update((k, v) for k, v in value.items() if k not in fields)
    return ordered


def status_details(details: dict[str, Any]) -> dict[str, Any]:
    """``details`` as Kubernetes writes a StatusDetails: name, group, kind, uid, causes (each reason, message,
    field), retryAfterSeconds, the empty ones left out."""
    ordered = _ordered(details, DETAIL_FIELDS)
    causes = ordered.get("causes")
    if isinstance(causes, list):
        ordered["causes"] = [_ordered(c, CAUSE_FIELDS) if isinstance(c, dict) else c for c in causes]
    return ordered


#: what Go's encoding/json writes escaped in strings (its HTML-safe default), and how; none of these bytes can
#: appear in JSON outside a string, so replacing them in the encoded bytes is safe
_GO_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"), ("\u2028".encode(), b"\\u2028"),
               ("\u2029".encode(), b"\\u2029"))


def status_bytes(status: dict[str, Any]) -> bytes:
    """A whole response body holding a Status, byte for byte as Kubernetes' JSON serializer (Go's json.Encoder)
    writes it: ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, and a final newline. A string no JSON encoder takes
    (a lone surrogate quoted from the URL) is written with U+FFFD in its place, as Go does."""
    try:
        body = orjson.dumps(status, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        body = orjson.dumps(without_surrogates(status), option=orjson.OPT_APPEND_NEWLINE)
    for raw, escaped in _GO_ESCAPES:
        if raw in body:
            body = body.replace(raw, escaped)
    return body


@dataclass
class StatusError(Exception):
    """An API error carrying everything needed to render a Status object."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message

    def to_status(self) -> dict[str, Any]:
        """The Status object, its fields in the order Kubernetes writes them (kind, apiVersion, metadata, status,
        message, reason, details, code), so that a client comparing bodies byte for byte finds them equal."""
        status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
        if self.message:
            status["message"] = self.message
        if self.reason:
            status["reason"] = self.reason
        if self.details:
            status["details"] = status_details(self.details)
        status["code"] = self.code
        return status

    def body(self) -> bytes:
        """The response body carrying this error: its Status as Kubernetes encodes it, with the final newline."""
        return status_bytes(self.to_status())


def _details(name: str | None, group: str, kind: str) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    return details


def qualified(plural: str, group: str) -> str:
    """``deployments.apps`` for grouped resources, ``pods`` for the core group."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> StatusError:
    return StatusError(404, "NotFound", f'{qualified(plural, group)} "{name}" not found',
                       _details(name, group, plural))


def already_exists(plural: str, group: str, name: str) -> StatusError:
    return StatusError(409, "AlreadyExists", f'{qualified(plural, group)} "{name}" already exists',
                       _details(name, group, plural))


CONFLICT_MESSAGE = "the object has been modified; please apply your changes to the latest version and try again"


def conflict(plural: str, group: str, name: str, message: str = CONFLICT_MESSAGE) -> StatusError:
    return StatusError(409, "Conflict",
                       f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": {message}',
                       _details(name, group, plural))


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> StatusError:
    summary = ", ".join(f"{c.field}: {c.message}" if c.field else c.message for c in causes)
    details = _details(name, group, kind)
    details["causes"] = [c.to_dict() for c in causes]
    if len(causes) > 1:
        summary = f"[{summary}]"
    return StatusError(422, "Invalid", f'{kind}.{group} "{name}" is invalid: {summary}' if group
                       else f'{kind} "{name}" is invalid: {summary}', details)


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def gone(message: str) -> StatusError:
    return StatusError(410, "Gone", message)


def method_not_allowed(message: str) -> StatusError:
    return StatusError(405, "MethodNotAllowed", message)


#: the media types of the request bodies that carry an object (create, update, DeleteOptions, subresources)
BODY_MEDIA_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")

#: the media types of PATCH bodies
PATCH_MEDIA_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                     "application/apply-patch+yaml", "application/strategic-merge-patch+json")


def unsupported_media_type(content_type: str, accepted: tuple[str, ...] = BODY_MEDIA_TYPES) -> StatusError:
    return StatusError(415, "UnsupportedMediaType", f'the body of the request was in an unknown format - accepted '
                       f'media types include: {", ".join(accepted)} (got "{content_type}")')


def not_acceptable(message: str) -> StatusError:
    """406, as the apiserver's errNotAcceptable: a Status with no details."""
    return StatusError(406, "NotAcceptable", message)


def too_large(message: str = "the request body is too large") -> StatusError:
    return StatusError(413, "RequestEntityTooLarge", message)


class Unauthorized(StatusError):
    """401 in Kubernetes' words. Raise the class, which makes a new instance each time: one shared instance
    raised again keeps every earlier raise's traceback (and so each refused request's frames and body) chained
    to its own."""

    def __init__(self) -> None:
        super().__init__(401, "Unauthorized", "Unauthorized")


def forbidden(message: str, plural: str = "", group: str = "", name: str = "") -> StatusError:
    return StatusError(403, "Forbidden", message, _details(name, group, plural))


def timeout(message: str) -> StatusError:
    return StatusError(504, "Timeout", message)


def internal(message: str) -> StatusError:
    """500, as Kubernetes' NewInternalError writes it: the error is also the one cause."""
    return StatusError(500, "InternalError", f"Internal error occurred: {message}",
                       {"causes": [{"message": message}]})
