"""Helpers for managedFields tests: requests with a chosen User-Agent (or none), and the entries of an object."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from minik.apiserver import fieldpath

CONTROLLER_AGENT = "kube-controller-manager/v1.32.0 (linux/amd64) kubernetes/abcdef/deployment-controller"
KUBECTL_AGENT = "kubectl/v1.32.4 (linux/amd64) kubernetes/abcdef"


async def send(http, method: str, path: str, body: Any, *, agent: str | None = None,
               content_type: str = "application/json", **params: str) -> tuple[int, dict]:
    """A request with the User-Agent ``agent`` (None: no User-Agent at all)."""
    headers = {"Content-Type": content_type}
    if agent is not None:
        headers["User-Agent"] = agent
    async with http.session.request(method, path, data=orjson.dumps(body), headers=headers, params=params,
                                    skip_auto_headers=["User-Agent"]) as response:
        return response.status, await response.json()


def entries(obj: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """managedFields by (manager, operation, subresource)."""
    return {(m["manager"], m["operation"], m.get("subresource", "")): m
            for m in obj["metadata"].get("managedFields", [])}


def owned(obj: dict[str, Any], manager: str, operation: str = "Update", subresource: str = "") -> set[str]:
    entry = entries(obj).get((manager, operation, subresource))
    return {fieldpath.path_string(p) for p in fieldpath.decode(entry["fieldsV1"])} if entry else set()


def cached(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as an informer's cache holds it: without managedFields."""
    out = copy.deepcopy(obj)
    out["metadata"].pop("managedFields")
    return out
