"""OpenAPI v3 documents (``/openapi/v3`` and ``/openapi/v3/<group-version>``), built lazily from the registry and
minik/api/schema.json.

kubectl reads them to decide whether the server validates fields itself (a PATCH operation tagged with the kind's
``x-kubernetes-group-version-kind`` that lists a ``fieldValidation`` parameter: then ``create``/``apply`` send
``fieldValidation=Strict`` instead of validating client-side against ``/openapi/v2``), and ``kubectl explain``
walks ``components.schemas``. ``/openapi/v2`` (protobuf only) is not served.
"""

from __future__ import annotations

import hashlib
from typing import Any

from minik.api import schema
from minik.api.errors import StatusError
from minik.api.registry import Registry, ResourceType
from minik.apiserver.discovery import KUBERNETES_MAJOR, KUBERNETES_MINOR, served_subresources
from minik.apiserver.request import ApiResponse
from minik.jsonbytes import dumps_kept

Obj = dict[str, Any]

ROOT = "/openapi/v3"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_COMMON = [f"{_META}.Status", f"{_META}.DeleteOptions"]
BINDING = "io.k8s.api.core.v1.Binding"

# PATCH request bodies list the patch types minik applies, except strategic merge patch: kubectl computes a
# strategic patch from OpenAPI v3 when it is listed there, and these schemas carry no patch merge keys, so kubectl
# would send lists whole. Without it kubectl uses the merge keys compiled into it, as it does for any server
# without OpenAPI v2.
_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")


def _query(name: str, description: str, type_: str = "string") -> Obj:
    return {"name": name, "in": "query", "description": description, "schema": {"type": type_, "uniqueItems": True}}


_DRY_RUN = _query("dryRun", "When present, indicates that modifications should not be persisted. Valid values: All.")
_FIELD_MANAGER = _query("fieldManager", "fieldManager is a name associated with the actor or entity that is making "
                        "these changes.")
_FIELD_VALIDATION = _query("fieldValidation", "fieldValidation instructs the server on how to handle objects in the "
                           "request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: "
                           "Ignore, Warn (the default) and Strict.")
_WRITE_PARAMS = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
_LIST_PARAMS = [
    _query("allowWatchBookmarks", "allowWatchBookmarks requests watch events with type \"BOOKMARK\".", "boolean"),
    _query("continue", "The continue option should be set when retrieving more results from the server."),
    _query("fieldSelector", "A selector to restrict the list of returned objects by their fields."),
    _query("labelSelector", "A selector to restrict the list of returned objects by their labels."),
    _query("limit", "limit is a maximum number of responses to return for a list call.", "integer"),
    _query("resourceVersion", "resourceVersion sets a constraint on what resource versions a request may be served "
           "from."),
    _query("resourceVersionMatch", "resourceVersionMatch determines how resourceVersion is applied to list calls."),
    _query("timeoutSeconds", "Timeout for the list/watch call.", "integer"),
    _query("watch", "Watch for changes to the described resources and return them as a stream of add, update, and "
           "remove notifications.", "boolean"),
]


def _ref(name: str) -> Obj:
    return {"$ref": f"#/components/schemas/{name}"}


def _json_response(description: str, type_name: str) -> Obj:
    return {"description": description, "content": {"application/json": {"schema": _ref(type_name)}}}


def property_schema(encoded: str, description: str = "") -> Obj:
    """One field of schema.json as an OpenAPI v3 schema (references wrapped in allOf, as Kubernetes does)."""
    out: Obj
    if encoded.startswith("[]"):
        out = {"type": "array", "items": property_schema(encoded[2:])}
    elif encoded.startswith("{}"):
        out = {"type": "object", "additionalProperties": property_schema(encoded[2:])}
    elif encoded.startswith("@"):
        out = {"allOf": [_ref(encoded[1:])]} if description else _ref(encoded[1:])
    elif encoded in ("int-or-string", "quantity"):
        name = INT_OR_STRING if encoded == "int-or-string" else QUANTITY
        out = {"allOf": [_ref(name)]} if description else _ref(name)
    elif encoded == "date-time":
        out = {"type": "string", "format": "date-time"}
    elif encoded == "byte":
        out = {"type": "string", "format": "byte"}
    elif encoded == "any":
        out = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    elif encoded in ("int32", "int64"):
        out = {"type": "integer", "format": encoded}
    elif encoded == "number":
        out = {"type": "number", "format": "double"}
    else:
        out = {"type": encoded}
    if description:
        out["description"] = description
    return out


