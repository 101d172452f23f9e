"""The async API client every component uses (client-go's dynamic client, in Python's shape).

Objects are plain dicts, resources are ``ResourceType``s (or names resolved through the registry: "configmaps",
"ConfigMap", "cm", "deployments.apps"). Two transports carry the same requests: HTTP (aiohttp) for another
process, and in-process, which hands an ``ApiRequest`` straight to ``ApiServer.handle`` with no socket but
through the same authentication, admission, validation and serialization.

Every non-2xx answer raises ``StatusError`` built from the server's Status (code, reason, message, details);
network failures raise ``TransportError``.
"""

from __future__ import annotations

import asyncio
import builtins
import platform
import ssl as ssl_module
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NamedTuple, Protocol

import aiohttp
import orjson

from minik import __version__
from minik.api.errors import StatusError
from minik.api.registry import Registry, ResourceType

Obj = dict[str, Any]
Resource = ResourceType | str
Selector = str | Mapping[str, str] | None

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

#: reasons for answers whose body is not a Status (as client-go's NewGenericServerResponse names them)
_GENERIC_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
                    405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Gone",
                    413: "RequestEntityTooLarge", 415: "UnsupportedMediaType", 422: "Invalid",
                    429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


def user_agent(program: str) -> str:
    """A User-Agent in client-go's form, ``PROGRAM/VERSION (OS/ARCH) minik``: the server names the field manager
    of a write after its first part (``kube-controller-manager``, ``kubelet``...), as Kubernetes does."""
    return f"{program}/v{__version__} ({sys.platform}/{platform.machine().lower()}) minik"


#: the User-Agent of a client that names no program of its own
DEFAULT_USER_AGENT = user_agent("minik")


#: how often a request refused with 429 TooManyRequests is sent again, after the wait the server asks for
#: (client-go retries 10 times)
RETRIES_ON_TOO_MANY_REQUESTS = 10


def _retry_after(body: bytes) -> float:
    """The seconds a 429 Status asks the client to wait (details.retryAfterSeconds), 1 when it does not say,
    at most 10."""
    try:
        seconds = ((orjson.loads(body) or {}).get("details") or {}).get("retryAfterSeconds")
    except (orjson.JSONDecodeError, AttributeError):
        seconds = None
    return float(min(max(seconds, 0), 10)) if isinstance(seconds, (int, float)) else 1.0


class TransportError(ConnectionError):
    """The server could not be reached, or a response broke off mid-way."""


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


# -- transports ---------------------------------------------------------------------------------------------
@dataclass
class Response:
    """A whole (non-streamed) response."""

    status: int
    body: bytes


@dataclass
class StreamedResponse:
    """A response read chunk by chunk (watches). ``close`` must be awaited once the caller is done with it."""

    status: int
    chunks: AsyncIterator[bytes]
    close: Callable[[], Awaitable[None]]


class Transport(Protocol):
    async def request(self, method: str, path: str, query: Mapping[str, str], body: bytes | None = None,
                      content_type: str | None = None) -> Response: ...

    async def stream(self, method: str, path: str, query: Mapping[str, str]) -> StreamedResponse: ...

    async def close(self) -> None: ...


