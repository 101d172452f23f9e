"""Discovery documents and /version, built from the registry (again whenever it changes).

The legacy documents (``/api``, ``/apis``, ``/apis/GROUP``, ``/apis/GROUP/VERSION``) and the aggregated one
(``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList``, every group's versions and resources in one answer to
``/api`` or ``/apis``, which kubectl asks for first with an Accept of
``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``)."""

from __future__ import annotations

import base64
import hashlib
import platform
from typing import Any

from minik import __version__
from minik.api.registry import Registry, ResourceType
from minik.apiserver.request import ApiResponse

KUBERNETES_MAJOR = "1"
KUBERNETES_MINOR = "32"

#: subresources that speak another kind than their parent's, and their verbs
_SUBRESOURCES: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    # name: (group, version, kind; empty group/version/kind means the parent's), verbs
    "status": ("", "", "", ("get", "patch", "update")),
    "scale": ("autoscaling", "v1", "Scale", ("get", "patch", "update")),
    "binding": ("", "", "Binding", ("create",)),
    "eviction": ("policy", "v1", "Eviction", ("create",)),
    "log": ("", "", "", ("get",)),
    "exec": ("", "", "PodExecOptions", ("create", "get")),
    "portforward": ("", "", "PodPortForwardOptions", ("create", "get")),
    "proxy": ("", "", "{kind}ProxyOptions", ("create", "delete", "get", "patch", "update")),  # PodProxyOptions
    "attach": ("", "", "PodAttachOptions", ("create", "get")),
    "ephemeralcontainers": ("", "", "", ("get", "patch", "update")),
    "finalize": ("", "", "", ("update",)),
    "token": ("authentication.k8s.io", "v1", "TokenRequest", ("create",)),
    "approval": ("", "", "", ("get", "patch", "update")),
}

#: the subresources the server answers today; discovery advertises only these (kubectl trusts discovery: a listed
#: pods/eviction makes `kubectl drain` evict instead of delete). Add a name here when its handler lands.
SERVED_SUBRESOURCES = ("status", "binding", "finalize", "scale", "eviction", "log", "exec", "token", "approval",
                       "portforward", "proxy", "attach", "ephemeralcontainers")


def served_subresources(resource: ResourceType) -> tuple[str, ...]:
    """The registry's subresources of ``resource`` that the server serves."""
    return tuple(sub for sub in resource.subresources if sub in SERVED_SUBRESOURCES)


def version_info() -> dict[str, str]:
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
    return {
        "major": KUBERNETES_MAJOR, "minor": KUBERNETES_MINOR,
        "gitVersion": f"v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0-minik.{__version__}",
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": f"python{platform.python_version()}",
        "compiler": "cpython", "platform": f"{platform.system().lower()}/{arch}",
    }


def _storage_hash(resource: ResourceType) -> str:
    digest = hashlib.sha256(f"{resource.group}/{resource.version}/{resource.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def verbs_of(resource: ResourceType) -> tuple[str, ...]:
    """The verbs discovery lists (a custom resource whose CRD is being deleted takes no more creates)."""
    return resource.custom.discovery_verbs if resource.custom is not None else resource.verbs


def _storage_hash_of(resource: ResourceType) -> str:
    if resource.custom is not None:  # the hash of the storage version, whatever version is asked
        info = resource.custom
        digest = hashlib.sha256(f"{info.group}/{info.storage_version}/{info.kind}".encode()).digest()
        return base64.b64encode(digest[:8]).decode()
    return _storage_hash(resource)


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for t in registry.in_group_version(group, version):
        entry: dict[str, Any] = {"name": t.plural, "singularName": t.singular, "namespaced": t.namespaced,
                                 "kind": t.kind, "verbs": list(verbs_of(t)), "storageVersionHash": _storage_hash_of(t)}
        if t.short_names:
            entry["shortNames"] = list(t.short_names)
        if t.categories:
            entry["categories"] = list(t.categories)
        resources.append(entry)
        for sub in served_subresources(t):
            sub_group, sub_version, sub_kind, verbs = _SUBRESOURCES.get(sub, ("", "", "", ("get",)))
            item: dict[str, Any] = {"name": f"{t.plural}/{sub}", "singularName": "", "namespaced": t.namespaced,
                                    "kind": (sub_kind or t.kind).format(kind=t.kind), "verbs": list(verbs)}
            if sub_group:
                item["group"], item["version"] = sub_group, sub_version
            resources.append(item)
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


def api_versions(address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]}


def api_group(group: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries,
            "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = []
    for group, versions in registry.group_versions().items():
        if group:
            document = api_group(group, versions)
            document.pop("kind")
            document.pop("apiVersion")
            groups.append(document)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


# -- aggregated discovery -------------------------------------------------------------------------------------------
AGGREGATED_VERSIONS = ("v2", "v2beta1")


def wants_aggregated(accept: str | None) -> str | None:
    """``v2`` (or ``v2beta1``) when the first media type of ``accept`` that minik serves is aggregated discovery;
    None for the legacy documents."""
    for entry in (accept or "").split(","):
        media, *raw_params = (part.strip() for part in entry.split(";"))
        params = dict(p.partition("=")[::2] for p in raw_params)
        if media not in ("application/json", "application/*", "*/*"):
            continue
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList" and \
                params.get("v") in AGGREGATED_VERSIONS:
            return params["v"]
        if "as" not in params and "g" not in params:
            return None
    return None


def _kind(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _aggregated_resource(t: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {"resource": t.plural, "responseKind": _kind(t.group, t.version, t.kind),
                             "scope": "Namespaced" if t.namespaced else "Cluster", "singularResource": t.singular,
                             "verbs": list(verbs_of(t))}
    if t.short_names:
        entry["shortNames"] = list(t.short_names)
    if t.categories:
        entry["categories"] = list(t.categories)
    subresources = []
    for sub in served_subresources(t):
        sub_group, sub_version, sub_kind, verbs = _SUBRESOURCES.get(sub, ("", "", "", ("get",)))
        subresources.append({"subresource": sub,
                             "responseKind": _kind(sub_group or t.group, sub_version or t.version,
                                                   (sub_kind or t.kind).format(kind=t.kind)),
                             "verbs": list(verbs)})
    if subresources:
        entry["subresources"] = subresources
    return entry


def aggregated(registry: Registry, core: bool, version: str = "v2") -> dict[str, Any]:
    """The APIGroupDiscoveryList of the core group (``/api``) or of every other group (``/apis``)."""
    items = []
    for group, versions in registry.group_versions().items():
        if (group == "") != core:
            continue
        entries = []
        for v in versions:
            resources = [_aggregated_resource(t) for t in registry.in_group_version(group, v)]
            resources.sort(key=lambda r: str(r["resource"]))
            entries.append({"version": v, "resources": resources, "freshness": "Current"})
        items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": entries})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}",
            "metadata": {"creationTimestamp": None}, "items": items}


def aggregated_response(registry: Registry, core: bool, version: str) -> ApiResponse:
    response = ApiResponse.json(aggregated(registry, core, version))
    response.content_type = f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
    response.headers["Vary"] = "Accept"
    return response