def type_schema(t: schema.TypeSchema, gvks: list[Obj]) -> Obj:
    out: Obj = {"description": t.description, "type": "object",
                "properties": {name: property_schema(p.type, p.description) for name, p in t.properties.items()}}
    if t.required:
        out["required"] = list(t.required)
    if gvks:
        out["x-kubernetes-group-version-kind"] = gvks
    return out


class OpenApi:
    """The v3 root and per-group-version documents, rendered once and served as bytes. A change of the registry
    (a CRD created, changed or deleted) renders again the documents of the group-versions it touched."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._documents: dict[str, bytes] | None = None
        self._generation = -1
        #: group-version path -> (the identities of its resource types, its document)
        self._made: dict[str, tuple[tuple[int, ...], bytes]] = {}
        self._root: bytes = b""

    def _build(self) -> dict[str, bytes]:
        if self._documents is None or self._generation != self.registry.generation:
            generation = self.registry.generation
            documents: dict[str, bytes] = {}
            made: dict[str, tuple[tuple[int, ...], bytes]] = {}
            for group, versions in self.registry.group_versions().items():
                for version in versions:
                    path = f"apis/{group}/{version}" if group else f"api/{version}"
                    identity = tuple(id(t) for t in self.registry.in_group_version(group, version))
                    before = self._made.get(path)
                    body = before[1] if before is not None and before[0] == identity else \
                        dumps_kept(self.group_version_document(group, version))
                    made[path] = (identity, body)
                    documents[path] = body
            paths = {path: {"serverRelativeURL": f"{ROOT}/{path}?hash={document_hash(body)}"}
                     for path, body in documents.items()}
            self._root = dumps_kept({"paths": paths})
            self._documents, self._made, self._generation = documents, made, generation
        return self._documents

    def root(self) -> bytes:
        self._build()
        return self._root

    def document(self, group_version_path: str) -> bytes | None:
        """The document of ``api/v1`` or ``apis/GROUP/VERSION``; None when no such group-version is served."""
        return self._build().get(group_version_path.strip("/"))

    def group_version_document(self, group: str, version: str) -> Obj:
        s = schema.load()
        resources = self.registry.in_group_version(group, version)
        paths: Obj = {}
        roots: list[str] = list(_COMMON)
        gvks: dict[str, list[Obj]] = {}
        custom: Obj = {}
        for resource in resources:
            if resource.custom is not None:
                custom_type, custom_list = custom_type_names(resource)
                custom.update(custom_schemas(resource))
                roots.extend((f"{_META}.ObjectMeta", f"{_META}.ListMeta"))
                paths.update(resource_paths(resource, custom_type, custom_list))
                continue
            type_name = s.type_of_kind(resource.api_version, resource.kind)
            list_name = s.type_of_kind(resource.api_version, resource.kind_list)
            if type_name is None:
                continue
            roots.append(type_name)
            gvks[type_name] = [{"group": group, "kind": resource.kind, "version": version}]
            if list_name is not None:
                roots.append(list_name)
                gvks[list_name] = [{"group": group, "kind": resource.kind_list, "version": version}]
            paths.update(resource_paths(resource, type_name, list_name or type_name))
            if "binding" in served_subresources(resource):
                roots.append(BINDING)
        schemas = {name: type_schema(s.types[name], gvks.get(name, [])) for name in s.reachable(roots)}
        schemas.update(custom)
        schemas[INT_OR_STRING] = {"description": "IntOrString is a type that can hold an int32 or a string.",
                                  "type": "string", "format": "int-or-string"}
        schemas[QUANTITY] = {"description": "Quantity is a fixed-point representation of a number: a string such as "
                                            "\"500m\" or \"1Gi\", or a JSON number.",
                             "oneOf": [{"type": "string"}, {"type": "number"}]}
        title_version = f"v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0"
        return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": title_version},
                "paths": paths, "components": {"schemas": dict(sorted(schemas.items()))}}

    def handles(self, path: str) -> bool:
        return path == ROOT or path.startswith(ROOT + "/")

    def respond(self, path: str) -> ApiResponse:
        """GET /openapi/v3 or /openapi/v3/<group-version> (the ``hash`` query only serves caches)."""
        body = self.root() if path == ROOT else self.document(path[len(ROOT) + 1:])
        if body is None:
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        return ApiResponse.raw(body)


def document_hash(body: bytes) -> str:
    return hashlib.sha512(body).hexdigest().upper()


def _operation_id(verb: str, resource: ResourceType, suffix: str = "", namespaced: bool | None = None) -> str:
    """Kubernetes' operation ids: ``patchCoreV1NamespacedPod``, ``listAppsV1DeploymentForAllNamespaces``."""
    group = (resource.group.split(".")[0] or "core").capitalize()
    scoped = resource.namespaced if namespaced is None else namespaced
    return f"{verb}{group}{resource.version.capitalize()}{'Namespaced' if scoped else ''}{resource.kind}{suffix}"