class HttpTransport:
    """HTTP through one aiohttp session, created on first use (it must be created inside the event loop)."""

    def __init__(self, url: str, token: str | None = None, timeout_seconds: float = 60.0, *,
                 ssl: ssl_module.SSLContext | bool | None = None, agent: str = DEFAULT_USER_AGENT) -> None:
        """``ssl``: a context trusting the cluster's CA (from the kubeconfig), False to skip verification,
        None for the system's trust store. ``agent``: the User-Agent (see ``user_agent``)."""
        self.url = url.rstrip("/")
        self._ssl: ssl_module.SSLContext | bool = True if ssl is None else ssl
        self._headers = {"Accept": JSON, "User-Agent": agent}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        # watches last as long as the server keeps them open; only connecting is bounded
        self._stream_timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout_seconds)
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            # no connection limit: every informer holds a connection for its watch, and a pool exhausted by
            # watches would deadlock the requests made by their handlers
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ssl=self._ssl),
                                                  headers=self._headers)
        return self._session

    async def request(self, method: str, path: str, query: Mapping[str, str], body: bytes | None = None,
                      content_type: str | None = None) -> Response:
        headers = {"Content-Type": content_type} if content_type else None
        try:
            async with self._get_session().request(method, self.url + path, params=dict(query), data=body,
                                                   headers=headers, timeout=self._timeout) as response:
                return Response(response.status, await response.read())
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransportError(f"{method} {path}: {_describe(exc)}") from exc

    async def stream(self, method: str, path: str, query: Mapping[str, str]) -> StreamedResponse:
        try:
            response = await self._get_session().request(method, self.url + path, params=dict(query),
                                                         timeout=self._stream_timeout)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransportError(f"{method} {path}: {_describe(exc)}") from exc

        async def close() -> None:
            response.close()  # drops the connection: an unfinished stream cannot go back to the pool

        return StreamedResponse(response.status, _HttpChunks(response, f"{method} {path}"), close)

    async def websocket(self, path: str, query: list[tuple[str, str]],
                        protocols: tuple[str, ...]) -> aiohttp.ClientWebSocketResponse:
        """Open a WebSocket (pods/exec). A refused upgrade raises the server's StatusError: the same request
        without the upgrade gets the Status that says why (the handshake's own body is not kept by aiohttp)."""
        try:
            return await self._get_session().ws_connect(self.url + path, params=query, protocols=protocols,
                                                        max_msg_size=0, autoping=True,
                                                        timeout=aiohttp.ClientWSTimeout(ws_close=5.0))
        except aiohttp.WSServerHandshakeError as exc:
            try:
                async with self._get_session().get(self.url + path, params=query, timeout=self._timeout) as answer:
                    body = await answer.read()
            except (aiohttp.ClientError, TimeoutError):
                body = b""
            raise status_error(exc.status, body) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransportError(f"GET {path}: {_describe(exc)}") from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class _HttpChunks:
    """The body of a streamed aiohttp response, chunk by chunk as they arrive (a class rather than an async
    generator, so nothing is left for the garbage collector to finalize when the stream is dropped)."""

    def __init__(self, response: aiohttp.ClientResponse, what: str) -> None:
        self._response = response
        self._what = what

    def __aiter__(self) -> _HttpChunks:
        return self

    async def __anext__(self) -> bytes:
        try:
            chunk = await self._response.content.readany()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransportError(f"{self._what}: {_describe(exc)}") from exc
        if not chunk:
            raise StopAsyncIteration
        return chunk


# -- responses ----------------------------------------------------------------------------------------------
def status_error(code: int, body: bytes) -> StatusError:
    """The StatusError for a failed response: from its Status when it has one, generic otherwise."""
    try:
        decoded = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return status_from_object(decoded, code)
    text = body.decode("utf-8", "replace").strip()
    reason = _GENERIC_REASONS.get(code, "InternalError" if code >= 500 else "BadRequest")
    return StatusError(code, reason, text or f"the server responded with HTTP {code}")


def status_from_object(status: Obj, default_code: int = 500) -> StatusError:
    code = status.get("code")
    code = code if isinstance(code, int) and code > 0 else default_code
    return StatusError(code, str(status.get("reason") or _GENERIC_REASONS.get(code, "Unknown")),
                       str(status.get("message") or ""), dict(status.get("details") or {}))


