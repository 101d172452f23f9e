"""Writes that race a delete: whatever the store says when the object went between the read and the write, the
client gets Kubernetes' Status (404 NotFound for the pod deleted a moment before), never a 500."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from minik.api.errors import CONFLICT_MESSAGE
from minik.api.resources import REGISTRY
from minik.apiserver.storeerrors import status_of
from minik.store import Compacted, Conflict, FutureRevision, KeyExists, KeyNotFound, StoreClosed, StoreError

if TYPE_CHECKING:
    from conftest import ApiHttp

PODS = "/api/v1/namespaces/default/pods"
RACES = 40


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


async def test_a_binding_racing_the_delete_of_its_pod_is_created_or_not_found(http: ApiHttp) -> None:
    names = [f"p{i}" for i in range(RACES)]
    for name in names:
        assert (await http.post(PODS, pod(name)))[0] == 201

    async def race(name: str) -> tuple[int, dict]:
        _, bound = await asyncio.gather(http.delete(f"{PODS}/{name}"),
                                        http.post(f"{PODS}/{name}/binding", {"target": {"name": "node-1"}}))
        return bound

    answers = await asyncio.gather(*(race(name) for name in names))
    assert {status for status, _ in answers} <= {201, 404}, [a for a in answers if a[0] not in (201, 404)]
    for (status, body), name in zip(answers, names, strict=True):
        if status == 404:
            assert body["message"] == f'pods "{name}" not found'
            assert body["details"] == {"name": name, "kind": "pods"}



#: writes that read the pod and then write it, each answered 2xx when it won the race, 404 when the delete did
RACING_WRITES = [
    ("PATCH", "/status", {"status": {"phase": "Running"}}, "application/merge-patch+json"),
    ("PATCH", "", {"metadata": {"labels": {"raced": "yes"}}}, "application/strategic-merge-patch+json"),
    ("POST", "/eviction", {"apiVersion": "policy/v1", "kind": "Eviction"}, "application/json"),
    ("PUT", "/status", None, "application/json"),
]


@pytest.mark.parametrize(("method", "sub", "body", "content_type"), RACING_WRITES,
                         ids=[f"{m} {s or 'object'}" for m, s, _, _ in RACING_WRITES])
async def test_writes_racing_the_delete_of_their_pod_succeed_or_are_not_found(
        http: ApiHttp, method: str, sub: str, body: dict | None, content_type: str) -> None:
    names = [f"w{i}" for i in range(RACES // 2)]
    for name in names:
        assert (await http.post(PODS, pod(name)))[0] == 201

    async def race(name: str) -> tuple[int, dict]:
        payload = body
        if payload is None:  # a PUT of the whole pod as it was read
            payload = (await http.get(f"{PODS}/{name}"))[1]
            payload.get("metadata", {}).pop("resourceVersion", None)
        _, written = await asyncio.gather(
            http.delete(f"{PODS}/{name}"),
            http.call(method, f"{PODS}/{name}{sub}", payload, content_type=content_type))
        return written

    answers = await asyncio.gather(*(race(name) for name in names))
    assert {status for status, _ in answers} <= {200, 201, 404}, [a for a in answers if a[0] >= 300 and a[0] != 404]
    assert all(body["details"]["name"] == name for (status, body), name in zip(answers, names, strict=True)
               if status == 404)

@pytest.mark.parametrize(("error", "code", "reason", "message"), [
    (KeyNotFound("/core/pods/default/web"), 404, "NotFound", 'pods "web" not found'),
    (KeyExists("/core/pods/default/web"), 409, "AlreadyExists", 'pods "web" already exists'),
    (Conflict("/core/pods/default/web", 3, 4), 409, "Conflict",
     f'Operation cannot be fulfilled on pods "web": {CONFLICT_MESSAGE}'),
    (Compacted(3, 10), 410, "Expired", "too old resource version: 3 (10)"),
    (FutureRevision(30, 10), 504, "Timeout", "Timeout: Too large resource version: 30, current: 10"),
    (StoreClosed("closing"), 503, "ServiceUnavailable", "the server is shutting down"),
])
def test_every_store_error_reaching_the_server_is_answered_as_kubernetes_interprets_it(
        error: StoreError, code: int, reason: str, message: str) -> None:
    pods = REGISTRY.get("", "v1", "pods")
    assert pods is not None
    status = status_of(error, pods, "web").to_status()
    assert (status["code"], status["reason"], status["message"]) == (code, reason, message)
