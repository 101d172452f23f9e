"""List and watch options: selectors, resourceVersion semantics, limit/continue pagination.

A list page is consistent at one revision: the first page is read at the current revision, and its continue
token carries that revision and the last key, so later pages read the state as it was (410 Expired once history
has been compacted past it, as Kubernetes answers).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from minik.api.errors import bad_request, expired
from minik.api.params import non_negative_int
from minik.api.registry import ResourceType
from minik.api.selectors import FieldSelector, LabelSelector, parse_field_selector, parse_label_selector
from minik.apiserver.rest import parse_resource_version
from minik.apiserver.storeerrors import too_large_resource_version, too_old_resource_version
from minik.store import Compacted, FutureRevision, Record, Store

Obj = dict[str, Any]
ObjectPredicate = Callable[[Obj], bool]

MAX_LIMIT = 100_000
MAX_TIMEOUT_SECONDS = 24 * 3600


@dataclass(frozen=True)
class ListOptions:
    label_selector: LabelSelector
    field_selector: FieldSelector
    limit: int
    continue_token: str | None
    resource_version: str | None
    resource_version_match: str | None
    timeout_seconds: int | None
    allow_bookmarks: bool
    send_initial_events: bool | None


def _bool_param(query: Mapping[str, str], name: str) -> bool | None:
    value = query.get(name)
    if value in (None, ""):
        return None
    if value in ("true", "1", "True"):
        return True
    if value in ("false", "0", "False"):
        return False
    raise bad_request(f"{name}: Invalid value: {value!r}: must be true or false")


def parse_list_options(query: Mapping[str, str], resource: ResourceType, name: str | None = None) -> ListOptions:
    try:
        labels = parse_label_selector(query.get("labelSelector", ""))
    except ValueError as exc:
        raise bad_request(f"unable to parse requirement: {exc}") from None
    field_text = query.get("fieldSelector", "")
    if name is not None:
        field_text = f"metadata.name={name}" + (f",{field_text}" if field_text else "")
    try:
        fields = parse_field_selector(field_text)
    except ValueError as exc:
        raise bad_request(f"invalid field selector: {exc}") from None
    supported = set(resource.strategy.field_set({"metadata": {}}))
    for requirement in fields.requirements:
        if requirement[0] not in supported:
            raise bad_request(f'field label not supported: {requirement[0]}')
    match = query.get("resourceVersionMatch") or None
    if match not in (None, "Exact", "NotOlderThan"):
        raise bad_request(f'resourceVersionMatch: Unsupported value: "{match}": supported values: "Exact", '
                          f'"NotOlderThan"')
    return ListOptions(
        label_selector=labels,
        field_selector=fields,
        limit=non_negative_int(query, "limit", MAX_LIMIT) or 0,
        continue_token=query.get("continue") or None,
        resource_version=query.get("resourceVersion") or None,
        resource_version_match=match,
        timeout_seconds=non_negative_int(query, "timeoutSeconds", MAX_TIMEOUT_SECONDS),
        allow_bookmarks=bool(_bool_param(query, "allowWatchBookmarks")),
        send_initial_events=_bool_param(query, "sendInitialEvents"),
    )


#: objects that several selectors test, by identity: id -> (the object, held so that its id stays its own, and its
#: field set once a selector has worked it out, else None)
FieldSets = dict[int, tuple[Obj, dict[str, str] | None]]


def object_predicate(options: ListOptions, resource: ResourceType, *, field_sets: FieldSets | None = None
                     ) -> ObjectPredicate | None:
    """A test of one object against the selectors, or None when they select everything. ``field_sets``: objects
    that other selectors test too, unchanged (a watch event's object, decoded once for every watch), registered
    there by their owner as (object, None); the first selector to test one keeps its field set there for the
    others. Other objects are tested as they come. The owner of the dict empties it."""
    labels, fields = options.label_selector, options.field_selector
    if labels.empty and fields.empty:
        return None
    field_set = resource.strategy.field_set
    shared: FieldSets = field_sets if field_sets is not None else {}

    def matches(obj: Obj) -> bool:
        meta = obj.get("metadata") or {}
        if not labels.empty and not labels.matches(meta.get("labels") or {}):
            return False
        if fields.empty:
            return True
        entry = shared.get(id(obj))
        if entry is None or entry[0] is not obj:
            return fields.matches(field_set(obj))
        selectable = entry[1]
        if selectable is None:
            selectable = field_set(obj)
            shared[id(obj)] = (obj, selectable)
        return fields.matches(selectable)

    return matches


# -- continue tokens ------------------------------------------------------------------------------------------
def encode_continue(revision: int, start: str) -> str:
    token = orjson.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": start})
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        revision, start = int(data["rv"]), data["start"]
        if data.get("v") != "meta.k8s.io/v1" or not isinstance(start, str) or revision <= 0:
            raise ValueError(token)
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                          "(version meta.k8s.io/v1)") from None
    return revision, start


CONTINUE_EXPIRED = ("The provided continue parameter is too old to display a consistent list result. You can start "
                    "a new list without the continue parameter.")


async def read_list(store: Store, resource: ResourceType, namespace: str | None, options: ListOptions
                    ) -> tuple[list[Record], Obj]:
    """The records of one list page and the list's metadata (resourceVersion, continue, remainingItemCount)."""
    prefix = resource.prefix(namespace)
    after: str | None = None
    revision: int | None = None
    if options.continue_token:
        if options.resource_version not in (None, "0") or options.resource_version_match:
            raise bad_request("specifying resource version is not allowed when using continue")
        revision, start = decode_continue(options.continue_token)
        after = prefix + start
    elif options.resource_version_match == "Exact":
        revision = parse_resource_version(options.resource_version, "resourceVersion")
        if not revision:
            raise bad_request("resourceVersionMatch: Forbidden: resourceVersionMatch \"Exact\" is forbidden for "
                              "resourceVersion \"0\" or unset")
    elif options.resource_version_match and options.resource_version is None:
        raise bad_request("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
                          "resourceVersion is provided")
    else:
        wanted = parse_resource_version(options.resource_version, "resourceVersion")
        if wanted:
            try:
                await store.wait_for_revision(wanted)
            except FutureRevision as exc:
                raise too_large_resource_version(exc) from None
    predicate_obj = object_predicate(options, resource)
    predicate = (lambda record: predicate_obj(record.object())) if predicate_obj else None
    try:
        result = await store.list(prefix, revision=revision, after=after, limit=options.limit, predicate=predicate)
    except Compacted as exc:
        if options.continue_token:
            raise expired(CONTINUE_EXPIRED) from None
        raise too_old_resource_version(exc) from None
    except FutureRevision as exc:
        raise too_large_resource_version(exc) from None
    meta: Obj = {"resourceVersion": str(result.revision)}
    if result.more:
        last = result.items[-1].key if result.items else (after or prefix)
        meta["continue"] = encode_continue(result.revision, last[len(prefix):])
        if result.remaining is not None:
            meta["remainingItemCount"] = result.remaining
    return result.items, meta


def list_body(resource: ResourceType, items: list[bytes], meta: Obj) -> bytes:
    """The list as JSON, built from the stored bytes of each item without decoding them, in one copy: a list of
    every pod of a large cluster is hundreds of MB, and each concatenation would copy all of it again."""
    head = orjson.dumps({"kind": resource.kind_list, "apiVersion": resource.api_version, "metadata": meta})
    opening = head[:-1] + b',"items":['
    if not items:
        return opening + b"]}"
    if len(items) == 1:
        return opening + items[0] + b"]}"
    return b",".join([opening + items[0], *items[1:-1], items[-1] + b"]}"])

