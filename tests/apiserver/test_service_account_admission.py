"""The ServiceAccount admission plugin on a cluster as `minik up` serves it (HTTPS, a CA to publish): every pod
runs as a service account that exists and gets Kubernetes' token volume, unless it or its account says not to."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.api.errors import StatusError
from minik.apiserver.admission.service_account import ServiceAccount
from minik.apiserver.auth.credentials import client_ssl_context
from minik.client import Client
from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.testing.namespaces import create_namespace

MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
#: the token volume's source, every field as Kubernetes 1.32 writes it
TOKEN_VOLUME = {"sources": [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                   "fieldPath": "metadata.namespace"}}]}},
], "defaultMode": 420}


@pytest.fixture
async def admin(tmp_path: Path) -> AsyncIterator[Client]:
    """An admin of a cluster with a CA (HTTPS), no components: nothing but what the test writes."""
    cluster = Cluster(ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL",
                                      disabled=frozenset(COMPONENTS)))
    await cluster.start()
    try:
        assert cluster.credentials is not None and cluster.admin_token is not None
        async with Client.http(cluster.url, cluster.admin_token,
                               ssl=client_ssl_context(cluster.credentials.ca_pem)) as client:
            yield client
    finally:
        await cluster.stop()


def pod(name: str, **spec: object) -> dict:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "app", "image": "busybox"}], **spec}}


def token_volumes(created: dict) -> list[dict]:
    return [v for v in created["spec"].get("volumes") or [] if v["name"].startswith("kube-api-access-")]


async def test_a_pod_runs_as_default_and_every_container_mounts_the_token_volume(admin: Client) -> None:
    created = await admin.create("pods", pod("p", initContainers=[{"name": "setup", "image": "busybox"}],
                                             containers=[{"name": "app", "image": "busybox"},
                                                         {"name": "side", "image": "busybox"}]), "default")
    spec = created["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    (volume,) = token_volumes(created)
    assert re.fullmatch(r"kube-api-access-[a-z0-9]{5}", volume["name"]), volume["name"]
    assert volume["projected"] == TOKEN_VOLUME
    mount = {"name": volume["name"], "readOnly": True, "mountPath": MOUNT_PATH}
    for container in spec["initContainers"] + spec["containers"]:
        assert container["volumeMounts"] == [mount], container["name"]


async def test_a_pod_whose_service_account_does_not_exist_is_forbidden_in_kubernetes_words(admin: Client) -> None:
    with pytest.raises(StatusError) as refused:
        await admin.create("pods", pod("lost", serviceAccountName="builder"), "default")
    assert (refused.value.code, refused.value.reason) == (403, "Forbidden")
    assert refused.value.message == ('pods "lost" is forbidden: error looking up service account default/builder: '
                                     'serviceaccount "builder" not found')
    assert refused.value.details == {"name": "lost", "kind": "pods"}
    await admin.create("serviceaccounts", {"metadata": {"name": "builder"}}, "default")
    created = await admin.create("pods", pod("found", serviceAccountName="builder"), "default")
    assert created["spec"]["serviceAccountName"] == "builder" and token_volumes(created)


async def test_a_namespace_without_its_default_account_refuses_pods_that_name_none(admin: Client) -> None:
    await admin.create("namespaces", {"metadata": {"name": "bare"}})
    with pytest.raises(StatusError) as refused:
        await admin.create("pods", pod("p"), "bare")
    assert refused.value.message == ('pods "p" is forbidden: error looking up service account bare/default: '
                                     'serviceaccount "default" not found')


async def test_the_pods_choice_wins_over_its_accounts_and_false_mounts_nothing(admin: Client) -> None:
    await admin.create("serviceaccounts", {"metadata": {"name": "quiet"}, "automountServiceAccountToken": False},
                       "default")
    by_pod = await admin.create("pods", pod("by-pod", automountServiceAccountToken=False), "default")
    by_account = await admin.create("pods", pod("by-account", serviceAccountName="quiet"), "default")
    for created in (by_pod, by_account):
        assert "volumes" not in created["spec"] and "volumeMounts" not in created["spec"]["containers"][0]
    overridden = await admin.create("pods", pod("overridden", serviceAccountName="quiet",
                                                automountServiceAccountToken=True), "default")
    assert len(token_volumes(overridden)) == 1


async def test_a_container_that_mounts_something_at_the_path_keeps_it(admin: Client) -> None:
    own = {"name": "mine", "mountPath": MOUNT_PATH}
    created = await admin.create("pods", pod("p", volumes=[{"name": "mine", "emptyDir": {}}], containers=[
        {"name": "own", "image": "busybox", "volumeMounts": [own]},
        {"name": "plain", "image": "busybox"}]), "default")
    (volume,) = token_volumes(created)
    own_container, plain = created["spec"]["containers"]
    assert own_container["volumeMounts"] == [own]
    assert plain["volumeMounts"] == [{"name": volume["name"], "readOnly": True, "mountPath": MOUNT_PATH}]
    alone = await admin.create("pods", pod("alone", volumes=[{"name": "mine", "emptyDir": {}}], containers=[
        {"name": "own", "image": "busybox", "volumeMounts": [own]}]), "default")
    assert token_volumes(alone) == []  # no container needs it: no volume


async def test_a_pod_with_a_token_volume_of_its_own_keeps_it_and_mounts_it(admin: Client) -> None:
    mine = {"name": "kube-api-access-mine1", "projected": TOKEN_VOLUME}
    created = await admin.create("pods", pod("p", volumes=[mine]), "default")
    assert token_volumes(created) == [mine]
    assert created["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "kube-api-access-mine1", "readOnly": True, "mountPath": MOUNT_PATH}]


async def test_a_pod_without_pull_secrets_gets_its_accounts(admin: Client) -> None:
    await admin.create("serviceaccounts", {"metadata": {"name": "puller"},
                                           "imagePullSecrets": [{"name": "registry-a"}, {"name": "registry-b"}]},
                       "default")
    given = await admin.create("pods", pod("given", serviceAccountName="puller"), "default")
    assert given["spec"]["imagePullSecrets"] == [{"name": "registry-a"}, {"name": "registry-b"}]
    own = await admin.create("pods", pod("own", serviceAccountName="puller",
                                         imagePullSecrets=[{"name": "mine"}]), "default")
    assert own["spec"]["imagePullSecrets"] == [{"name": "mine"}]


async def test_an_account_that_enforces_mountable_secrets_limits_the_pods_secrets(admin: Client) -> None:
    await admin.create("serviceaccounts", {
        "metadata": {"name": "strict", "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
        "secrets": [{"name": "allowed"}]}, "default")
    allowed = pod("ok", serviceAccountName="strict", volumes=[{"name": "s", "secret": {"secretName": "allowed"}}])
    assert (await admin.create("pods", allowed, "default"))["metadata"]["name"] == "ok"
    cases = {
        "volume": (pod("v", serviceAccountName="strict", volumes=[{"name": "s", "secret": {"secretName": "other"}}]),
                   'volume with secret.secretName="other" is not allowed because service account strict does '
                   'not reference that secret'),
        "env": (pod("e", serviceAccountName="strict", containers=[{"name": "app", "image": "busybox", "env": [
            {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}]}]),
                'container app with envVar PASSWORD referencing secret.secretName="other" is not allowed because '
                'service account strict does not reference that secret'),
        "pull": (pod("i", serviceAccountName="strict", imagePullSecrets=[{"name": "registry"}]),
                 'imagePullSecrets[0].name="registry" is not allowed because service account strict does not '
                 'reference that imagePullSecret'),
    }
    for what, (body, reason) in cases.items():
        with pytest.raises(StatusError) as refused:
            await admin.create("pods", body, "default")
        assert refused.value.message == f'pods "{body["metadata"]["name"]}" is forbidden: {reason}', what


async def test_a_mirror_pod_gets_no_account_and_may_reference_none_nor_secrets_nor_tokens(admin: Client) -> None:
    mirror = {"kubernetes.io/config.mirror": "hash"}

    def mirror_pod(name: str, **spec: object) -> dict:
        return {"metadata": {"name": name, "annotations": mirror},
                "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "busybox"}], **spec}}

    created = await admin.create("pods", mirror_pod("plain"), "default")
    assert "serviceAccountName" not in created["spec"] and "volumes" not in created["spec"]
    refused = {
        "a mirror pod may not reference service accounts": mirror_pod("sa", serviceAccountName="default"),
        "a mirror pod may not reference secrets": mirror_pod("secret", volumes=[
            {"name": "s", "secret": {"secretName": "x"}}]),
        "a mirror pod may not use ServiceAccountToken volume projections": mirror_pod("token", volumes=[
            {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]),
    }
    for reason, body in refused.items():
        with pytest.raises(StatusError) as error:
            await admin.create("pods", body, "default")
        assert (error.value.code, error.value.message) == (
            403, f'pods "{body["metadata"]["name"]}" is forbidden: {reason}')


async def test_default_is_waited_for_a_moment_since_its_controller_makes_it_just_after_the_namespace(
        tmp_path: Path) -> None:
    """The plugin looks for ``default`` again while the service account controller would be making it: here the
    account appears during the plugin's first pause (its pauses are the plugin's own, so no time is guessed)."""
    from minik.api.resources import REGISTRY
    from minik.apiserver.admission.base import Attributes, ObjectReader
    from minik.apiserver.auth.authn import TokenAuthenticator
    from minik.apiserver.authorization import AuthorizerChain, PrivilegedGroups
    from minik.apiserver.request import User
    from minik.apiserver.server import ApiServer
    from minik.store import Store, StoreSettings

    store = await Store.open(StoreSettings(path=tmp_path / "s.db", synchronous="NORMAL"))
    try:
        api = ApiServer(store, REGISTRY, authenticator=TokenAuthenticator(ObjectReader(store, REGISTRY)),
                        authorizer=AuthorizerChain([PrivilegedGroups()]))
        await api.bootstrap()
        await api.rests[("", "v1", "namespaces")].create({"metadata": {"name": "young"}}, None, User("admin"))
        pauses: list[float] = []

        async def controller_makes_it(seconds: float) -> None:
            pauses.append(seconds)
            if len(pauses) == 1:
                await api.rests[("", "v1", "serviceaccounts")].create({"metadata": {"name": "default"}}, "young",
                                                                      User("admin"))

        plugin = ServiceAccount(ObjectReader(store, REGISTRY), sleep=controller_makes_it)
        body = pod("p")
        attrs = Attributes("CREATE", REGISTRY.get("", "v1", "pods"), None, "young", "p", body, None, User("a"))
        await plugin.admit(attrs)
        assert body["spec"]["serviceAccountName"] == "default" and len(pauses) == 1
        assert 0.1 <= pauses[0] <= 0.2
        with pytest.raises(StatusError):  # any other account is looked for once
            await plugin.admit(Attributes("CREATE", REGISTRY.get("", "v1", "pods"), None, "young", "q",
                                          pod("q", serviceAccountName="later"), None, User("a")))
        assert len(pauses) == 1
    finally:
        await store.close()


async def test_every_system_namespace_has_its_default_account_from_the_start(admin: Client) -> None:
    for namespace in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert (await admin.get("serviceaccounts", "default", namespace))["metadata"]["name"] == "default"


async def test_the_namespace_helper_makes_what_pods_need(admin: Client) -> None:
    await create_namespace(admin, "team")
    assert (await admin.create("pods", pod("p"), "team"))["spec"]["serviceAccountName"] == "default"


async def test_a_token_projection_gets_an_hour_by_default_and_one_no_token_request_can_serve_is_invalid(
        admin: Client) -> None:
    def projected(name: str, **token: object) -> dict:
        return pod(name, volumes=[{"name": "t", "projected": {"sources": [{"serviceAccountToken": token}]}}])

    created = await admin.create("pods", projected("hour", path="token", audience="vault"), "default")
    assert created["spec"]["volumes"][0]["projected"] == {
        "sources": [{"serviceAccountToken": {"path": "token", "audience": "vault", "expirationSeconds": 3600}}],
        "defaultMode": 420}
    with pytest.raises(StatusError) as refused:
        await admin.create("pods", projected("short", path="token", expirationSeconds=60), "default")
    assert refused.value.code == 422
    assert refused.value.details["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.volumes[0].projected.sources[0].serviceAccountToken."
                                               "expirationSeconds",
        "message": "Invalid value: 60: may not specify a duration less than 10 minutes"}]
