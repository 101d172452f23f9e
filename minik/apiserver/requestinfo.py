"""Turning a URL into what it asks for (Kubernetes' RequestInfo): verb, resource, namespace, name, subresource."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minik.api.errors import StatusError, not_found
from minik.api.registry import Registry, ResourceType


@dataclass(frozen=True)
class RequestInfo:
    verb: str
    resource: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None

    @property
    def key(self) -> str:
        assert self.name is not None
        return self.resource.key(self.namespace, self.name)


_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def no_route(path: str) -> StatusError:
    return StatusError(404, "NotFound", "the server could not find the requested resource", {"causes": [
        {"reason": "UnexpectedServerResponse", "message": f"404 page not found: {path}"}]})


def resolve(registry: Registry, method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """Parse ``/api/v1/...`` and ``/apis/GROUP/VERSION/...`` resource paths. 404 for an unknown resource; a
    subresource is any name here, so that the request is authorized before the server says it does not serve it
    (``no_route``), as Kubernetes authorizes ``pods/anything`` before routing it."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise no_route(path)
    watch_prefix = bool(rest) and rest[0] == "watch"
    if watch_prefix:
        rest = rest[1:]
    namespace: str | None = None
    # /namespaces/NS/PLURAL... is scoped to NS; /namespaces/NAME[/status|/finalize] is the namespace itself
    if len(rest) >= 3 and rest[0] == "namespaces" and (len(rest) > 3 or rest[2] not in ("status", "finalize")):
        namespace, rest = rest[1], rest[2:]
    if not rest:
        raise no_route(path)
    plural = rest[0]
    resource = registry.get(group, version, plural)
    if resource is None:
        raise no_route(path)
    name = rest[1] if len(rest) >= 2 else None
    subresource = rest[2] if len(rest) >= 3 else None
    if len(rest) > 3 and subresource != "proxy":  # a proxy's path goes on to the target's own
        raise no_route(path)
    if resource.namespaced and namespace is None and (name is not None or method not in ("GET",)):
        raise no_route(path)
    if not resource.namespaced and namespace is not None:
        raise no_route(path)
    if subresource == "proxy" and name is not None and method not in _VERBS:
        # every method goes through a proxy: HEAD is a get, the others their own verb, as Kubernetes names them
        return RequestInfo("get" if method == "HEAD" else method.lower(), resource, namespace, name, subresource)
    if method not in _VERBS:
        raise StatusError(405, "MethodNotAllowed", f"the server does not allow this method on the requested "
                          f"resource ({method})")
    verb = _VERBS[method]
    if name is None:
        if verb == "get":
            verb = "watch" if watch_prefix or query.get("watch") in ("true", "1") else "list"
        elif verb == "delete":
            verb = "deletecollection"
        elif verb != "create":
            raise StatusError(405, "MethodNotAllowed",
                              f"the server does not allow this method on the requested resource ({method})")
    else:
        if verb == "get" and subresource != "proxy" and (watch_prefix or query.get("watch") in ("true", "1")):
            verb = "watch"
        if verb == "create" and subresource is None:
            raise StatusError(405, "MethodNotAllowed",
                              "the server does not allow this method on the requested resource (POST)")
    return RequestInfo(verb, resource, namespace, name, subresource)


def not_found_for(info: RequestInfo) -> StatusError:
    return not_found(info.resource.plural, info.resource.group, info.name or "")
