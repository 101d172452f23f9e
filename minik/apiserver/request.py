"""Transport-free requests and responses: the HTTP adapter and the in-process client transport both speak these,
so every request runs the same pipeline whichever way it arrives."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from minik.api.errors import StatusError, status_bytes, status_details


@dataclass(frozen=True)
class User:
    """An authenticated identity (Kubernetes' user.Info): its name, groups, uid and extra attributes (a service
    account token's pod, say: ``(("authentication.kubernetes.io/pod-name", ("web-1",)),)``)."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass
class ApiRequest:
    method: str
    path: str
    query: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    remote: str | None = None
    #: the identity of the client certificate the connection's TLS handshake verified, if any
    certificate_user: User | None = None


@dataclass
class ApiResponse:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    #: for watches: the chunks of the streamed body (body is then empty)
    stream: AsyncIterator[bytes] | None = None
    #: for watches, optionally: a transport that can write a chunk synchronously passes that writer here (after
    #: the response has started, before it reads ``stream``); live events are then written as they are committed,
    #: without waking the task that reads ``stream`` (which still gets whatever the writer refused)
    direct: Callable[[Callable[[bytes], bool]], None] | None = None
    #: for connections that change protocol (pods/exec over WebSocket): the HTTP transport hands its request to
    #: this and answers with what it returns
    upgrade: Callable[[Any], Awaitable[Any]] | None = None

    @classmethod
    def json(cls, value: Any, status: int = 200) -> ApiResponse:
        return cls(status, orjson.dumps(value))

    @classmethod
    def raw(cls, body: bytes, status: int = 200) -> ApiResponse:
        return cls(status, body)

    @classmethod
    def error(cls, error: StatusError) -> ApiResponse:
        return cls(error.code, error.body(), headers=dict(error.headers))

    @classmethod
    def of_status(cls, status: dict[str, Any], code: int = 200) -> ApiResponse:
        """A Status that is not an error (a delete's, a binding's), encoded as the errors are."""
        return cls(code, status_bytes(status))


def success_status(name: str, group: str, kind: str, uid: str | None = None) -> dict[str, Any]:
    """The Status of a delete, for the kinds that answer one rather than the deleted object."""
    details = status_details({"name": name, "group": group, "kind": kind, "uid": uid})
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def created_status() -> dict[str, Any]:
    """What a create that makes no object of its own (pods/binding, pods/eviction) answers: Kubernetes' bare
    success Status, given the create's code."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
