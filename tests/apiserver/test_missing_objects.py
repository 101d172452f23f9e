"""Every verb on every resource and subresource the server registers, for an object (or a namespace) that does not
exist: the answer is a Kubernetes Status, 404 NotFound naming the object (or 405 for a verb the path does not
take, 400 for a body it cannot read), never a 5xx."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from minik.api.registry import ResourceType
from minik.cluster import Cluster
from tests.access import admin_session

if TYPE_CHECKING:
    from conftest import ApiHttp

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
#: subresources some clients ask for that minik does not register: they must be refused cleanly too
UNREGISTERED = ("attach", "portforward", "proxy", "ephemeralcontainers", "approval", "resize")
MISSING = "missing"
#: what Kubernetes' NamespaceLifecycle admission lets through in a namespace that does not exist
NAMESPACE_EXEMPT = ("localsubjectaccessreviews",)


def body_for(resource: ResourceType, subresource: str | None) -> dict[str, Any]:
    """A well-formed body for a write to the subresource, so that the answer is about the missing object."""
    if subresource == "binding":
        return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": MISSING}, "target": {"name": "node-1"}}
    if subresource == "eviction":
        return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": MISSING}}
    if subresource == "token":
        return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": ["a"]}}
    if subresource == "scale":
        return {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": MISSING},
                "spec": {"replicas": 1}}
    return {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": {"name": MISSING}}


def object_paths(resource: ResourceType) -> list[tuple[str, str | None]]:
    """(path, subresource) of the missing object and each of its subresources, in an existing namespace and in
    one that does not exist."""
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    collections = [f"{base}/namespaces/{ns}/{resource.plural}" for ns in ("default", "nope")] \
        if resource.namespaced else [f"{base}/{resource.plural}"]
    return [(f"{collection}/{MISSING}" + (f"/{sub}" if sub else ""), sub)
            for collection in collections for sub in (None, *resource.subresources, *UNREGISTERED)]


def check(resource: ResourceType, sub: str | None, status: int, body: dict) -> str | None:
    """What is wrong with one answer, or None."""
    if body.get("kind") != "Status" or body.get("code") != status or status not in (400, 404, 405):
        return f"{status} {body}"
    if status != 404 or sub in UNREGISTERED:
        return None
    details = body.get("details") or {}
    group = "" if sub == "token" else resource.group
    if body.get("reason") != "NotFound" or not body.get("message", "").endswith(f'"{MISSING}" not found') or \
            details.get("name") != MISSING or details.get("group", "") != group or not details.get("kind"):
        return f"{status} {body}"
    return None


async def test_every_verb_on_a_missing_object_or_subresource_answers_a_status_not_a_5xx(cluster: Cluster) -> None:
    problems = []
    async with admin_session(cluster) as session:
        for resource in cluster.api.registry.types:
            for path, sub in object_paths(resource):
                for method in METHODS:
                    body = orjson.dumps(body_for(resource, sub)) if method in ("POST", "PUT", "PATCH") else None
                    content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
                    async with session.request(method, path, data=body,
                                               headers={"Content-Type": content_type}) as response:
                        answer = orjson.loads(await response.read())
                    problem = check(resource, sub, response.status, answer)
                    if problem:
                        problems.append(f"{method} {path}: {problem}")
    assert not problems, "\n".join(problems[:30])


async def test_a_missing_namespace_is_not_found_for_every_collection_verb(cluster: Cluster) -> None:
    problems = []
    async with admin_session(cluster) as session:
        for resource in (t for t in cluster.api.registry.types if t.namespaced):
            base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
            path = f"{base}/namespaces/nope/{resource.plural}"
            for method in ("GET", "POST", "DELETE"):
                body = orjson.dumps(body_for(resource, None)) if method == "POST" else None
                async with session.request(method, path, data=body,
                                           headers={"Content-Type": "application/json"}) as response:
                    answer = orjson.loads(await response.read())
                if response.status >= 500 or answer.get("kind") not in ("Status", resource.kind_list):
                    problems.append(f"{method} {path}: {response.status} {answer}")
                elif method == "POST" and resource.plural not in NAMESPACE_EXEMPT and \
                        (response.status, answer.get("message")) != (404, 'namespaces "nope" not found'):
                    problems.append(f"{method} {path}: {response.status} {answer}")
    assert not problems, "\n".join(problems[:30])


async def test_subresources_of_a_missing_pod_are_not_found_as_in_kubernetes(http: ApiHttp) -> None:
    pods = "/api/v1/namespaces/default/pods"
    for sub, body in (("binding", {"target": {"name": "node-1"}}),
                      ("eviction", {"apiVersion": "policy/v1", "kind": "Eviction"})):
        status, answer = await http.post(f"{pods}/{MISSING}/{sub}", body)
        assert (status, answer["reason"], answer["message"]) == (404, "NotFound", f'pods "{MISSING}" not found')
        assert answer["details"] == {"name": MISSING, "kind": "pods"}
    for sub in ("log", "status", "exec"):
        status, answer = await http.get(f"{pods}/{MISSING}/{sub}")
        assert (status, answer["message"]) == (404, f'pods "{MISSING}" not found'), sub
    status, answer = await http.post(f"/api/v1/namespaces/default/serviceaccounts/{MISSING}/token",
                                     {"spec": {"audiences": ["a"]}})
    assert (status, answer["message"]) == (404, f'serviceaccounts "{MISSING}" not found')
    status, answer = await http.put(f"/api/v1/namespaces/{MISSING}/finalize",
                                    {"metadata": {"name": MISSING}, "spec": {"finalizers": []}})
    assert (status, answer["message"]) == (404, f'namespaces "{MISSING}" not found')
    status, answer = await http.patch(f"/apis/apps/v1/namespaces/default/deployments/{MISSING}/scale",
                                      {"spec": {"replicas": 2}})
    assert (status, answer["details"]) == (404, {"name": MISSING, "group": "apps", "kind": "deployments"})

