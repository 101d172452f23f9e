"""RBAC as Kubernetes has it, against a real HTTPS cluster: Roles and bindings that users write grant exactly
what they say from the moment they are stored, nobody grants what they do not hold, and the bootstrap policy is
there and survives an admin's changes across restarts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest
from security_helpers import connect

from minik.api.errors import StatusError
from minik.apiserver.auth.credentials import mint
from minik.apiserver.request import User
from minik.client import Client
from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.controllers.manager import ControllerSettings
from minik.testing.namespaces import create_namespace

RBAC = "rbac.authorization.k8s.io"
ROLES, CLUSTER_ROLES = f"roles.{RBAC}", f"clusterroles.{RBAC}"
BINDINGS, CLUSTER_BINDINGS = f"rolebindings.{RBAC}", f"clusterrolebindings.{RBAC}"


def role(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "rules": list(rules)}


def rule(verbs: list[str], resources: list[str], groups: list[str] | None = None,
         names: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"verbs": verbs, "apiGroups": groups if groups is not None else [""],
                           "resources": resources}
    if names:
        out["resourceNames"] = names
    return out


def binding(name: str, kind: str, role_name: str, *subjects: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "roleRef": {"apiGroup": RBAC, "kind": kind, "name": role_name},
            "subjects": list(subjects)}


def user(name: str) -> dict[str, str]:
    return {"kind": "User", "name": name}


async def refused(call: Awaitable[Any], code: int = 403) -> StatusError:
    with pytest.raises(StatusError) as caught:
        await call
    assert caught.value.code == code, caught.value.message
    return caught.value


@pytest.fixture
async def team(admin: Client) -> str:
    await create_namespace(admin, "team")
    await admin.create("pods", {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
                       "team")
    return "team"


@pytest.fixture
async def alice(secure: Cluster) -> AsyncIterator[Client]:
    """A person with no bindings of her own, reaching the cluster over HTTPS."""
    async with connect(secure, mint(secure.tokens, User("alice", ("devs",)))) as client:
        yield client


async def test_rbac_kinds_are_validated_as_kubernetes_validates_them(admin: Client, team: str) -> None:
    bad_role = await refused(admin.create(ROLES, role("r", {"apiGroups": [""], "resources": ["pods"]},
                                                      {"verbs": ["get"], "nonResourceURLs": ["/x"]}), team), 422)
    assert [(c["field"], c["message"]) for c in bad_role.details["causes"]] == [
        ("rules[0].verbs", "Required value: verbs must contain at least one value"),
        ("rules[1].nonResourceURLs", 'Invalid value: []string{"/x"}: namespaced rules cannot apply to non-resource '
                                     "URLs")]
    bad_binding = await refused(admin.create(BINDINGS, binding("b", "Secret", "x", {"kind": "Robot", "name": "r"}),
                                             team), 422)
    assert [c["field"] for c in bad_binding.details["causes"]] == ["roleRef.kind", "subjects[0].kind"]
    await admin.create(BINDINGS, binding("b", "ClusterRole", "view", user("alice")), team)
    stored = await admin.get(BINDINGS, "b", team)
    assert stored["subjects"] == [{"kind": "User", "apiGroup": RBAC, "name": "alice"}]  # defaulted
    moved = await refused(admin.patch(BINDINGS, "b", {"roleRef": {"name": "edit"}}, team), 422)
    assert moved.details["causes"][0]["field"] == "roleRef"


async def test_a_role_binding_grants_its_role_in_its_namespace_only_and_from_the_moment_it_is_stored(
        admin: Client, alice: Client, team: str) -> None:
    denied = await refused(alice.list("pods", team))
    assert denied.message == ('pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the '
                              'namespace "team"')
    await admin.create(BINDINGS, binding("alice-views", "ClusterRole", "view", user("alice")), team)
    assert [p["metadata"]["name"] for p in (await alice.list("pods", team))["items"]] == ["web"]
    await refused(alice.list("pods", "default"))
    await refused(alice.list("pods"))  # across namespaces needs a cluster-wide binding
    await refused(alice.get("secrets", "anything", team))
    await refused(alice.delete("pods", "web", team))
    await admin.delete(BINDINGS, "alice-views", team)
    await refused(alice.list("pods", team))


async def test_groups_and_service_accounts_are_subjects_too(secure: Cluster, admin: Client, team: str) -> None:
    await admin.create(BINDINGS, binding("devs", "ClusterRole", "view", {"kind": "Group", "name": "devs"}), team)
    await admin.create(BINDINGS, binding("robot", "ClusterRole", "edit",
                                         {"kind": "ServiceAccount", "name": "robot"}), team)  # the binding's ns
    async with connect(secure, mint(secure.tokens, User("bob", ("devs",)))) as bob:
        await bob.list("pods", team)
        await refused(bob.delete("pods", "web", team))
    robot_user = User("system:serviceaccount:team:robot", ("system:serviceaccounts", "system:serviceaccounts:team"))
    async with connect(secure, mint(secure.tokens, robot_user)) as robot:
        await robot.create("configmaps", {"metadata": {"name": "made-by-robot"}}, team)
        await refused(robot.create("configmaps", {"metadata": {"name": "elsewhere"}}, "default"))


async def test_a_binding_to_a_missing_role_grants_nothing_until_the_role_exists(admin: Client, alice: Client,
                                                                               team: str) -> None:
    await admin.create(BINDINGS, binding("later", "Role", "pod-reader", user("alice")), team)
    await refused(alice.get("pods", "web", team))
    await admin.create(ROLES, role("pod-reader", rule(["get"], ["pods"], names=["web"])), team)
    assert (await alice.get("pods", "web", team))["metadata"]["name"] == "web"
    await refused(alice.list("pods", team))  # resourceNames never grant a list


async def test_nobody_grants_permissions_they_do_not_hold(admin: Client, alice: Client, team: str) -> None:
    await admin.create(BINDINGS, binding("alice-admin", "ClusterRole", "admin", user("alice")), team)
    await alice.create(ROLES, role("pod-reader", rule(["get", "list"], ["pods"])), team)
    await alice.create(BINDINGS, binding("viewers", "ClusterRole", "view", user("carol")), team)
    grabbing = await refused(alice.create(ROLES, role("node-reader", rule(["list"], ["nodes"])), team))
    assert grabbing.message == (
        'roles.rbac.authorization.k8s.io "node-reader" is forbidden: user "alice" (groups=["devs" '
        '"system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["nodes"], Verbs:["list"]}')
    await refused(alice.create(BINDINGS, binding("root", "ClusterRole", "cluster-admin", user("alice")), team))
    await refused(alice.patch(ROLES, "pod-reader", {"rules": [rule(["*"], ["*"], ["*"])]}, team))
    # `bind` on one role lets her bind that role; `escalate` lets her write any role
    await admin.create(CLUSTER_ROLES, role("binder", rule(["bind"], ["clusterroles"], [RBAC], ["cluster-admin"]),
                                           rule(["escalate"], ["roles"], [RBAC])))
    await admin.create(CLUSTER_BINDINGS, binding("alice-binder", "ClusterRole", "binder", user("alice")))
    await alice.create(BINDINGS, binding("root", "ClusterRole", "cluster-admin", user("alice")), team)
    await alice.create(ROLES, role("node-reader", rule(["list"], ["nodes"])), team)


async def test_an_aggregation_rule_needs_every_permission_there_is(admin: Client, alice: Client) -> None:
    await admin.create(CLUSTER_ROLES, role("role-writer", rule(["create"], ["clusterroles"], [RBAC])))
    await admin.create(CLUSTER_BINDINGS, binding("alice-writes-roles", "ClusterRole", "role-writer", user("alice")))
    gathered = {"metadata": {"name": "gatherer"}, "aggregationRule": {"clusterRoleSelectors": [
        {"matchLabels": {"gather": "me"}}]}, "rules": []}
    error = await refused(alice.create(CLUSTER_ROLES, gathered))
    assert error.message.endswith("must have cluster-admin privileges to use the aggregationRule")


async def test_the_bootstrap_policy_is_served_with_aggregated_user_facing_roles(admin: Client) -> None:
    names = {r["metadata"]["name"] for r in (await admin.list(CLUSTER_ROLES))["items"]}
    assert {"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery",
            "system:public-info-viewer", "system:kube-scheduler", "system:kube-controller-manager", "system:node",
            "system:node-proxier", "system:controller:replicaset-controller"} <= names
    view = await admin.get(CLUSTER_ROLES, "view")
    assert view["rules"] == (await admin.get(CLUSTER_ROLES, "system:aggregate-to-view"))["rules"]
    assert any("pods" in r["resources"] and r["verbs"] == ["get", "list", "watch"] for r in view["rules"])
    assert not any("pods/exec" in r["resources"] for r in view["rules"])
    edit = await admin.get(CLUSTER_ROLES, "edit")
    assert any("pods/exec" in r["resources"] and "create" in r["verbs"] for r in edit["rules"])
    admin_rules = (await admin.get(CLUSTER_ROLES, "admin"))["rules"]
    assert all(r in admin_rules for r in edit["rules"])
    masters = await admin.get(CLUSTER_BINDINGS, "cluster-admin")
    assert masters["subjects"] == [{"kind": "Group", "apiGroup": RBAC, "name": "system:masters"}]
    scheduler = await admin.get(CLUSTER_BINDINGS, "system:kube-scheduler")
    assert scheduler["subjects"] == [{"kind": "User", "apiGroup": RBAC, "name": "system:kube-scheduler"}]


async def test_an_admins_changes_to_the_bootstrap_policy_survive_a_restart(tmp_path: Path) -> None:
    settings = ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                               disabled=frozenset(COMPONENTS))
    async with Cluster(settings) as cluster:
        admin = cluster.in_process_client()
        extra = rule(["get"], ["widgets"], ["example.com"])
        await admin.patch(CLUSTER_ROLES, "system:aggregate-to-view",
                          {"rules": (await admin.get(CLUSTER_ROLES, "system:aggregate-to-view"))["rules"] + [extra]})
        await admin.patch(CLUSTER_ROLES, "system:basic-user", {"metadata": {"annotations": {
            "rbac.authorization.kubernetes.io/autoupdate": "false"}}, "rules": []})
        await admin.delete(CLUSTER_BINDINGS, "system:discovery")
        await admin.create(CLUSTER_ROLES, {"metadata": {"name": "widget-reader", "labels": {
            "rbac.authorization.k8s.io/aggregate-to-view": "true"}}, "rules": [rule(["list"], ["gadgets"], ["x.io"])]})
    async with Cluster(settings) as cluster:
        admin = cluster.in_process_client()
        assert extra in (await admin.get(CLUSTER_ROLES, "system:aggregate-to-view"))["rules"]
        assert (await admin.get(CLUSTER_ROLES, "system:basic-user"))["rules"] == []  # autoupdate off: left alone
        assert (await admin.get(CLUSTER_BINDINGS, "system:discovery"))["subjects"][0]["name"] == \
            "system:authenticated"  # a deleted bootstrap binding comes back
        view = (await admin.get(CLUSTER_ROLES, "view"))["rules"]
        assert extra in view and rule(["list"], ["gadgets"], ["x.io"]) in view


async def test_the_aggregation_controller_grows_view_edit_and_admin_with_labelled_roles(tmp_path: Path) -> None:
    settings = ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                               disabled=frozenset(c for c in COMPONENTS if c != "controllers"),
                               controllers=ControllerSettings(enabled=["clusterrole-aggregation"]))
    async with Cluster(settings) as cluster:
        admin = cluster.in_process_client()
        widgets = rule(["get", "list"], ["widgets"], ["example.com"])
        await admin.create(CLUSTER_ROLES, {"metadata": {"name": "widget-reader", "labels": {
            "rbac.authorization.k8s.io/aggregate-to-view": "true"}}, "rules": [widgets]})
        async with admin.watch(CLUSTER_ROLES, field_selector="metadata.name=admin") as events:
            async for _kind, obj in events:
                if widgets in (obj.get("rules") or []):
                    break
        assert widgets in (await admin.get(CLUSTER_ROLES, "view"))["rules"]
        assert widgets in (await admin.get(CLUSTER_ROLES, "edit"))["rules"]
        await admin.delete(CLUSTER_ROLES, "widget-reader")
        async with admin.watch(CLUSTER_ROLES, field_selector="metadata.name=view") as events:
            async for _kind, obj in events:
                if widgets not in (obj.get("rules") or []):
                    break
