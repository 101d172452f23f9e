"""Metadata-only responses: ``PartialObjectMetadata`` and ``PartialObjectMetadataList`` (meta.k8s.io v1 or v1beta1).

A client that asks for them in its Accept header (client-go's metadata client and informers, which the garbage
collector, the namespace controller and many operators use) gets each object as its kind, apiVersion and
metadata only: a get answers one PartialObjectMetadata, a list a PartialObjectMetadataList with the list's
metadata (resourceVersion, continue, remainingItemCount), and every event of a watch carries a
PartialObjectMetadata, bookmarks too (ERROR events keep their Status). Asking for the list form of one object, or
the single form of a list, is 406 NotAcceptable with Kubernetes' message, which names the Go type of the result.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from minik.api.errors import StatusError, not_acceptable
from minik.api.registry import ResourceType

Obj = dict[str, Any]

PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"
_EVENT_TYPES = (b"ADDED", b"MODIFIED", b"DELETED", b"BOOKMARK")


def go_type(resource: ResourceType, listed: bool) -> str:
    """The internal Go type Kubernetes names in its message (``*core.Pod``, ``*apps.DeploymentList``)."""
    package = resource.group.split(".", 1)[0] if resource.group else "core"
    return f"*{package}.{resource.kind}{'List' if listed else ''}"


def single_object_only(resource: ResourceType) -> StatusError:
    """406 for PartialObjectMetadataList asked of something that is one object."""
    return not_acceptable(f"you requested {PARTIAL_LIST}, but the requested object is not a list "
                          f"({go_type(resource, False)})")


class PartialWriter:
    """Renders the objects of one resource as PartialObjectMetadata of one meta.k8s.io version; ``kind`` is what
    the client asked for (PartialObjectMetadata or PartialObjectMetadataList)."""

    def __init__(self, resource: ResourceType, api_version: str, kind: str) -> None:
        self.resource = resource
        self.api_version = api_version
        self.kind = kind
        self._head = b'{"kind":"' + PARTIAL.encode() + b'","apiVersion":"' + api_version.encode() + b'","metadata":'

    def _partial(self, obj: Obj) -> bytes:
        meta = obj.get("metadata")
        return self._head + orjson.dumps(meta if isinstance(meta, dict) else {}) + b"}"

    def object(self, raw: bytes) -> bytes:
        """A get's answer; 406 when the list form was asked for."""
        if self.kind != PARTIAL:
            raise single_object_only(self.resource)
        return self._partial(orjson.loads(raw))

    def list(self, items: list[bytes], meta: Obj) -> bytes:
        """A list page's answer; 406 when the single form was asked for."""
        if self.kind != PARTIAL_LIST:
            raise not_acceptable(f"you requested {PARTIAL}, but the requested object is a list "
                                 f"({go_type(self.resource, True)})")
        head = orjson.dumps({"kind": PARTIAL_LIST, "apiVersion": self.api_version, "metadata": meta})
        return head[:-1] + b',"items":[' + b",".join(self._partial(orjson.loads(raw)) for raw in items) + b"]}"

    def event(self, line: bytes) -> bytes:
        """One watch event line with its object as PartialObjectMetadata; ERROR events pass unchanged."""
        event = orjson.loads(line)
        kind = str(event.get("type") or "").encode()
        obj = event.get("object")
        if kind not in _EVENT_TYPES or not isinstance(obj, dict):
            return line + b"\n"
        return b'{"type":"' + kind + b'","object":' + self._partial(obj) + b"}\n"

    async def watch(self, lines: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """The watch stream with PartialObjectMetadata in its events."""
        try:
            async for chunk in lines:
                out = [self.event(line) for line in chunk.splitlines() if line.strip()]
                if out:
                    yield b"".join(out)
        finally:
            aclose = getattr(lines, "aclose", None)
            if aclose is not None:
                await aclose()
