"""What each role may do: a view token reads everything but Secrets and writes nothing, Forbidden answers name the
user, verb, resource and namespace as Kubernetes words them, and expired or revoked tokens stop working."""

from __future__ import annotations

import datetime

import pytest
from security_helpers import connect, make_token, raw

from minik.api import tokens
from minik.api.errors import StatusError
from minik.client import Client
from minik.cluster import Cluster


async def test_a_view_token_reads_but_cannot_write(secure: Cluster, admin: Client) -> None:
    await admin.create("configmaps", {"metadata": {"name": "seen"}}, "default")
    token = await make_token(admin, "view")
    async with connect(secure, token) as viewer:
        assert (await viewer.get("configmaps", "seen", "default"))["metadata"]["name"] == "seen"
        assert len((await viewer.list("namespaces"))["items"]) == 4
        async with viewer.watch("configmaps", "default") as events:
            kind, obj = await events.__anext__()
            assert (kind, obj["metadata"]["name"]) == ("ADDED", "seen")
        with pytest.raises(StatusError) as created:
            await viewer.create("configmaps", {"metadata": {"name": "mine"}}, "default")
        with pytest.raises(StatusError) as patched:
            await viewer.patch("configmaps", "seen", {"data": {"a": "b"}}, "default")
        with pytest.raises(StatusError) as deleted:
            await viewer.delete("namespaces", "default")
    assert {created.value.code, patched.value.code, deleted.value.code} == {403}
    token_id = token.split(".")[0]
    assert created.value.message == (f'configmaps is forbidden: User "system:bootstrap:{token_id}" cannot create '
                                     'resource "configmaps" in API group "" in the namespace "default"')
    assert created.value.details == {"kind": "configmaps"}
    assert patched.value.message == (f'configmaps "seen" is forbidden: User "system:bootstrap:{token_id}" cannot '
                                     'patch resource "configmaps" in API group "" in the namespace "default"')
    assert deleted.value.message == (f'namespaces "default" is forbidden: User "system:bootstrap:{token_id}" '
                                     'cannot delete resource "namespaces" in API group "" at the cluster scope')
    with pytest.raises(StatusError):
        await admin.get("configmaps", "mine", "default")


async def test_a_view_token_cannot_read_secrets_nor_write_subresources(secure: Cluster, admin: Client) -> None:
    await admin.create("deployments", {"metadata": {"name": "web"}, "spec": {
        "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
        "default")
    async with connect(secure, await make_token(admin, "view")) as viewer:
        with pytest.raises(StatusError) as secrets:
            await viewer.list("secrets", "kube-system")
        assert secrets.value.code == 403
        with pytest.raises(StatusError) as scaled:
            await viewer.patch("deployments", "web", {"spec": {"replicas": 5}}, "default", subresource="scale")
        assert scaled.value.code == 403
        assert 'cannot patch resource "deployments/scale" in API group "apps"' in scaled.value.message
        assert (await viewer.get("deployments", "web", "default", subresource="scale"))["spec"]["replicas"] == 1


async def test_a_join_token_alone_reads_nothing(secure: Cluster, admin: Client) -> None:
    async with connect(secure, await make_token(admin, "node")) as joiner:
        with pytest.raises(StatusError) as refused:
            await joiner.list("pods")
        assert refused.value.code == 403


async def test_an_expired_token_is_refused(secure: Cluster, admin: Client) -> None:
    long_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=2)
    token = await make_token(admin, "view", datetime.timedelta(hours=1), now=long_ago)
    status, body, _ = await raw(secure, "GET", "/api/v1/namespaces", token)
    assert (status, body["reason"]) == (401, "Unauthorized")
    fresh = await make_token(admin, "view", datetime.timedelta(hours=1))
    status, _, _ = await raw(secure, "GET", "/api/v1/namespaces", fresh)
    assert status == 200


async def test_a_revoked_token_stops_working_at_once(secure: Cluster, admin: Client) -> None:
    token = await make_token(admin, "view")
    assert (await raw(secure, "GET", "/api/v1/namespaces", token))[0] == 200
    await admin.delete("secrets", tokens.BOOTSTRAP_PREFIX + token.split(".")[0], tokens.NAMESPACE)
    assert (await raw(secure, "GET", "/api/v1/namespaces", token))[0] == 401


async def test_a_token_with_the_right_id_and_a_wrong_secret_is_refused(secure: Cluster, admin: Client) -> None:
    token = await make_token(admin, "view")
    token_id, secret = token.split(".")
    wrong = token_id + "." + ("0" if secret[0] != "0" else "1") + secret[1:]
    assert (await raw(secure, "GET", "/api/v1/namespaces", wrong))[0] == 401


async def test_a_bootstrap_secret_without_authentication_usage_is_no_credential(secure: Cluster,
                                                                                 admin: Client) -> None:
    token = await make_token(admin, "view")
    name = tokens.BOOTSTRAP_PREFIX + token.split(".")[0]
    await admin.patch("secrets", name, {"data": {"usage-bootstrap-authentication": "ZmFsc2U="}}, tokens.NAMESPACE)
    assert (await raw(secure, "GET", "/api/v1/namespaces", token))[0] == 401