def resource_paths(resource: ResourceType, type_name: str, list_name: str) -> Obj:
    """The operations on one resource (collection, item and served subresources), each tagged with its kind."""
    gvk = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    namespace_param = {"name": "namespace", "in": "path", "required": True, "description": "object name and auth "
                       "scope, such as for teams and projects", "schema": {"type": "string", "uniqueItems": True}}
    name_param = {"name": "name", "in": "path", "required": True, "description": f"name of the {resource.kind}",
                  "schema": {"type": "string", "uniqueItems": True}}
    scope = f"{base}/namespaces/{{namespace}}/{resource.plural}" if resource.namespaced \
        else f"{base}/{resource.plural}"
    scope_params = [namespace_param] if resource.namespaced else []
    body = {"content": {"*/*": {"schema": _ref(type_name)}}, "required": True}

    def op(action: str, verb: str, response: Obj, suffix: str = "", namespaced: bool | None = None,
           **extra: Any) -> Obj:
        return {"operationId": _operation_id(verb, resource, suffix, namespaced), "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk, "responses": response, **extra}

    ok = {"200": _json_response("OK", type_name)}
    paths: Obj = {
        scope: {
            "get": op("list", "list", {"200": _json_response("OK", list_name)}, parameters=_LIST_PARAMS),
            "post": op("post", "create", {**ok, "201": _json_response("Created", type_name)},
                       parameters=_WRITE_PARAMS, requestBody=body),
            "delete": op("deletecollection", "deleteCollection", {"200": _json_response("OK", f"{_META}.Status")},
                         parameters=_LIST_PARAMS),
            "parameters": scope_params,
        },
        f"{scope}/{{name}}": {
            "get": op("get", "read", ok),
            "put": op("put", "replace", ok, parameters=_WRITE_PARAMS, requestBody=body),
            "patch": op("patch", "patch", ok, parameters=[*_WRITE_PARAMS, _query("force", "Force is going to "
                        "\"force\" Apply requests.", "boolean")],
                        requestBody={"content": {t: {"schema": {"type": "object"}} for t in _PATCH_TYPES},
                                     "required": True}),
            "delete": op("delete", "delete", ok),
            "parameters": [name_param, *scope_params],
        },
    }
    if resource.namespaced:
        paths[f"{base}/{resource.plural}"] = {"get": op("list", "list", {"200": _json_response("OK", list_name)},
                                                        suffix="ForAllNamespaces", namespaced=False,
                                                        parameters=_LIST_PARAMS)}
    for sub in served_subresources(resource):
        item: Obj = {"parameters": [name_param, *scope_params]}
        title = sub.capitalize()
        if sub == "status":
            item["get"] = op("get", "read", ok, suffix=title)
            item["put"] = op("put", "replace", ok, suffix=title, parameters=_WRITE_PARAMS, requestBody=body)
            item["patch"] = op("patch", "patch", ok, suffix=title, parameters=_WRITE_PARAMS,
                               requestBody={"content": {t: {"schema": {"type": "object"}} for t in _PATCH_TYPES},
                                            "required": True})
        elif sub == "finalize":
            item["put"] = op("put", "replace", ok, suffix=title, parameters=_WRITE_PARAMS, requestBody=body)
        elif sub == "binding":
            item["post"] = op("post", "create", {"201": _json_response("Created", BINDING)},
                              suffix=title, parameters=_WRITE_PARAMS,
                              requestBody={"content": {"*/*": {"schema": _ref(BINDING)}},
                                           "required": True})
            item["post"]["x-kubernetes-group-version-kind"] = {"group": "", "version": "v1", "kind": "Binding"}
        else:
            continue
        paths[f"{scope}/{{name}}/{sub}"] = item
    return paths


# -- custom resources -------------------------------------------------------------------------------------------
_OBJECT_META_DOC = ("Standard object's metadata. More info: "
                    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")
_LIST_META_DOC = ("Standard list metadata. More info: "
                  "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")
_API_VERSION_DOC = ("APIVersion defines the versioned schema of this representation of an object. Servers should "
                    "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
                    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
                    "api-conventions.md#resources")
_KIND_DOC = ("Kind is a string value representing the REST resource this object represents. Servers may infer this "
             "from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
             "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")


def custom_type_names(resource: ResourceType) -> tuple[str, str]:
    """Kubernetes' model names of a custom resource and its list: the group reversed, the version, the kind
    (``com.example.v1.Widget``)."""
    group = ".".join(reversed(resource.group.split(".")))
    return f"{group}.{resource.version}.{resource.kind}", f"{group}.{resource.version}.{resource.kind_list}"


def _with_embedded(schema: Any) -> Any:
    """The schema with apiVersion, kind and metadata spelled out in every x-kubernetes-embedded-resource object."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _with_embedded(v) for k, v in out["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(out.get(key), dict):
            out[key] = _with_embedded(out[key])
    if out.get("x-kubernetes-embedded-resource") is True:
        properties = dict(out.get("properties") or {})
        properties["apiVersion"] = {"type": "string", "description": _API_VERSION_DOC}
        properties["kind"] = {"type": "string", "description": _KIND_DOC}
        properties["metadata"] = {"allOf": [_ref(f"{_META}.ObjectMeta")], "description": _OBJECT_META_DOC}
        out["properties"] = properties
        out["required"] = list(dict.fromkeys([*(out.get("required") or []), "kind", "apiVersion"]))
    return out


def custom_schemas(resource: ResourceType) -> Obj:
    """The component schemas of a custom resource's version: the CRD's schema with the standard apiVersion, kind
    and metadata, and its list."""
    info = resource.custom
    type_name, list_name = custom_type_names(resource)
    gvk = [{"group": resource.group, "kind": resource.kind, "version": resource.version}]
    if info.schema is None:
        item: Obj = {"type": "object"}
    else:
        item = _with_embedded(info.schema)
        properties = dict(item.get("properties") or {})
        properties["apiVersion"] = {"type": "string", "description": _API_VERSION_DOC}
        properties["kind"] = {"type": "string", "description": _KIND_DOC}
        properties["metadata"] = {"allOf": [_ref(f"{_META}.ObjectMeta")], "description": _OBJECT_META_DOC}
        item["properties"] = properties
    item["x-kubernetes-group-version-kind"] = gvk
    listed = {"description": f"{resource.kind_list} is a list of {resource.kind}", "type": "object",
              "required": ["items"],
              "properties": {"apiVersion": {"type": "string", "description": _API_VERSION_DOC},
                             "items": {"type": "array", "items": _ref(type_name),
                                       "description": f"List of {resource.plural}. More info: "
                                                      "https://git.k8s.io/community/contributors/devel/"
                                                      "sig-architecture/api-conventions.md"},
                             "kind": {"type": "string", "description": _KIND_DOC},
                             "metadata": {"allOf": [_ref(f"{_META}.ListMeta")], "description": _LIST_META_DOC}},
              "x-kubernetes-group-version-kind": [{"group": resource.group, "kind": resource.kind_list,
                                                   "version": resource.version}]}
    return {type_name: item, list_name: listed}