def _decode(response: Response) -> Obj:
    if not 200 <= response.status < 300:
        raise status_error(response.status, response.body)
    try:
        value = orjson.loads(response.body) if response.body else {}
    except orjson.JSONDecodeError as exc:
        raise StatusError(500, "InternalError", f"the server answered with invalid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise StatusError(500, "InternalError", "the server answered with JSON that is not an object")
    return value


class LineSplitter:
    """Turns arbitrary chunks into complete lines: a line split across chunks is held until its end arrives."""

    def __init__(self) -> None:
        self._partial = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        data = self._partial + chunk if self._partial else chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        return [line for line in lines if line.strip()]

    def finish(self) -> list[bytes]:
        """Whatever is left when the stream ends (a final line without its newline)."""
        rest, self._partial = self._partial, b""
        return [rest] if rest.strip() else []


# -- watches ------------------------------------------------------------------------------------------------
class WatchEvent(NamedTuple):
    type: str
    """ADDED, MODIFIED, DELETED or BOOKMARK (ERROR events are raised as StatusError)."""
    object: Obj


class Watch:
    """A watch: an async iterator of ``WatchEvent`` (unpackable as ``(type, object)``) that ends when the
    server ends the watch.

    Use it as ``async with client.watch(...) as events: async for type_, obj in events: ...``; the context
    manager closes the connection when the loop is left early. Iterating without it opens the watch on
    first use; then call ``aclose()`` when leaving early. An ERROR event raises StatusError (410 Expired when
    the starting resourceVersion is too old) and ends the watch.
    """

    def __init__(self, open_stream: Callable[[], Awaitable[StreamedResponse]],
                 decode: Callable[[bytes], Any] = orjson.loads) -> None:
        self._open_stream = open_stream
        self._decode = decode
        self._response: StreamedResponse | None = None
        self._splitter = LineSplitter()
        self._pending: deque[bytes] = deque()
        self._finished = False

    async def _open(self) -> StreamedResponse:
        if self._response is None:
            response = await self._open_stream()
            self._response = response
            if not 200 <= response.status < 300:
                try:
                    body = b"".join([chunk async for chunk in response.chunks])
                finally:
                    await self.aclose()
                raise status_error(response.status, body)
        return self._response

    async def __aenter__(self) -> Watch:
        await self._open()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> WatchEvent:
        if self._finished:
            raise StopAsyncIteration
        response = await self._open()
        while not self._pending:
            try:
                chunk = await response.chunks.__anext__()
            except StopAsyncIteration:
                self._pending = deque(self._splitter.finish())
                if not self._pending:
                    await self.aclose()
                    raise
                break
            except BaseException:
                await self.aclose()
                raise
            self._pending = deque(self._splitter.feed(chunk))
        line = self._pending.popleft()
        try:
            event = self._decode(line)
            kind, obj = event["type"], event["object"]
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            await self.aclose()
            raise StatusError(500, "InternalError", f"malformed watch event: {exc}") from None
        if kind == "ERROR":
            await self.aclose()
            raise status_from_object(obj if isinstance(obj, dict) else {})
        return WatchEvent(kind, obj)

    async def aclose(self) -> None:
        self._finished = True
        self._pending = deque()
        if self._response is not None:
            await self._response.close()


# -- the client ---------------------------------------------------------------------------------------------
def _selector(value: Selector) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    return ",".join(f"{k}={v}" for k, v in value.items()) or None


def _query(**params: Any) -> dict[str, str]:
    """Query parameters in Kubernetes' camelCase; None is left out, booleans are "true"/"false"."""
    out: dict[str, str] = {}
    for name, value in params.items():
        if value is None:
            continue
        head, *rest = name.rstrip("_").split("_")
        key = head + "".join(part.capitalize() for part in rest)
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


#: the registry owner of the resource types a client learns by discovery
DISCOVERED = "discovery"


def _discovered(group: str, version: str, entry: Mapping[str, Any]) -> ResourceType:
    """A resource type from a discovery document's APIResource (a plain strategy: the server applies the rules)."""
    from minik.api.strategy import Strategy

    strategy = Strategy()
    strategy.namespace_scoped = bool(entry.get("namespaced"))
    kind = str(entry.get("kind") or "")
    return ResourceType(group, version, kind, str(entry.get("name") or ""),
                        str(entry.get("singularName") or kind.lower()), bool(entry.get("namespaced")), strategy,
                        short_names=tuple(entry.get("shortNames") or ()), categories=tuple(entry.get("categories") or ()),
                        verbs=tuple(entry.get("verbs") or ()))


class Client:
    """Async client for the API: one per component, closed when the component stops.

    A namespaced resource needs a namespace for everything that names one object (from the argument or,
    for create and update, from the object's metadata); list and watch without one span all namespaces.
    """

    def __init__(self, transport: Transport, registry: Registry | None = None) -> None:
        """``registry``: the resource types names resolve to; by default a copy of the built-in ones, which
        ``discover`` extends with what the server serves besides (custom resources)."""
        if registry is None:
            from minik.api.resources import REGISTRY

            registry = REGISTRY.copy()
        self.transport = transport
        self.registry = registry

    @classmethod
    def http(cls, url: str, token: str | None = None, *, timeout_seconds: float = 60.0,
             registry: Registry | None = None, ssl: ssl_module.SSLContext | bool | None = None,
             agent: str = DEFAULT_USER_AGENT) -> Client:
        return cls(HttpTransport(url, token, timeout_seconds, ssl=ssl, agent=agent), registry)

    async def close(self) -> None:
        await self.transport.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    # -- discovery ------------------------------------------------------------------------------------------
    async def discover(self) -> bool:
        """Make the registry hold the resources the server serves beyond the ones it knows (the custom
        resources of CRDs), by legacy discovery, and no longer hold those that went; True when it changed. A
        client that shares the API server's own registry (in-process) finds nothing to add."""
        known = {(t.group, t.version, t.plural) for t in self.registry.types
                 if t not in self.registry.owned(DISCOVERED)}
        groups = await self._call("GET", "/apis")
        found: list[ResourceType] = []
        for group in groups.get("groups") or []:
            for version in group.get("versions") or []:
                name, gv = str(group.get("name") or ""), str(version.get("version") or "")
                if any(k[0] == name and k[1] == gv for k in known):
                    continue
                listed = await self._call("GET", f"/apis/{name}/{gv}")
                found.extend(_discovered(name, gv, entry) for entry in listed.get("resources") or []
                             if "/" not in str(entry.get("name") or ""))
        before = self.registry.generation
        old = {(t.group, t.version, t.plural, t.kind, t.namespaced, t.verbs) for t in self.registry.owned(DISCOVERED)}
        if old != {(t.group, t.version, t.plural, t.kind, t.namespaced, t.verbs) for t in found}:
            self.registry.replace(DISCOVERED, found)
        return self.registry.generation != before

    # -- paths ----------------------------------------------------------------------------------------------
    def resource(self, resource: Resource) -> ResourceType:
        """A ResourceType as given, or the one a name (plural, singular, kind, short name) resolves to."""
        if isinstance(resource, ResourceType):
            return resource
        resolved = self.registry.resolve(resource)
        if resolved is None:
            raise ValueError(f"unknown resource {resource!r}")
        return resolved

    def path(self, resource: Resource, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        """The URL path of a collection, an object or an object's subresource."""
        rt = self.resource(resource)
        path = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
        if namespace is not None:
            if not rt.namespaced:
                raise ValueError(f"{rt.group_resource} is not namespaced, but namespace {namespace!r} was given")
            path += f"/namespaces/{namespace}"
        elif rt.namespaced and name is not None:
            raise ValueError(f"{rt.group_resource} is namespaced: a namespace is needed for {name!r}")
        path += f"/{rt.plural}"
        if name is not None:
            if not name:
                raise ValueError("an object name cannot be empty")
            path += f"/{name}"
        if subresource is not None:
            path += f"/{subresource}"
        return path

    def _object_path(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None,
                     subresource: str | None = None) -> str:
        rt = self.resource(resource)
        meta = _meta(obj)
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("the object has no metadata.name")
        ns = (namespace or meta.get("namespace")) if rt.namespaced else None
        return self.path(rt, ns, name, subresource)

    def _collection_path(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None) -> str:
        rt = self.resource(resource)
        ns = (namespace or _meta(obj).get("namespace")) if rt.namespaced else None
        if rt.namespaced and not ns:
            raise ValueError(f"{rt.group_resource} is namespaced: a namespace is needed to create one")
        return self.path(rt, ns)

    async def _call(self, method: str, path: str, query: Mapping[str, str] | None = None, body: Any = None,
                    content_type: str = JSON) -> Obj:
        payload: bytes | None
        if body is None:
            payload = None
        elif isinstance(body, (bytes, bytearray)):
            payload = bytes(body)
        else:
            payload = orjson.dumps(body)
        for attempt in range(RETRIES_ON_TOO_MANY_REQUESTS + 1):
            response = await self.transport.request(method, path, query or {}, payload,
                                                    content_type if payload is not None else None)
            if response.status != 429 or attempt == RETRIES_ON_TOO_MANY_REQUESTS:
                break
            await asyncio.sleep(_retry_after(response.body))
        return _decode(response)

    # -- reads ----------------------------------------------------------------------------------------------
    async def get(self, resource: Resource, name: str, namespace: str | None = None, *,
                  subresource: str | None = None) -> Obj:
        """GET one object (or one of its subresources: ``subresource="scale"`` gives its autoscaling/v1 Scale)."""
        return await self._call("GET", self.path(resource, namespace, name, subresource))

    async def list(self, resource: Resource, namespace: str | None = None, *, label_selector: Selector = None,
                   field_selector: Selector = None, limit: int | None = None, continue_: str | None = None,
                   resource_version: str | None = None, resource_version_match: str | None = None,
                   timeout_seconds: int | None = None) -> Obj:
        """One page of a list: the decoded list with ``items`` and ``metadata`` (``resourceVersion``, and
        ``continue`` when there are more pages)."""
        query = _query(label_selector=_selector(label_selector), field_selector=_selector(field_selector),
                       limit=limit or None, continue_=continue_ or None, resource_version=resource_version,
                       resource_version_match=resource_version_match, timeout_seconds=timeout_seconds)
        return await self._call("GET", self.path(resource, namespace), query)

    async def list_all(self, resource: Resource, namespace: str | None = None, *, label_selector: Selector = None,
                       field_selector: Selector = None, page_size: int = 500) -> Obj:
        """Every item, fetched ``page_size`` at a time; all pages are read at the first page's revision.

        When the continue token expires mid-way (410: history was compacted), the list restarts without paging,
        as client-go's pager does. The result is one list whose metadata.resourceVersion is the snapshot's.
        """
        first = await self.list(resource, namespace, label_selector=label_selector, field_selector=field_selector,
                                limit=page_size)
        items: list[Obj] = list(first.get("items") or [])
        token = (first.get("metadata") or {}).get("continue")
        while token:
            try:
                page = await self.list(resource, namespace, label_selector=label_selector,
                                       field_selector=field_selector, limit=page_size, continue_=token)
            except StatusError as exc:
                if exc.code != 410:
                    raise
                return await self.list(resource, namespace, label_selector=label_selector,
                                       field_selector=field_selector)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
        metadata = {"resourceVersion": (first.get("metadata") or {}).get("resourceVersion", "")}
        return {"kind": first.get("kind", ""), "apiVersion": first.get("apiVersion", ""), "metadata": metadata,
                "items": items}

    def watch(self, resource: Resource, namespace: str | None = None, *, resource_version: str | None = None,
              timeout_seconds: int | None = None, allow_bookmarks: bool = False, label_selector: Selector = None,
              field_selector: Selector = None, send_initial_events: bool | None = None,
              decode: Callable[[bytes], Any] = orjson.loads) -> Watch:
        """Watch a collection from ``resource_version`` (events after it), or from now with the current
        objects first as ADDED when it is empty or None. See ``Watch`` for how to consume and close it.
        ``decode`` turns each line into its event (informers share decoded lines between them)."""
        path = self.path(resource, namespace)
        query = _query(watch=True, resource_version=resource_version or None, timeout_seconds=timeout_seconds,
                       allow_watch_bookmarks=allow_bookmarks or None, label_selector=_selector(label_selector),
                       field_selector=_selector(field_selector), send_initial_events=send_initial_events)
        return Watch(lambda: self.transport.stream("GET", path, query), decode)

    # -- writes ---------------------------------------------------------------------------------------------
    async def create(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None = None, *,
                     dry_run: bool = False) -> Obj:
        return await self._call("POST", self._collection_path(resource, obj, namespace),
                                _query(dry_run="All" if dry_run else None), obj)

    async def update(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None = None, *,
                     dry_run: bool = False, subresource: str | None = None) -> Obj:
        """PUT the whole object (or a subresource's view of it, such as its Scale). Its
        metadata.resourceVersion, when set, must be current (else 409 Conflict)."""
        return await self._call("PUT", self._object_path(resource, obj, namespace, subresource),
                                _query(dry_run="All" if dry_run else None), obj)

    async def update_status(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        """PUT to the status subresource: only the status changes."""
        return await self._call("PUT", self._object_path(resource, obj, namespace, "status"), None, obj)

    async def patch(self, resource: Resource, name: str, patch: Any, namespace: str | None = None, *,
                    content_type: str = MERGE_PATCH, field_manager: str | None = None, force: bool | None = None,
                    dry_run: bool = False, subresource: str | None = None) -> Obj:
        """Patch an object: a JSON merge patch (a dict) by default; pass ``content_type=JSON_PATCH`` with a
        list of operations, or another patch type. ``patch`` may also be the encoded bytes."""
        query = _query(field_manager=field_manager, force=force, dry_run="All" if dry_run else None)
        return await self._call("PATCH", self.path(resource, namespace, name, subresource), query, patch,
                                content_type)

    async def patch_status(self, resource: Resource, name: str, patch: Any, namespace: str | None = None, *,
                           content_type: str = MERGE_PATCH) -> Obj:
        return await self.patch(resource, name, patch, namespace, content_type=content_type, subresource="status")

    async def delete(self, resource: Resource, name: str, namespace: str | None = None, *,
                     grace_period_seconds: int | None = None, propagation_policy: str | None = None,
                     preconditions: Mapping[str, str] | None = None, dry_run: bool = False) -> Obj:
        """Delete with DeleteOptions. ``propagation_policy`` is "Foreground", "Background" or "Orphan";
        ``preconditions`` may hold ``uid`` and ``resourceVersion`` (409 Conflict when they do not match).

        Returns the server's answer: the object (still present while finalizers or grace run, or for kinds
        that return it) or a Success Status.
        """
        options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = dict(preconditions)
        if dry_run:
            options["dryRun"] = ["All"]
        return await self._call("DELETE", self.path(resource, namespace, name), None, options)

    async def delete_collection(self, resource: Resource, namespace: str | None = None, *,
                                label_selector: Selector = None, field_selector: Selector = None,
                                propagation_policy: str | None = None,
                                grace_period_seconds: int | None = None) -> Obj:
        """DELETE a collection (every object of a kind in a namespace, or those a selector picks) with
        DeleteOptions; returns the list of what was deleted or marked for deletion."""
        options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        query = _query(label_selector=_selector(label_selector), field_selector=_selector(field_selector))
        return await self._call("DELETE", self.path(resource, namespace), query, options)

    async def logs(self, pod: str, namespace: str, *, container: str | None = None, follow: bool = False,
                   tail_lines: int | None = None, since_seconds: int | None = None, timestamps: bool = False,
                   previous: bool = False, limit_bytes: int | None = None) -> StreamedResponse:
        """A container's output (pods/NAME/log), chunk by chunk as the node sends it; ``close`` it when done.
        StatusError when the server refuses (no such container, not started yet...)."""
        query = _query(container=container, follow=follow or None, tail_lines=tail_lines,
                       since_seconds=since_seconds, timestamps=timestamps or None, previous=previous or None,
                       limit_bytes=limit_bytes)
        response = await self.transport.stream("GET", self.path("pods", namespace, pod, "log"), query)
        if not 200 <= response.status < 300:
            try:
                body = b"".join([chunk async for chunk in response.chunks])
            finally:
                await response.close()
            raise status_error(response.status, body)
        return response

    async def exec_socket(self, pod: str, namespace: str, command: builtins.list[str], *, container: str | None = None,
                          stdin: bool = False, tty: bool = False,
                          protocols: tuple[str, ...] = ("v5.channel.k8s.io", "v4.channel.k8s.io")
                          ) -> aiohttp.ClientWebSocketResponse:
        """Start ``command`` in a container (pods/NAME/exec) and return the WebSocket that carries its streams
        (minik.api.remotecommand has the channels). Needs the HTTP transport."""
        websocket = getattr(self.transport, "websocket", None)
        if websocket is None:
            raise TransportError("exec needs an HTTP connection to the API server")
        query = [("command", part) for part in command] + [("stdout", "true")]
        query += [("stdin", "true")] if stdin else []
        query += [("tty", "true")] if tty else [("stderr", "true")]
        if container:
            query.append(("container", container))
        path = self.path("pods", namespace, pod, "exec")
        return await websocket(path, query, protocols)

    async def create_token(self, service_account: str, namespace: str, spec: Mapping[str, Any] | None = None) -> Obj:
        """Ask the TokenRequest API (serviceaccounts/NAME/token) for a token of the service account; ``spec`` may
        hold audiences, expirationSeconds and a boundObjectRef. The answer's ``status`` has the token and its
        expirationTimestamp."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": dict(spec or {})}
        return await self._call("POST", self.path("serviceaccounts", namespace, service_account, "token"), None, body)

    async def bind(self, pod: str, node: str, namespace: str, *, uid: str | None = None) -> Obj:
        """Bind a pod to a node (the scheduler's write): POST a Binding to pods/NAME/binding.
        ``uid`` makes the bind fail unless the pod is still the one the caller saw."""
        metadata: Obj = {"name": pod, "namespace": namespace}
        if uid:
            metadata["uid"] = uid
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": metadata,
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        return await self._call("POST", self.path("pods", namespace, pod, "binding"), None, binding)
