"""The review APIs over HTTPS: TokenReview says who a token is, the access reviews answer from the same
authorizers that guard every request, and none of them stores anything."""

from __future__ import annotations

from typing import Any

from security_helpers import make_token, raw

from minik.apiserver.auth.credentials import mint
from minik.apiserver.request import User
from minik.client import Client
from minik.cluster import Cluster

AUTHN = "/apis/authentication.k8s.io/v1"
AUTHZ = "/apis/authorization.k8s.io/v1"


async def ask(cluster: Cluster, path: str, body: dict[str, Any], token: str | None) -> tuple[int, dict]:
    status, answer, _ = await raw(cluster, "POST", path, token, json=body)
    return status, answer


async def test_a_token_review_names_the_user_behind_a_token(secure: Cluster, admin: Client) -> None:
    view = await make_token(admin, "view")
    status, answer = await ask(secure, f"{AUTHN}/tokenreviews", {"spec": {"token": view}}, secure.admin_token)
    assert status == 201
    assert answer["status"]["authenticated"] is True
    assert answer["status"]["user"]["username"] == f"system:bootstrap:{view.split('.')[0]}"
    assert "system:bootstrappers:minik:view" in answer["status"]["user"]["groups"]
    status, answer = await ask(secure, f"{AUTHN}/tokenreviews", {"spec": {"token": "abcdef.0123456789abcdef"}},
                               secure.admin_token)
    assert (status, answer["status"]["authenticated"]) == (201, False)
    status, answer = await ask(secure, f"{AUTHN}/tokenreviews", {"spec": {}}, secure.admin_token)
    assert (status, answer["reason"]) == (422, "Invalid")
    status, _ = await ask(secure, f"{AUTHN}/tokenreviews", {"spec": {"token": view}}, view)
    assert status == 403  # reviewing others' tokens is system:auth-delegator's right, not a viewer's


async def test_access_reviews_answer_for_the_asker_and_for_others(secure: Cluster, admin: Client) -> None:
    await admin.create("rolebindings.rbac.authorization.k8s.io", {
        "metadata": {"name": "alice-view"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                        "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "alice"}]}, "default")
    alice = mint(secure.tokens, User("alice"))
    pods = {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}}
    status, answer = await ask(secure, f"{AUTHZ}/selfsubjectaccessreviews", {"spec": pods}, alice)
    assert (status, answer["status"]["allowed"]) == (201, True)
    assert answer["status"]["reason"] == ('RBAC: allowed by RoleBinding "alice-view/default" of ClusterRole "view" '
                                          'to User "alice"')
    status, answer = await ask(secure, f"{AUTHZ}/subjectaccessreviews", {"spec": {**pods, "user": "alice"}},
                               secure.admin_token)
    assert (status, answer["status"]["allowed"]) == (201, True)
    elsewhere = {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "kube-system"}}
    status, answer = await ask(secure, f"{AUTHZ}/subjectaccessreviews", {"spec": {**elsewhere, "user": "alice"}},
                               secure.admin_token)
    assert (status, answer["status"]["allowed"]) == (201, False)
    status, _ = await ask(secure, f"{AUTHZ}/subjectaccessreviews", {"spec": {**pods, "user": "alice"}}, alice)
    assert status == 403  # asking about others is not for everyone
    status, answer = await ask(secure, f"{AUTHZ}/namespaces/default/localsubjectaccessreviews",
                               {"spec": {**elsewhere, "user": "alice"}}, secure.admin_token)
    assert (status, answer["details"]["causes"][0]["field"]) == (422, "spec.resourceAttributes.namespace")
    status, answer = await ask(secure, f"{AUTHZ}/selfsubjectaccessreviews",
                               {"spec": {"nonResourceAttributes": {"verb": "get", "path": "/version"}}}, alice)
    assert answer["status"]["allowed"] is True
    status, answer = await ask(secure, f"{AUTHZ}/selfsubjectaccessreviews", {"spec": {}}, alice)
    assert status == 422


async def test_a_rules_review_lists_what_the_asker_may_do_in_a_namespace(secure: Cluster) -> None:
    nobody = mint(secure.tokens, User("nobody"))
    status, answer = await ask(secure, f"{AUTHZ}/selfsubjectrulesreviews", {"spec": {"namespace": "default"}},
                               nobody)
    assert status == 201
    resources = {r for rule in answer["status"]["resourceRules"] for r in rule["resources"]}
    assert resources == {"selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"}
    assert {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]} in \
        answer["status"]["nonResourceRules"]


async def test_reviews_are_never_stored_and_answer_only_create(secure: Cluster) -> None:
    status, _, _ = await raw(secure, "GET", f"{AUTHZ}/selfsubjectaccessreviews", secure.admin_token)
    assert status == 405
    status, _, _ = await raw(secure, "GET", f"{AUTHN}/tokenreviews/x", secure.admin_token)
    assert status == 405
