"""Kubernetes Status errors.

Every failure that reaches a client is one of these, rendered as a ``metav1.Status`` with the HTTP code and
reason Kubernetes uses (k8s.io/apimachinery/pkg/api/errors).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cause:
    """One entry of ``details.causes``: which field, why (a CauseType such as FieldValueInvalid), and a message."""

    field: str
    reason: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


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
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            status["details"] = self.details
        return status


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


def not_acceptable(accept: str) -> StatusError:
    return StatusError(406, "NotAcceptable", f"only the following media types are accepted: application/json, "
                       f"application/yaml (got {accept!r})")


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
    return StatusError(500, "InternalError", f"Internal error occurred: {message}")
