"""What a get, list or watch answers with, from its Accept header, as Kubernetes' NegotiateOutputMediaType picks it.

The clauses are tried by quality (then the more specific first, then in the order given). A clause is taken when
its media type is one Kubernetes serves (JSON, YAML, protobuf, or a wildcard) and the conversion its ``as``,
``g`` and ``v`` parameters ask for is one the endpoint allows: none (the object itself), a ``Table`` (JSON or
YAML only), ``PartialObjectMetadata`` or ``PartialObjectMetadataList``, each in meta.k8s.io v1 or v1beta1. When no
clause can be taken the answer is 406 NotAcceptable. minik writes JSON whatever the clause's media type: clients
that offer protobuf (client-go's metadata client, kubectl) offer JSON too, and read what the Content-Type says.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from minik.api.errors import not_acceptable
from minik.api.registry import ResourceType
from minik.apiserver import tables
from minik.apiserver.partial import PARTIAL, PARTIAL_LIST, PartialWriter, single_object_only
from minik.apiserver.request import ApiRequest


class ResponseWriter(Protocol):
    """Renders a get's object, a list page or a watch stream in the negotiated form."""

    def object(self, raw: bytes) -> bytes: ...

    def list(self, items: list[bytes], meta: dict[str, Any]) -> bytes: ...

    def watch(self, lines: AsyncIterator[bytes]) -> AsyncIterator[bytes]: ...


#: the media types Kubernetes serves for a built-in resource, in its order (the 406 message lists them)
SERVED = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
META_GROUP = "meta.k8s.io"
META_VERSIONS = ("v1", "v1beta1")
TABLE = "Table"
_CONVERSIONS = (TABLE, PARTIAL, PARTIAL_LIST)


@dataclass(frozen=True)
class Conversion:
    """The form a client asked for instead of the object: a Table or partial metadata, in one meta.k8s.io version."""

    kind: str
    version: str

    @property
    def api_version(self) -> str:
        return f"{META_GROUP}/{self.version}"


@dataclass(frozen=True)
class Clause:
    media: str
    params: dict[str, str]
    quality: float


def parse_accept(header: str) -> list[Clause]:
    """The clauses of an Accept header by preference: quality first, then specific before wildcard types, then
    the order given (goautoneg's order)."""
    clauses = []
    for entry in header.split(","):
        media, *raw_params = (part.strip() for part in entry.split(";"))
        if not media:
            continue
        params = {}
        for raw in raw_params:
            key, _, value = raw.partition("=")
            params[key.strip().lower()] = value.strip().strip('"')
        try:
            quality = float(params.pop("q", "1"))
        except ValueError:
            quality = 0.0
        clauses.append(Clause(media.lower(), params, quality))
    return sorted(clauses, key=lambda c: (-c.quality, c.media.startswith("*/"), c.media.endswith("/*")))


def _candidates(media: str) -> list[str]:
    """The served media types a clause's type matches."""
    if media == "*/*":
        return list(SERVED)
    if media == "application/*":
        return list(SERVED)
    return [media] if media in SERVED else []


def _allowed(media: str, params: dict[str, str]) -> tuple[bool, Conversion | None]:
    """Whether the endpoint serves ``media`` with the conversion ``params`` ask for (Kubernetes'
    AllowsMediaTypeTransform), and that conversion."""
    if not any(k in params for k in ("as", "g", "v")):
        return True, None
    kind, group, version = params.get("as", ""), params.get("g", ""), params.get("v", "")
    if group != META_GROUP or version not in META_VERSIONS or kind not in _CONVERSIONS:
        return False, None
    if kind == TABLE and media not in ("application/json", "application/yaml"):
        return False, None
    return True, Conversion(kind, version)


def negotiate(accept: str | None) -> Conversion | None:
    """The conversion the first acceptable clause asks for (None: the object itself); 406 when none is
    acceptable."""
    if not accept or not accept.strip():
        return None
    for clause in parse_accept(accept):
        for media in _candidates(clause.media):
            ok, conversion = _allowed(media, clause.params)
            if ok:
                return conversion
    raise not_acceptable(f"only the following media types are accepted: {', '.join(SERVED)}")


def writer_for(resource: ResourceType, request: ApiRequest, watch: bool = False) -> ResponseWriter | None:
    """How to render a get, list or watch of ``resource`` for this request's Accept header; None for the object
    as stored. 406 when the header asks for nothing the server serves, or (``watch``) for a list of each event's
    single object: Kubernetes fails on the first event then, ending the stream without a word."""
    conversion = negotiate(request.headers.get("Accept"))
    if conversion is None:
        return None
    if conversion.kind == TABLE:
        return tables.TableWriter(resource, conversion.api_version, tables.include_object(request.query))
    if watch and conversion.kind == PARTIAL_LIST:
        raise single_object_only(resource)
    return PartialWriter(resource, conversion.api_version, conversion.kind)
