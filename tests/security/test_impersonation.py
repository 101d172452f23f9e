"""Impersonation (`kubectl --as`, `--as-group`): allowed only to those who may `impersonate` each part of the
identity, and the request then runs as that identity, groups and all."""

from __future__ import annotations

from security_helpers import raw

from minik.apiserver.auth.credentials import mint
from minik.apiserver.request import User
from minik.client import Client
from minik.cluster import Cluster

WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


async def whoami(cluster: Cluster, token: str | None, **headers: str) -> tuple[int, dict]:
    status, body, _ = await raw(cluster, "POST", WHOAMI, token, json={}, headers={
        k.replace("_", "-"): v for k, v in headers.items()})
    return status, body


async def test_an_admin_acts_as_another_user_with_the_groups_asked_for(secure: Cluster) -> None:
    status, body = await whoami(secure, secure.admin_token, Impersonate_User="alice", Impersonate_Group="devs")
    assert status == 201
    assert body["status"]["userInfo"] == {"username": "alice", "groups": ["devs", "system:authenticated"]}
    status, body = await whoami(secure, secure.admin_token, Impersonate_User="system:serviceaccount:team:robot")
    assert body["status"]["userInfo"]["groups"] == ["system:serviceaccounts", "system:serviceaccounts:team",
                                                    "system:authenticated"]
    status, body, _ = await raw(secure, "GET", "/api/v1/namespaces/default/pods", secure.admin_token,
                                headers={"Impersonate-User": "alice"})
    assert status == 403 and 'User "alice" cannot list resource "pods"' in body["message"]


async def test_impersonating_needs_the_impersonate_verb_for_each_part(secure: Cluster, admin: Client) -> None:
    mallory = mint(secure.tokens, User("mallory"))
    status, body = await whoami(secure, mallory, Impersonate_User="kubernetes-admin", Impersonate_Group="system:masters")
    assert status == 403
    assert body["message"] == ('users "kubernetes-admin" is forbidden: User "mallory" cannot impersonate resource '
                               '"users" in API group "" at the cluster scope')
    await admin.create("clusterroles.rbac.authorization.k8s.io", {
        "metadata": {"name": "be-alice"},
        "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["alice"]}]})
    await admin.create("clusterrolebindings.rbac.authorization.k8s.io", {
        "metadata": {"name": "mallory-is-alice"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "be-alice"},
        "subjects": [{"kind": "User", "name": "mallory"}]})
    status, body = await whoami(secure, mallory, Impersonate_User="alice")
    assert (status, body["status"]["userInfo"]["username"]) == (201, "alice")
    status, body = await whoami(secure, mallory, Impersonate_User="alice", Impersonate_Group="system:masters")
    assert status == 403 and body["message"].startswith('groups "system:masters" is forbidden')
    status, body = await whoami(secure, mallory, Impersonate_Group="devs")
    assert status == 400  # groups without a user
