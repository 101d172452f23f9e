"""The API server's request pipeline, independent of the transport.

authenticate -> resolve the path -> authorize -> decode -> admit -> validate -> store, each a replaceable stage.
Every failure becomes a Kubernetes Status; nothing a client sends can get past this function as an exception.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
import structlog

from minik.aio import start_task, stop_task
from minik.api.errors import (
    PATCH_MEDIA_TYPES,
    StatusError,
    Unauthorized,
    bad_request,
    internal,
    method_not_allowed,
    not_found,
    unsupported_media_type,
)
from minik.api.params import parse_int64
from minik.api.registry import Change, Registry, ResourceType
from minik.api.volumes import local_path_class
from minik.apiserver import codec, discovery, negotiation, scale, warnings
from minik.apiserver.admission import Admission, AdmissionPlugin, Authenticator, ObjectReader, default_plugins
from minik.apiserver.admission.priority import system_priority_classes
from minik.apiserver.admission.service_account import DEFAULT_SERVICE_ACCOUNT
from minik.apiserver.apiservices import GROUP as APISERVICES_GROUP
from minik.apiserver.apiservices import LocalAPIServices
from minik.apiserver.apply import Applier, FieldManager
from minik.apiserver.authorization import Authorizer, AuthzAttributes, Decision
from minik.apiserver.crds.controller import CrdController
from minik.apiserver.crds.conversion import CustomResourceCodec, HttpWebhooks
from minik.apiserver.crds.rest import CustomResourceRest
from minik.apiserver.eviction import Evictions
from minik.apiserver.fieldvalidation import DELETE_OPTIONS, FieldValidation, check_decodable
from minik.apiserver.httpproxy import HttpProxy
from minik.apiserver.limits import Lanes, Limits
from minik.apiserver.lists import list_body, parse_list_options, read_list
from minik.apiserver.openapi import OpenApi
from minik.apiserver.patch import json_patch, merge_patch, strategic_merge_patch
from minik.apiserver.podproxy import PodProxy
from minik.apiserver.portforward import port_forward
from minik.apiserver.request import ApiRequest, ApiResponse, User, created_status, success_status
from minik.apiserver.requestinfo import RequestInfo, no_route, resolve
from minik.apiserver.rest import ResourceRest
from minik.apiserver.services import (
    DEFAULT_NODE_PORT_RANGE,
    DEFAULT_SERVICE_CIDR,
    MASTER_NAMESPACE,
    MASTER_SERVICE,
    ServiceAllocations,
    master_endpoints,
)
from minik.apiserver.storeerrors import status_of
from minik.apiserver.watch import WatchStream
from minik.jsonbytes import dumps_kept
from minik.store import Record, Store, StoreError

log = structlog.get_logger("minik.apiserver")

Obj = dict[str, Any]

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
SYSTEM_USER = User("system:apiserver", ("system:masters",))
#: the group of requests that carry no credentials (authenticated as system:anonymous)
ANONYMOUS_GROUP = "system:unauthenticated"
#: raised as ``raise UNAUTHORIZED``: a class, so each refusal is a new error (see ``Unauthorized``)
UNAUTHORIZED = Unauthorized

#: a handler for a path outside the resource API (the node join): the request and its authenticated user
Extension = Callable[[ApiRequest, User], Awaitable[ApiResponse]]

#: a handler of one verb on a resource or subresource: the request as resolved and authorized, and its user
Handler = Callable[[RequestInfo, ApiRequest, User], Awaitable[ApiResponse]]
#: verb -> its handler
Routes = dict[str, Handler]


#: the pod subresources that write into a running pod whatever the HTTP method
_CONNECT_WRITES = ("exec", "attach", "portforward")


def forbidden_error(user: User, info: RequestInfo, reason: str) -> StatusError:
    """403 in Kubernetes' words: ``pods "x" is forbidden: User "u" cannot get resource "pods" in API group ""
    in the namespace "ns"`` (``at the cluster scope`` for cluster-scoped requests), then the reason if any."""
    resource = info.resource.plural + (f"/{info.subresource}" if info.subresource else "")
    where = f' in the namespace "{info.namespace}"' if info.namespace else " at the cluster scope"
    message = (f'User "{user.name}" cannot {info.verb} resource "{resource}" in API group '
               f'"{info.resource.group}"{where}') + (f": {reason}" if reason else "")
    what = info.resource.group_resource
    head = f'{what} "{info.name}" is forbidden' if info.name else f"{what} is forbidden"
    details: dict[str, Any] = {"kind": info.resource.plural}
    if info.name:
        details["name"] = info.name
    if info.resource.group:
        details["group"] = info.resource.group
    return StatusError(403, "Forbidden", f"{head}: {message}", details)


@dataclass(frozen=True)
class ApiSettings:
    address: str = "127.0.0.1:6443"
    """host:port clients reach this server at (advertised in /api)."""

    bookmark_interval_seconds: float = 30.0
    """How often an idle watch that allows bookmarks gets one."""

    service_cidr: str = DEFAULT_SERVICE_CIDR
    """The range Service cluster IPs come from (kube-apiserver's --service-cluster-ip-range)."""

    node_port_range: tuple[int, int] = DEFAULT_NODE_PORT_RANGE
    """The inclusive range of node ports (kube-apiserver's --service-node-port-range)."""

    limits: Limits = field(default_factory=Limits)
    """Concurrent requests per lane and connection timeouts."""

    kubelet_tls: Callable[[], ssl.SSLContext] | None = None
    """Makes the TLS context for relaying pods/log and pods/exec to kubelets: the API server's client certificate
    and the cluster CA (``minik.pki.kubelet.apiserver_client_context``); called on the first relay."""


class ApiServer:
    def __init__(self, store: Store, registry: Registry, settings: ApiSettings | None = None, *,
                 authenticator: Authenticator, authorizer: Authorizer,
                 admission_plugins: list[AdmissionPlugin] | None = None) -> None:
        """``authenticator`` and ``authorizer`` have no defaults: no request is let through unauthenticated."""
        self.store = store
        self.registry = registry
        self.settings = settings or ApiSettings()
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.reader = ObjectReader(store, registry)
        plugins = admission_plugins if admission_plugins is not None else default_plugins(self.reader)
        self.admission = Admission(plugins)
        self.rests = {(t.group, t.version, t.plural): ResourceRest(t, store, self.admission)
                      for t in registry.types if t.custom is None}
        self.services = ServiceAllocations(store, self.settings.service_cidr, self.settings.node_port_range)
        self.rests[("", "v1", "services")].hooks = self.services
        self.pod_proxy = PodProxy(self.reader, self.settings.kubelet_tls)
        self.http_proxy = HttpProxy(self.reader)
        #: keeps the local APIServices in step with the registry (set at bootstrap, synced again after each
        #: change of the registry by one task at a time: ``_sync_apiservices``)
        self.apiservices: LocalAPIServices | None = None
        self._apiservices_task: asyncio.Task[None] | None = None
        self._apiservices_stale = False
        self.ready = False
        self._static: dict[str, bytes] = {}
        self._static_generation = -1
        self.openapi = OpenApi(registry)
        #: calls CRDs' conversion webhooks
        self.webhooks = HttpWebhooks(self.reader)
        #: serves what CustomResourceDefinitions declare (started by ``start``)
        self.crds = CrdController(self)
        self._unsubscribe = registry.subscribe(self._registry_changed)
        #: non-resource paths served by other parts of the cluster (path -> handler), after authorization
        self.extensions: dict[str, Extension] = {}
        #: the routes of a resource or subresource served by another part of the cluster ((group, plural,
        #: subresource or None) -> its routes; see ``route``), in place of the ones every resource has
        self.routes: dict[tuple[str, str, str | None], Routes] = {}
        self._every_resource = self._routes_of_every_resource()
        self.lanes = Lanes(self.settings.limits)
        self._serve_events_view()

    def _serve_events_view(self) -> None:
        """events.k8s.io/v1 Events are the core/v1 ones, converted (minik.apiserver.eventsview)."""
        from minik.apiserver.eventsview import EventsView  # it builds on this module's helpers

        view, core = self.registry.get("events.k8s.io", "v1", "events"), self.registry.get("", "v1", "events")
        if view is not None and core is not None:
            EventsView(self, view, core).route()

    def start(self) -> None:
        """Serve the stored CustomResourceDefinitions' resources and follow the CRDs from now on."""
        self.crds.start()

    async def stop(self) -> None:
        self._unsubscribe()
        await self.crds.stop()
        await stop_task(self._apiservices_task)
        await self.webhooks.close()
        await self.http_proxy.close()

    def _registry_changed(self, change: Change) -> None:
        """Drop what was derived from resource types that are gone or changed (the next request makes it anew)."""
        _added, removed = change
        for resource in removed:
            key = (resource.group, resource.version, resource.plural)
            rest = self.rests.get(key)
            if rest is not None and rest.resource is resource:
                del self.rests[key]
        if self.apiservices is not None:
            self._apiservices_stale = True
            if self._apiservices_task is None or self._apiservices_task.done():
                self._apiservices_task = start_task(self._sync_apiservices(), name="apiservices sync")

    async def _sync_apiservices(self) -> None:
        """Sync the local APIServices until no registry change came in meanwhile (changes made during a sync
        are taken by the next round, never lost)."""
        while self._apiservices_stale and self.apiservices is not None:
            self._apiservices_stale = False
            try:
                await self.apiservices.sync()
            except StatusError as exc:  # a write lost to a concurrent one: the next change syncs again
                log.warning("the local APIServices were not synced", error=str(exc))

    @property
    def static_documents(self) -> dict[str, bytes]:
        """The discovery documents (and /version), made again when the registry changed."""
        if self._static_generation != self.registry.generation:
            self._static = self._discovery_documents()
            self._static_generation = self.registry.generation
        return self._static

    def _discovery_documents(self) -> dict[str, bytes]:
        docs: dict[str, Any] = {
            "/version": discovery.version_info(),
            "/api": discovery.api_versions(self.settings.address),
            "/apis": discovery.api_group_list(self.registry),
        }
        for group, versions in self.registry.group_versions().items():
            for version in versions:
                path = f"/apis/{group}/{version}" if group else f"/api/{version}"
                docs[path] = discovery.resource_list(self.registry, group, version)
            if group:
                docs[f"/apis/{group}"] = discovery.api_group(group, versions)
        return {path: dumps_kept(doc) for path, doc in docs.items()}

    async def bootstrap(self) -> None:
        """Create the namespaces every cluster has (each with its ``default`` service account), the system
        priority classes and the default StorageClass ``local-path``, repair the Service allocations, then report ready.

        The service account controller makes ``default`` in every namespace; making it here too for the system
        namespaces lets a cluster without controllers (`minik up --disable controllers`, most tests) run pods in
        them, since the ServiceAccount admission plugin refuses a pod whose service account does not exist."""
        namespaces = self.rests[("", "v1", "namespaces")]
        accounts = self.rests[("", "v1", "serviceaccounts")]
        admin = SYSTEM_USER
        for name in SYSTEM_NAMESPACES:
            for rest, namespace in ((namespaces, None), (accounts, name)):
                obj_name = name if namespace is None else DEFAULT_SERVICE_ACCOUNT
                if self.store.get(rest.resource.key(namespace, obj_name)) is None:
                    try:
                        await rest.create({"metadata": {"name": obj_name}}, namespace, admin)
                    except StatusError as exc:
                        if exc.reason != "AlreadyExists":
                            raise
        classes = self.rests[("scheduling.k8s.io", "v1", "priorityclasses")]
        for pc in system_priority_classes():
            if self.store.get(classes.resource.key(None, pc["metadata"]["name"])) is None:
                try:
                    await classes.create(pc, None, admin)
                except StatusError as exc:
                    if exc.reason != "AlreadyExists":
                        raise
        storage_classes = self.rests.get(("storage.k8s.io", "v1", "storageclasses"))
        if storage_classes is not None:  # the built-in provisioner's class, the default (minik.api.volumes)
            sc = local_path_class()
            if self.store.get(storage_classes.resource.key(None, sc["metadata"]["name"])) is None:
                try:
                    await storage_classes.create(sc, None, admin)
                except StatusError as exc:
                    if exc.reason != "AlreadyExists":
                        raise
        apiservices = self.rests.get((APISERVICES_GROUP, "v1", "apiservices"))
        if apiservices is not None:
            self.apiservices = LocalAPIServices(apiservices, self.registry, admin)
            await self.apiservices.sync()
        services = self.rests[("", "v1", "services")]
        listed = await self.store.list(services.resource.prefix())
        await self.services.repair([record.object() for record in listed.items])
        self.ready = True

    async def publish_master_service(self, ip: str, port: int) -> None:
        """Create or bring up to date the `kubernetes` Service in `default` and its Endpoints, pointing at this
        server (``ip``:``port``), as Kubernetes' master endpoint reconciler does at every start."""
        services = self.rests[("", "v1", "services")]
        endpoints = self.rests[("", "v1", "endpoints")]
        wanted = self.services.master_service(port)
        record = self.store.get(services.resource.key(MASTER_NAMESPACE, MASTER_SERVICE))
        try:
            if record is None:
                await services.create(wanted, MASTER_NAMESPACE, SYSTEM_USER)
            elif record.object()["spec"].get("ports") != wanted["spec"]["ports"]:
                def set_ports(current: Obj) -> Obj:
                    current["spec"]["ports"] = wanted["spec"]["ports"]
                    return current
                await services.patch(MASTER_NAMESPACE, MASTER_SERVICE, set_ports, SYSTEM_USER)
            body = master_endpoints(ip, port)
            current = self.store.get(endpoints.resource.key(MASTER_NAMESPACE, MASTER_SERVICE))
            if current is None:
                await endpoints.create(body, MASTER_NAMESPACE, SYSTEM_USER)
            elif current.object().get("subsets") != body["subsets"]:
                def set_subsets(obj: Obj) -> Obj:
                    obj["subsets"] = body["subsets"]
                    return obj
                await endpoints.patch(MASTER_NAMESPACE, MASTER_SERVICE, set_subsets, SYSTEM_USER)
        except StatusError as exc:  # say so, and serve anyway: the cluster is usable without it
            log.error("cannot publish the kubernetes service", error=exc.message)

    # -- entry point ---------------------------------------------------------------------------------------
    async def handle(self, request: ApiRequest) -> ApiResponse:
        collecting = warnings.collect()
        response = await self._handle_safely(request)
        warnings.finish(collecting, response.headers)
        return response

    async def _handle_safely(self, request: ApiRequest) -> ApiResponse:
        try:
            return await self._handle(request)
        except StatusError as exc:
            return ApiResponse.error(exc)
        except StoreError as exc:  # outside a resource request (a handler's store errors are mapped in _handle)
            return ApiResponse.error(status_of(exc, None, ""))
        except Exception as exc:  # a bug: log it, answer a Status, keep serving
            log.exception("request failed", method=request.method, path=request.path)
            return ApiResponse.error(internal(type(exc).__name__))

    async def _handle(self, request: ApiRequest) -> ApiResponse:
        path = "/" + request.path.strip("/")
        if path in ("/healthz", "/livez", "/readyz") or path.startswith(("/healthz/", "/livez/", "/readyz/")):
            return self._health(path)
        if path == "/version" and request.method in ("GET", "HEAD"):  # public, as system:public-info-viewer
            return ApiResponse.raw(self.static_documents[path])
        user = await self.authenticator.authenticate(request)
        if user is None:
            raise UNAUTHORIZED
        extension = self.extensions.get(path)
        if extension is not None:
            await self._authorize_path(user, request.method, path)
            return await extension(request, user)
        static = self.static_documents.get(path)
        if static is not None and request.method in ("GET", "HEAD"):
            await self._authorize_path(user, request.method, path)
            if path in ("/api", "/apis"):
                aggregated = discovery.wants_aggregated(request.headers.get("Accept"))
                if aggregated is not None:
                    return discovery.aggregated_response(self.registry, path == "/api", aggregated)
            return ApiResponse.raw(static)
        if path == "/" or (self.openapi.handles(path) and request.method in ("GET", "HEAD")):
            await self._authorize_path(user, request.method, path)
            if path == "/":
                return ApiResponse.json({"paths": sorted(self.static_documents)})
            return self.openapi.respond(path)
        info = resolve(self.registry, request.method, path, request.query)
        attrs = AuthzAttributes.for_request(info)
        decision, reason = await self.authorizer.authorize(user, attrs)
        if decision is Decision.ALLOW and info.verb == "get" and info.subresource in _CONNECT_WRITES and \
                info.resource.group == "" and info.resource.plural == "pods":
            # exec, attach and port-forward over a WebSocket arrive as GETs, but they write into the pod: they need
            # `create` too (as Kubernetes' AuthorizePodWebsocketUpgradeCreatePermission requires), so that a role
            # granting `get` on everything (the garbage collector's) cannot run commands in pods
            decision, reason = await self.authorizer.authorize(user, dataclasses.replace(attrs, verb="create"))
            if decision is not Decision.ALLOW:
                info = dataclasses.replace(info, verb="create")
        if decision is not Decision.ALLOW:
            if ANONYMOUS_GROUP in user.groups:
                raise UNAUTHORIZED
            raise forbidden_error(user, info, reason)
        lane = self.lanes.lane(user, info)
        self.lanes.acquire(lane)  # a counter, not a context manager: this runs for every request
        try:
            return await self._handler(info, request)(info, request, user)
        except StoreError as exc:  # the object changed or went between the handler's read and its write
            raise status_of(exc, info.resource, info.name or "") from None
        finally:
            self.lanes.release(lane)

    async def _authorize_path(self, user: User, method: str, path: str) -> None:
        """A non-resource request (discovery, OpenAPI, the node join): 401 for anonymous, else 403 when denied."""
        decision, reason = await self.authorizer.authorize(user, AuthzAttributes.for_path(method, path))
        if decision is Decision.ALLOW:
            return
        if ANONYMOUS_GROUP in user.groups:
            raise UNAUTHORIZED
        verb = AuthzAttributes.for_path(method, path).verb
        raise StatusError(403, "Forbidden", f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
                          + (f": {reason}" if reason else ""), {})

    def _health(self, path: str) -> ApiResponse:
        ok = self.ready or not path.startswith("/readyz")
        return ApiResponse(200 if ok else 503, b"ok" if ok else b"not ready", content_type="text/plain")

    def rest(self, resource: ResourceType) -> ResourceRest:
        """The writes of ``resource``; those of a custom resource are made on first use after each change of its
        CRD."""
        key = (resource.group, resource.version, resource.plural)
        rest = self.rests.get(key)
        if rest is None or (rest.resource is not resource and resource.custom is not None):
            if resource.custom is None:
                raise KeyError(key)
            rest = self.rests[key] = CustomResourceRest(resource, self.store, self.admission, self.webhooks)
        return rest

    # -- routing ---------------------------------------------------------------------------------------------
    def _handler(self, info: RequestInfo, request: ApiRequest) -> Handler:
        """The handler of the request's verb on its resource or subresource (the resource's own routes, else the
        ones every resource has), after the checks every request gets."""
        _dry_run(request.query)  # a bad dryRun is refused whatever the verb
        resource, sub = info.resource, info.subresource
        if sub is not None and sub not in resource.subresources:
            raise no_route(request.path)
        if sub is not None and sub not in discovery.SERVED_SUBRESOURCES:
            raise not_found(f"{resource.plural}/{sub}", resource.group, info.name or "")
        if sub is None and info.verb not in resource.verbs:
            raise _method_not_allowed(request)
        if resource.custom is not None and resource.custom.warning:
            warnings.add_warning(resource.custom.warning)
        routes = self.routes.get((resource.group, resource.plural, sub)) or self._every_resource[sub]
        handler = routes.get(info.verb)
        if handler is None:
            raise _method_not_allowed(request)
        return handler

    def route(self, group: str, plural: str, subresource: str | None, verb: str, handler: Handler) -> None:
        """Serve ``verb`` on a resource or subresource with a handler of another part of the cluster
        (serviceaccounts/token, the access reviews). Its other verbs are then refused (405) unless routed too."""
        self.routes.setdefault((group, plural, subresource), {})[verb] = handler

    def _routes_of_every_resource(self) -> dict[str | None, Routes]:
        """The handler of each verb on an object (None) and on each subresource the server serves."""
        objects: Routes = {"get": self._get, "list": self._list, "watch": self._watch, "create": self._create,
                           "update": self._update, "patch": self._patch, "delete": self._delete,
                           "deletecollection": self._delete_collection}
        # a subresource without routes of its own (status, finalize) reads, writes and deletes the object
        plain: Routes = {"get": self._get, "watch": self._watch, "create": self._create_subresource,
                         "update": self._update, "patch": self._patch, "delete": self._delete}
        proxied: Routes = dict.fromkeys(("get", "watch", "create", "update", "patch", "delete"), self._pod_proxy)
        forwarded: Routes = dict.fromkeys(("get", "create"), self._port_forward)
        http_proxied: Routes = dict.fromkeys(("get", "create", "update", "patch", "delete", "options"),
                                             self._http_proxy)
        routes: dict[str | None, Routes] = dict.fromkeys(discovery.SERVED_SUBRESOURCES, plain)
        routes.update({None: objects,
                       "binding": {"get": self._get, "watch": self._watch, "create": self._bind},
                       "eviction": {"get": self._get, "watch": self._watch, "create": self._evict},
                       "scale": {"get": self._get_scale, "update": self._update_scale, "patch": self._patch_scale},
                       "log": proxied, "exec": proxied, "portforward": forwarded, "proxy": http_proxied,
                       "attach": proxied,
                       # a Pod whose spec.ephemeralContainers alone may change (minik.api.kinds.ephemeral)
                       "ephemeralcontainers": {"get": self._get, "update": self._update, "patch": self._patch}})
        return routes

    # -- reads -----------------------------------------------------------------------------------------------
    async def _get(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        writer = negotiation.writer_for(info.resource, request)
        rest = self.rest(info.resource)
        raw = await rest.present(rest.record(info.namespace, info.name or ""))
        return ApiResponse.raw(writer.object(raw) if writer else raw)

    async def _list(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        writer = negotiation.writer_for(info.resource, request)
        items, meta = await read_list(self.store, info.resource, info.namespace,
                                      parse_list_options(request.query, info.resource))
        raws = await self.rest(info.resource).present_all([r.raw for r in items])
        return ApiResponse.raw(writer.list(raws, meta) if writer else list_body(info.resource, raws, meta))

    async def _watch(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        writer = negotiation.writer_for(info.resource, request, watch=True)
        stream = WatchStream(self.store, info.resource, info.namespace,
                             parse_list_options(request.query, info.resource, info.name),
                             self.settings.bookmark_interval_seconds)
        await stream.open()
        resource_codec = self.rest(info.resource).codec
        lines = stream.lines()
        if isinstance(resource_codec, CustomResourceCodec) and not resource_codec.identity:
            lines = resource_codec.watch(lines)  # each event's object is converted
            return ApiResponse(200, stream=writer.watch(lines) if writer else lines)
        if writer:
            return ApiResponse(200, stream=writer.watch(lines))
        return ApiResponse(200, stream=lines, direct=stream.attach)

    # -- writes ----------------------------------------------------------------------------------------------
    async def _create(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        content_type = request.headers.get("Content-Type")
        body = codec.decode_object(request.body, content_type)
        fields = FieldValidation(info.resource, request.query, info.verb)
        body = fields.object(body, request.body, content_type)
        rest = self.rest(info.resource)
        created = await rest.create(body, info.namespace, user, _dry_run(request.query),
                                    FieldManager.for_request(info.resource, request, info.verb, None))
        return await _object_response(rest, created, 201, fields.headers)

    async def _create_subresource(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        """A POST to a subresource that takes none: the body is decoded first, as for any create."""
        codec.decode_object(request.body, request.headers.get("Content-Type"))
        raise not_found(f"{info.resource.plural}/{info.subresource}", info.resource.group, info.name or "")

    async def _update(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        content_type = request.headers.get("Content-Type")
        body = codec.decode_object(request.body, content_type)
        fields = FieldValidation(info.resource, request.query, info.verb)
        body = fields.object(body, request.body, content_type)
        rest = self.rest(info.resource)
        updated = await rest.update(body, info.namespace, info.name or "", user, info.subresource,
                                    _dry_run(request.query),
                                    FieldManager.for_request(info.resource, request, info.verb, info.subresource))
        return await _object_response(rest, updated, 200, fields.headers)

    async def _patch(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        fields = FieldValidation(info.resource, request.query, info.verb)
        content_type = request.headers.get("Content-Type")
        rest, sub, dry_run = self.rest(info.resource), info.subresource, _dry_run(request.query)
        if codec.media_type(content_type) == codec.APPLY_PATCH:  # server-side apply, which may create
            config = codec.decode_object(request.body, content_type)
            applier = Applier.for_apply(info.resource, request, sub, config)
            applier.config = fields.object(applier.config, request.body, content_type)
            result, status = await applier.run(rest, info.namespace, info.name or "", user, dry_run)
            return await _object_response(rest, result, status, fields.headers)
        apply = fields.patcher(_patcher(request.body, content_type, info.resource), request.body, content_type)
        patched = await rest.patch(info.namespace, info.name or "", apply, user, sub, dry_run,
                                   FieldManager.for_request(info.resource, request, info.verb, sub),
                                   pure=codec.media_type(content_type) in _PURE_PATCHES)
        return await _object_response(rest, patched, 200, fields.headers)

    async def _delete(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        options = _delete_options(request.body, request.headers.get("Content-Type"), request.query)
        rest = self.rest(info.resource)
        obj, gone = await rest.delete(info.namespace, info.name or "", options, user)
        if gone and not info.resource.strategy.return_deleted_object:
            uid = obj.get("metadata", {}).get("uid")
            return ApiResponse.of_status(success_status(info.name or "", info.resource.group, info.resource.plural,
                                                        uid))
        accepted = not gone and options.get("orphanDependents") is False  # 202 only for this, as Kubernetes
        return ApiResponse.raw((await rest.present_all([orjson.dumps(obj)]))[0], 202 if accepted else 200)

    async def _delete_collection(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        rest = self.rest(info.resource)
        options = _delete_options(request.body, request.headers.get("Content-Type"), request.query)
        items, _ = await read_list(self.store, info.resource, info.namespace,
                                   parse_list_options(request.query, info.resource))
        # every item is checked first (admission, preconditions) as a dry run: a refused deletecollection
        # deletes nothing, rather than whatever came before the item that was refused
        dry = {**options, "dryRun": ["All"]}
        for record in items:
            meta = record.object().get("metadata", {})
            try:
                await rest.delete(meta.get("namespace"), meta.get("name", ""), dry, user)
            except StatusError as exc:
                if exc.code != 404:
                    raise
        deleted = []
        for record in items:
            meta = record.object().get("metadata", {})
            try:
                gone_obj, _ = await rest.delete(meta.get("namespace"), meta.get("name", ""), options, user)
            except StatusError as exc:
                if exc.code != 404:
                    raise
                continue
            deleted.append(orjson.dumps(gone_obj))
        deleted = await rest.present_all(deleted)
        return ApiResponse.raw(list_body(info.resource, deleted, {"resourceVersion": str(self.store.revision)}))

    # -- subresources ----------------------------------------------------------------------------------------
    async def _bind(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        body = codec.decode_object(request.body, request.headers.get("Content-Type"))
        await self.rest(info.resource).bind(info.namespace or "", info.name or "", body, user)
        return ApiResponse.of_status(created_status(), 201)

    async def _evict(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        body = codec.decode_object(request.body, request.headers.get("Content-Type"))
        budgets = self.rests[("policy", "v1", "poddisruptionbudgets")]
        status, code = await Evictions(self.rest(info.resource), budgets).evict(
            info.namespace or "", info.name or "", body, user, _dry_run(request.query))
        return ApiResponse.of_status(status, code)

    async def _pod_proxy(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        return await self.pod_proxy.handle(info, request)

    async def _port_forward(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        pod = self.reader.get("", "v1", "pods", info.namespace, info.name or "")
        if pod is None:
            raise not_found("pods", "", info.name or "")
        return port_forward(self.pod_proxy, pod, request)

    async def _http_proxy(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        return await self.http_proxy.handle(info, request)

    async def _get_scale(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        """NAME/scale: the Scale view of the object's replicas."""
        rest = self.rest(info.resource)
        record = rest.record(info.namespace, info.name or "")
        return ApiResponse.json(scale.to_scale(info.resource, await rest.current(record)))

    async def _update_scale(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        body = codec.decode_object(request.body, request.headers.get("Content-Type"))
        resource, name = info.resource, info.name or ""
        return await self._scale(info, request, user, lambda current: scale.scaled(resource, current, body, name))

    async def _patch_scale(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        content_type = request.headers.get("Content-Type")
        accepted = tuple(t for t in PATCH_MEDIA_TYPES if t != codec.APPLY_PATCH)
        if codec.media_type(content_type) == codec.APPLY_PATCH:
            raise unsupported_media_type(codec.APPLY_PATCH, accepted)
        patch = _patcher(request.body, content_type, info.resource, accepted)
        return await self._scale(info, request, user, scale.patched_scale(info.resource, patch, info.name or ""))

    async def _scale(self, info: RequestInfo, request: ApiRequest, user: User, apply: Callable[[Obj], Obj]
                     ) -> ApiResponse:
        """Write the object as ``apply`` changes it through its Scale view, and answer that view."""
        resource = info.resource
        rest = self.rest(resource)
        result = await rest.patch(info.namespace, info.name or "", apply, user, None, _dry_run(request.query),
                                  FieldManager.for_request(resource, request, info.verb, "scale"))
        obj = orjson.loads(await rest.present(result)) if isinstance(result, Record) else result
        return ApiResponse.json(scale.to_scale(resource, obj))


def _method_not_allowed(request: ApiRequest) -> StatusError:
    return method_not_allowed(f"the server does not allow this method on the requested resource ({request.method})")


async def _object_response(rest: ResourceRest, result: Record | Obj, status: int = 200,
                           headers: dict[str, str] | None = None) -> ApiResponse:
    response = ApiResponse.raw(await rest.present(result, written=True), status)
    response.headers.update(headers or {})
    return response


def _dry_run(query: Mapping[str, str]) -> bool:
    value = query.get("dryRun")
    if value in (None, ""):
        return False
    if value != "All":
        raise bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return True


#: patch types whose functions build a new object and never change the one they are given
_PURE_PATCHES = (codec.MERGE_PATCH, codec.STRATEGIC_MERGE_PATCH)


def _patcher(body: bytes, content_type: str | None, resource: ResourceType,
             accepted: tuple[str, ...] = PATCH_MEDIA_TYPES) -> Any:
    kind = codec.media_type(content_type)
    if kind == codec.STRATEGIC_MERGE_PATCH and resource.custom is not None:
        # custom resources have no Go types to carry patch strategies: Kubernetes refuses strategic merge patches
        raise unsupported_media_type(kind, tuple(t for t in accepted if t != codec.STRATEGIC_MERGE_PATCH))
    if kind == codec.STRATEGIC_MERGE_PATCH:
        patch = codec.decode(body, content_type)
        return lambda current: strategic_merge_patch(current, patch, resource.kind)
    if kind == codec.MERGE_PATCH:
        patch = codec.decode(body, content_type)
        if not isinstance(patch, dict):
            raise bad_request("a merge patch must be a JSON object")
        return lambda current: merge_patch(current, patch)
    if kind == codec.JSON_PATCH:
        operations = codec.decode(body, content_type)
        return lambda current: json_patch(current, operations)
    raise unsupported_media_type(kind, accepted)


_DELETE_QUERY_INTS = ("gracePeriodSeconds",)


def _delete_options(body: bytes, content_type: str | None, query: Mapping[str, str]) -> Obj:
    options: Obj = {}
    if body.strip():
        decoded = codec.decode(body, content_type)
        if not isinstance(decoded, dict):
            raise bad_request("DeleteOptions must be a JSON object")
        overflow = check_decodable(decoded, DELETE_OPTIONS)
        if overflow is not None:  # Kubernetes answers its decode error as a 500; a client's mistake is a 400
            raise bad_request(overflow.message)
        options = decoded
    for name in _DELETE_QUERY_INTS:
        if query.get(name) not in (None, ""):
            options[name] = parse_int64(name, query[name])
    if query.get("propagationPolicy"):
        options["propagationPolicy"] = query["propagationPolicy"]
    if query.get("orphanDependents") in ("true", "false"):
        options["orphanDependents"] = query["orphanDependents"] == "true"
    if _dry_run(query):
        options["dryRun"] = ["All"]
    grace = options.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
        raise bad_request("gracePeriodSeconds must be an integer")
    preconditions = options.get("preconditions")
    if preconditions is not None and not isinstance(preconditions, dict):
        raise bad_request("preconditions must be an object")
    return options
