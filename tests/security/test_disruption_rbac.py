"""Disruption budgets under RBAC as Kubernetes' bootstrap policy has them: view reads PodDisruptionBudgets and
their status; edit (and so admin) also writes them and creates pods/eviction; and the disruption controller's
own role reads budgets and workloads, updates budgets' status and reads any scale."""

from __future__ import annotations

from typing import Any

import pytest

from minik.client import Client
from minik.cluster import Cluster

WRITE = ("create", "delete", "deletecollection", "patch", "update")
READ = ("get", "list", "watch")


async def allowed(admin: Client, user: str, verb: str, group: str, resource: str, subresource: str = "",
                  namespace: str | None = "default") -> bool:
    attributes: dict[str, Any] = {"verb": verb, "group": group, "resource": resource, "subresource": subresource}
    if namespace is not None:
        attributes["namespace"] = namespace
    review = await admin.create("subjectaccessreviews.authorization.k8s.io", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "resourceAttributes": attributes}})
    return bool(review["status"]["allowed"])


@pytest.fixture
async def bound(admin: Client) -> Client:
    for role in ("admin", "edit", "view"):
        await admin.create("rolebindings.rbac.authorization.k8s.io", {
            "metadata": {"name": f"{role}s"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": f"{role}-user"}]},
            "default")
    return admin


async def test_view_reads_budgets_and_their_status_but_writes_nothing_and_evicts_nothing(secure: Cluster,
                                                                                          bound: Client) -> None:
    for verb in READ:
        assert await allowed(bound, "view-user", verb, "policy", "poddisruptionbudgets")
        assert await allowed(bound, "view-user", verb, "policy", "poddisruptionbudgets", "status")
    for verb in WRITE:
        assert not await allowed(bound, "view-user", verb, "policy", "poddisruptionbudgets")
    assert not await allowed(bound, "view-user", "create", "", "pods", "eviction")


@pytest.mark.parametrize("role", ["edit", "admin"])
async def test_edit_and_admin_write_budgets_and_evict_pods_but_not_the_budgets_status(secure: Cluster,
                                                                                       bound: Client, role: str) -> None:
    user = f"{role}-user"
    for verb in (*READ, *WRITE):
        assert await allowed(bound, user, verb, "policy", "poddisruptionbudgets"), verb
    assert await allowed(bound, user, "create", "", "pods", "eviction")
    assert not await allowed(bound, user, "update", "policy", "poddisruptionbudgets", "status")
    assert not await allowed(bound, user, "create", "policy", "poddisruptionbudgets", namespace="kube-system")


async def test_the_disruption_controller_keeps_budget_status_and_reads_scales(secure: Cluster, bound: Client) -> None:
    controller = "system:serviceaccount:kube-system:disruption-controller"
    assert await allowed(bound, controller, "update", "policy", "poddisruptionbudgets", "status")
    for group, resource in (("policy", "poddisruptionbudgets"), ("apps", "deployments"), ("apps", "replicasets"),
                            ("", "replicationcontrollers"), ("apps", "statefulsets")):
        assert await allowed(bound, controller, "watch", group, resource, namespace=None), resource
    assert await allowed(bound, controller, "get", "example.com", "widgets", "scale")
    assert not await allowed(bound, controller, "update", "policy", "poddisruptionbudgets")
