"""Who gets in: no token is 401 (but health and version are public), a wrong token is 401, the admin token
works, anonymous may read only the cluster-info the joins need, and in-process components are who they say."""

from __future__ import annotations

import base64
import gc
import stat

import pytest
from security_helpers import connect, raw

from minik.api.errors import StatusError
from minik.apiserver.auth import authz
from minik.client import TransportError
from minik.cluster import Cluster


async def test_a_request_without_a_token_is_401_but_health_and_version_are_public(secure: Cluster) -> None:
    for path in ("/api/v1/namespaces", "/api/v1/namespaces/default/pods", "/apis", "/api", "/openapi/v3",
                 "/apis/apps/v1", "/"):
        status, body, _ = await raw(secure, "GET", path)
        assert (status, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized"), path
    status, _, _ = await raw(secure, "POST", "/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "x"}})
    assert status == 401
    for path in ("/healthz", "/livez", "/readyz", "/version"):
        status, _, _ = await raw(secure, "GET", path)
        assert status == 200, path


async def test_a_wrong_or_malformed_token_is_401(secure: Cluster) -> None:
    assert secure.admin_token is not None
    for token in ("nope", secure.admin_token[:-1] + ("x" if secure.admin_token[-1] != "x" else "y"),
                  "abcdef.0123456789abcdef", "abcdef.0123456789abcdef0123456789abcdef"):
        status, body, _ = await raw(secure, "GET", "/api/v1/namespaces", token)
        assert (status, body["reason"]) == (401, "Unauthorized"), token


async def test_requests_refused_as_unauthorized_are_not_kept_alive(secure: Cluster) -> None:
    """Raising one shared error again chained every raise's traceback to it, and with them each refused request
    (its headers and body) for as long as the server ran."""
    from minik.apiserver.request import ApiRequest

    def requests_alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if type(o) is ApiRequest)

    before = requests_alive()
    for _ in range(20):
        status, _, _ = await raw(secure, "POST", "/api/v1/namespaces/default/configmaps", data=b"x" * 100_000)
        assert status == 401
    assert requests_alive() - before < 5


async def test_the_admin_token_reads_and_writes(secure: Cluster) -> None:
    async with connect(secure, secure.admin_token) as admin:
        await admin.create("configmaps", {"metadata": {"name": "c"}, "data": {"k": "v"}}, "default")
        assert (await admin.get("configmaps", "c", "default"))["data"] == {"k": "v"}


async def test_plain_http_is_not_served_by_a_secure_cluster(secure: Cluster) -> None:
    async with connect(secure, secure.admin_token) as admin:
        admin.transport.url = secure.url.replace("https://", "http://")  # type: ignore[attr-defined]
        with pytest.raises(TransportError):
            await admin.list("namespaces")


async def test_anonymous_may_read_cluster_info_and_nothing_else_in_kube_public(secure: Cluster) -> None:
    status, body, _ = await raw(secure, "GET", "/api/v1/namespaces/kube-public/configmaps/cluster-info")
    assert status == 200
    assert "certificate-authority-data" in body["data"]["kubeconfig"]
    assert "token" not in body["data"]["kubeconfig"]
    status, _, _ = await raw(secure, "GET", "/api/v1/namespaces/kube-public/configmaps")
    assert status == 401
    status, _, _ = await raw(secure, "PUT", "/api/v1/namespaces/kube-public/configmaps/cluster-info",
                             json={"metadata": {"name": "cluster-info"}})
    assert status == 401


async def test_keys_and_the_admin_token_are_owner_only_files(secure: Cluster) -> None:
    pki = secure.settings.data_dir / "pki"
    assert stat.S_IMODE(pki.stat().st_mode) == 0o700
    for name in ("ca.key", "apiserver.key", "apiserver-kubelet-client.key", "admin.token"):
        assert stat.S_IMODE((pki / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE(secure.settings.db_path.stat().st_mode) == 0o600


async def test_in_process_components_go_through_authorization_with_their_own_identity(secure: Cluster) -> None:
    from minik.apiserver.request import User

    scheduler = secure.in_process_client(User(authz.SCHEDULER))
    await scheduler.list("pods")
    with pytest.raises(StatusError) as refused:
        await scheduler.list("secrets", "kube-system")
    assert refused.value.code == 403
    assert 'User "system:kube-scheduler" cannot list resource "secrets"' in refused.value.message
    anonymous = secure.in_process_client(User("x"))
    anonymous.transport._token = None  # type: ignore[attr-defined]  # a request with no credentials at all
    with pytest.raises(StatusError) as unauthorized:
        await anonymous.list("pods")
    assert unauthorized.value.code == 401


async def test_a_token_with_a_trailing_newline_is_not_the_token(secure: Cluster) -> None:
    """``$`` matches before a final newline; a token must be matched whole, however its pattern is used."""
    from security_helpers import make_token

    from minik.api import tokens

    async with connect(secure, secure.admin_token) as admin:
        token = await make_token(admin)
    assert secure.api is not None
    authenticator = secure.api.authenticator.inner  # type: ignore[attr-defined]  # under impersonation
    assert authenticator.authenticate_token(token) is not None
    for suffix in ("\n", "\r\n", " "):
        assert authenticator.authenticate_token(token + suffix) is None, repr(suffix)
    node_token = "abcdef." + "0" * 32
    for pattern, good in ((tokens.BOOTSTRAP_TOKEN, token), (tokens.NODE_TOKEN, node_token),
                          (tokens.TOKEN_ID, token[:6])):
        assert pattern.match(good) and pattern.fullmatch(good)
        assert pattern.match(good + "\n") is None and pattern.fullmatch(good + "\n") is None
    secret = tokens.bootstrap_secret(token, "node", None)
    secret["data"]["token-secret"] = base64.b64encode(token.split(".")[1].encode() + b"\n").decode()
    assert tokens.read_bootstrap_secret(secret) is None
