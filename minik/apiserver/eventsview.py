"""The events.k8s.io/v1 Events API: every verb of the core/v1 events resource, on the same stored objects,
converted on the way in and out (minik.api.kinds.events). Reads convert what the store holds; writes are checked
by events.k8s.io/v1's rules in that form, then go through the core/v1 events' own REST storage (its admission,
validation, managedFields), and answer in events.k8s.io/v1 form. Errors name ``events.events.k8s.io``.

Server-side apply (``application/apply-patch+yaml``) is not offered on this view: the other patch types are.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import orjson

from minik.api.errors import StatusError, bad_request, invalid, unsupported_media_type
from minik.api.errors import not_found as not_found_error
from minik.api.kinds.events import API_VERSION, from_core, to_core, view_raw
from minik.api.registry import ResourceType
from minik.apiserver import codec, negotiation
from minik.apiserver.apply import FieldManager
from minik.apiserver.fieldvalidation import FieldValidation
from minik.apiserver.lists import list_body, parse_list_options, read_list
from minik.apiserver.request import ApiRequest, ApiResponse, User, success_status
from minik.apiserver.requestinfo import RequestInfo
from minik.apiserver.watch import WatchStream
from minik.store import Record

if TYPE_CHECKING:
    from minik.apiserver.server import ApiServer

Obj = dict[str, Any]


class EventsView:
    """Routes every verb of ``view`` (events.k8s.io/v1 events) to the core/v1 events' storage."""

    def __init__(self, api: ApiServer, view: ResourceType, core: ResourceType) -> None:
        self.api = api
        self.view = view
        self.core = api.rest(core)

    def route(self) -> None:
        handlers = {"get": self._get, "list": self._list, "watch": self._watch, "create": self._create,
                    "update": self._update, "patch": self._patch, "delete": self._delete,
                    "deletecollection": self._delete_collection}
        for verb, handler in handlers.items():
            self.api.route(self.view.group, self.view.plural, None, verb, handler)

    # -- errors --------------------------------------------------------------------------------------------------
    def _translated(self, exc: StatusError) -> StatusError:
        """An error of the core storage as this view's: ``events.events.k8s.io "x" not found``,
        ``Event.events.k8s.io "x" is invalid``."""
        details = dict(exc.details)
        if details.get("group"):
            return exc
        message = exc.message
        for before, after in (('events "', 'events.events.k8s.io "'), ('Event "', 'Event.events.k8s.io "')):
            if message.startswith(before):
                message = after + message[len(before):]
        message = message.replace(' on events "', ' on events.events.k8s.io "', 1)
        if details.get("kind") in ("events", "Event"):
            details["group"] = self.view.group
        return StatusError(exc.code, exc.reason, message, details, dict(exc.headers))

    async def _core_call(self, call: Any) -> Any:
        try:
            return await call
        except StatusError as exc:
            raise self._translated(exc) from None

    def _record(self, namespace: str | None, name: str) -> Record:
        record = self.api.store.get(self.view.key(namespace, name))
        if record is None:
            raise not_found_error(self.view.plural, self.view.group, name)
        return record

    # -- reads ---------------------------------------------------------------------------------------------------
    async def _get(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        raw = view_raw(self._record(info.namespace, info.name or "").raw)
        table = negotiation.writer_for(self.view, request)
        return ApiResponse.raw(table.object(raw) if table else raw)

    async def _list(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        items, meta = await read_list(self.api.store, self.view, info.namespace,
                                      parse_list_options(request.query, self.view))
        raws = [view_raw(record.raw) for record in items]
        table = negotiation.writer_for(self.view, request)
        return ApiResponse.raw(table.list(raws, meta) if table else list_body(self.view, raws, meta))

    async def _watch(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        stream = WatchStream(self.api.store, self.view, info.namespace,
                             parse_list_options(request.query, self.view, info.name),
                             self.api.settings.bookmark_interval_seconds)
        await stream.open()
        lines = _viewed(stream.lines())
        table = negotiation.writer_for(self.view, request, watch=True)
        return ApiResponse(200, stream=table.watch(lines) if table else lines)

    # -- writes --------------------------------------------------------------------------------------------------
    def _body(self, info: RequestInfo, request: ApiRequest) -> tuple[Obj, FieldValidation]:
        content_type = request.headers.get("Content-Type")
        body = codec.decode_object(request.body, content_type)
        fields = FieldValidation(self.view, request.query, info.verb)
        body = fields.object(body, request.body, content_type)
        self._check_type(body)
        given = body["metadata"].get("namespace")
        if given not in (None, "", info.namespace):
            raise bad_request("the namespace of the provided object does not match the namespace sent on the "
                              "request")
        body["metadata"]["namespace"] = info.namespace
        return body, fields

    def _check_type(self, obj: Obj) -> None:
        api_version = obj.setdefault("apiVersion", API_VERSION)
        kind = obj.setdefault("kind", "Event")
        if api_version != API_VERSION or kind != "Event":
            raise bad_request(f"the API version in the data ({api_version}) and kind ({kind}) do not match the "
                              f"expected {API_VERSION} Event")
        if not isinstance(obj.get("metadata", {}), dict):
            raise bad_request("metadata must be an object")
        obj.setdefault("metadata", {})

    def _refuse(self, name: str, causes: list[Any]) -> None:
        if causes:
            raise invalid("Event", self.view.group, name, causes)

    def _fields(self, request: ApiRequest, verb: str) -> FieldManager | None:
        return FieldManager.for_request(self.core.resource, request, verb, None)

    async def _create(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        from minik.apiserver.server import _dry_run

        body, fields = self._body(info, request)
        meta = body["metadata"]
        namespaces = self.api.registry.get("", "v1", "namespaces")
        if namespaces is not None and self.api.store.get(namespaces.key(None, info.namespace or "")) is None:
            # NamespaceLifecycle's answer comes before validation, as in Kubernetes' chain
            raise not_found_error("namespaces", "", info.namespace or "")
        self._refuse(str(meta.get("name") or meta.get("generateName") or ""), self.view.strategy.validate(body))
        created = await self._core_call(self.core.create(to_core(body), info.namespace, user,
                                                         _dry_run(request.query), self._fields(request, info.verb)))
        return _respond(self._viewed(created), 201, fields.headers)

    def _changed(self, name: str, change: Callable[[Obj], Obj]) -> Callable[[Obj], Obj]:
        """A change of the view's object as a change of the stored one, held to the view's update rules."""
        def apply(stored: Obj) -> Obj:
            current = from_core(stored)
            new = change(from_core(stored))
            if not isinstance(new, dict):
                raise bad_request("the patch must leave an object")
            self._check_type(new)
            self._refuse(name, self.view.strategy.validate_update(new, current))
            return to_core(new)

        return apply

    async def _update(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        from minik.apiserver.server import _dry_run

        name = info.name or ""
        body, fields = self._body(info, request)
        body_name = body["metadata"].get("name")
        if body_name not in (None, "", name):
            raise bad_request(f"the name of the object ({body_name}) does not match the name on the URL ({name})")
        body["metadata"]["name"] = name
        self._record(info.namespace, name)
        raw = orjson.dumps(body)
        updated = await self._core_call(self.core.patch(
            info.namespace, name, self._changed(name, lambda _current: orjson.loads(raw)), user, None,
            _dry_run(request.query), self._fields(request, info.verb)))
        return _respond(self._viewed(updated), 200, fields.headers)

    async def _patch(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        from minik.apiserver.server import _dry_run, _patcher

        content_type = request.headers.get("Content-Type")
        if codec.media_type(content_type) == codec.APPLY_PATCH:
            raise unsupported_media_type(codec.APPLY_PATCH, (codec.JSON_PATCH, codec.MERGE_PATCH,
                                                             codec.STRATEGIC_MERGE_PATCH))
        fields = FieldValidation(self.view, request.query, info.verb)
        patch = fields.patcher(_patcher(request.body, content_type, self.view), request.body, content_type)
        name = info.name or ""
        self._record(info.namespace, name)
        patched = await self._core_call(self.core.patch(
            info.namespace, name, self._changed(name, patch), user, None, _dry_run(request.query),
            self._fields(request, info.verb)))
        return _respond(self._viewed(patched), 200, fields.headers)

    async def _delete(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        from minik.apiserver.server import _delete_options

        name = info.name or ""
        options = _delete_options(request.body, request.headers.get("Content-Type"), request.query)
        self._record(info.namespace, name)
        obj, gone = await self._core_call(self.core.delete(info.namespace, name, options, user))
        if gone:
            return ApiResponse.json(success_status(name, self.view.group, self.view.plural,
                                                   (obj.get("metadata") or {}).get("uid")))
        return ApiResponse.json(from_core(obj))

    async def _delete_collection(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        from minik.apiserver.server import _delete_options

        options = _delete_options(request.body, request.headers.get("Content-Type"), request.query)
        items, _ = await read_list(self.api.store, self.view, info.namespace,
                                   parse_list_options(request.query, self.view))
        deleted = []
        for record in items:
            meta = record.object().get("metadata", {})
            try:
                gone, _ = await self.core.delete(meta.get("namespace"), meta.get("name", ""), options, user)
            except StatusError as exc:
                if exc.code != 404:
                    raise self._translated(exc) from None
                continue
            deleted.append(orjson.dumps(from_core(gone)))
        return ApiResponse.raw(list_body(self.view, deleted, {"resourceVersion": str(self.api.store.revision)}))

    @staticmethod
    def _viewed(result: Record | Obj) -> Obj:
        return from_core(result.object() if isinstance(result, Record) else result)


async def _viewed(lines: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """A watch of stored events as events.k8s.io/v1 events (BOOKMARK and ERROR events pass as they are)."""
    try:
        async for chunk in lines:
            out = []
            for line in chunk.splitlines():
                if not line.strip():
                    continue
                event = orjson.loads(line)
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and isinstance(event.get("object"), dict):
                    event["object"] = from_core(event["object"])
                    line = orjson.dumps(event)
                out.append(line + b"\n")
            if out:
                yield b"".join(out)
    finally:
        await lines.aclose()  # type: ignore[attr-defined]


def _respond(result: Record | Obj, status: int, headers: dict[str, str]) -> ApiResponse:
    """A written event as the view answers it: its stored bytes, or the converted object."""
    response = ApiResponse.raw(result.raw, status) if isinstance(result, Record) else ApiResponse.json(result, status)
    response.headers.update(headers)
    return response
