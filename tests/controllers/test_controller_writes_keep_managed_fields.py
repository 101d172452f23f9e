"""The controllers' writes and managedFields, through a real API server with the controllers running: they write
from their informers' copies, which have no managedFields, and must keep the object's; each write is recorded
under the controller manager's own name, as kube-controller-manager's are."""

from __future__ import annotations

from typing import Any

from controller_helpers import FakeKubelet, pods
from test_deployment import deployment, replicasets, rolled_out

from minik.client import APPLY_PATCH, Client

Obj = dict[str, Any]


def managers(obj: Obj) -> set[tuple[str, str, str]]:
    return {(m["manager"], m["operation"], m.get("subresource", "")) for m in obj["metadata"].get("managedFields", [])}


async def test_a_release_applied_by_helm_keeps_its_owner_through_the_rollout_and_upgrades_without_conflict(
        api: Client) -> None:
    async with FakeKubelet(api):
        await api.patch("deployments", "web", deployment("web", 2), "default", content_type=APPLY_PATCH,
                        field_manager="helm")
        rolled = await rolled_out(api, "web")
        assert managers(rolled) == {("helm", "Apply", ""), ("kube-controller-manager", "Update", ""),
                                    ("kube-controller-manager", "Update", "status")}
        [rs] = await replicasets(api, "web")
        assert managers(rs) == {("kube-controller-manager", "Update", ""),
                                ("kube-controller-manager", "Update", "status")}
        assert all(("kube-controller-manager", "Update", "") in managers(p) for p in await pods(api))

        # Helm's upgrade: an apply of a changed field, not forced, finds the applier as the owner
        upgraded = await api.patch("deployments", "web", deployment("web", 3, image="nginx:1.28"), "default",
                                   content_type=APPLY_PATCH, field_manager="helm", force=False)
        assert upgraded["spec"]["replicas"] == 3
        rolled = await rolled_out(api, "web")
    assert ("before-first-apply", "Update", "") not in managers(rolled)
    assert ("helm", "Apply", "") in managers(rolled)
