"""Projected volumes as the kubelet writes them (minik.kubelet.containers, minik.kubelet.tokens), against a real
HTTPS cluster: the service account token volume every pod gets (a token bound to the pod, the cluster CA, the
namespace), the other sources, and the token's renewal at 80 % of its lifetime, on a clock the test moves."""

from __future__ import annotations

import asyncio
import base64
import json
import stat
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from minik.api.errors import StatusError
from minik.apiserver.auth.credentials import client_ssl_context
from minik.client import Client
from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.kubelet.containers import ContainerConfigs
from minik.kubelet.runtimes.base import RuntimeFailure
from minik.kubelet.tokens import MAX_AGE_SECONDS, Token, TokenManager, read_token, refresh_after
from minik.testing.clock import FakeClock

MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


@dataclass
class Setup:
    cluster: Cluster
    admin: Client
    clock: FakeClock
    configs: ContainerConfigs
    ca: str

    def new_configs(self) -> ContainerConfigs:
        """Another kubelet on the same data directory (a restart)."""
        return ContainerConfigs(self.admin, self.configs.pods_dir.parent, "192.0.2.2", {},
                                TokenManager(self.admin, self.clock))


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    cluster = Cluster(ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL",
                                      disabled=frozenset(COMPONENTS)))
    await cluster.start()
    try:
        assert cluster.credentials is not None
        ca = cluster.credentials.ca_pem.decode()
        async with Client.http(cluster.url, cluster.admin_token,
                               ssl=client_ssl_context(cluster.credentials.ca_pem)) as admin:
            # what the root CA publisher would have made (no controllers run here)
            await admin.create("configmaps", {"metadata": {"name": "kube-root-ca.crt"}, "data": {"ca.crt": ca}},
                               "default")
            clock = FakeClock()
            configs = ContainerConfigs(admin, tmp_path / "kubelet", "192.0.2.2", {},
                                       TokenManager(admin, clock))
            try:
                yield Setup(cluster, admin, clock, configs, ca)
            finally:
                await configs.stop()
    finally:
        await cluster.stop()


async def create_pod(admin: Client, name: str = "app", **spec: object) -> dict:
    return await admin.create("pods", {"metadata": {"name": name}, "spec": {
        "containers": [{"name": "c", "image": "busybox"}], **spec}}, "default")


async def token_volume_dir(setup: Setup, pod: dict) -> Path:
    """Write the pod's volumes as a container start does; the host directory mounted at MOUNT_PATH."""
    container = pod["spec"]["containers"][0]
    (mount,) = [m for m in await setup.configs.mounts(pod, container, "172.17.0.9") if m.container_path == MOUNT_PATH]
    assert mount.read_only
    return Path(mount.host_path)


def claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


async def who(setup: Setup, token: str) -> dict:
    """What the API server makes of a token (a SelfSubjectReview sent with it)."""
    assert setup.cluster.credentials is not None
    async with Client.http(setup.cluster.url, token,
                           ssl=client_ssl_context(setup.cluster.credentials.ca_pem)) as client:
        review = await client.create("selfsubjectreviews.authentication.k8s.io",
                                     {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return review["status"]["userInfo"]


async def eventually_changes(path: Path, before: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while (now := path.read_text()) == before:
        assert time.monotonic() < deadline, f"{path} did not change in {timeout}s"
        await asyncio.sleep(0.01)
    return now


def test_a_token_is_renewed_at_80_percent_of_its_life_and_never_later_than_a_day() -> None:
    assert refresh_after(3607) == pytest.approx(2885.6)
    assert refresh_after(600) == 480
    assert refresh_after(10 * 24 * 3600) == MAX_AGE_SECONDS == 24 * 3600
    assert Token("t", issued=1000.0, lifetime=600).refresh_at == 1480.0


async def test_the_token_volume_holds_a_token_bound_to_the_pod_the_cluster_ca_and_the_namespace(
        setup: Setup) -> None:
    pod = await create_pod(setup.admin)
    directory = await token_volume_dir(setup, pod)
    assert sorted(p.name for p in directory.iterdir()) == ["ca.crt", "namespace", "token"]
    assert (directory / "ca.crt").read_text() == setup.ca
    assert (directory / "namespace").read_text() == "default"
    for name in ("ca.crt", "namespace", "token"):
        assert stat.S_IMODE((directory / name).stat().st_mode) == 0o644, name
    token = (directory / "token").read_text()
    said = claims(token)
    assert said["sub"] == "system:serviceaccount:default:default"
    assert said["kubernetes.io"]["pod"] == {"name": "app", "uid": pod["metadata"]["uid"]}
    assert said["exp"] - said["iat"] == 3607
    user = await who(setup, token)
    assert user["username"] == "system:serviceaccount:default:default"
    assert user["extra"]["authentication.kubernetes.io/pod-uid"] == [pod["metadata"]["uid"]]


async def test_a_second_container_start_reuses_the_token_while_it_is_fresh(setup: Setup) -> None:
    pod = await create_pod(setup.admin)
    directory = await token_volume_dir(setup, pod)
    first = (directory / "token").read_text()
    await token_volume_dir(setup, pod)
    assert (directory / "token").read_text() == first


async def test_a_short_lived_token_is_renewed_at_80_percent_of_its_life(setup: Setup) -> None:
    pod = await create_pod(setup.admin, volumes=[{"name": "short", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token", "expirationSeconds": 600}}]}}],
        containers=[{"name": "c", "image": "busybox", "volumeMounts": [{"name": "short", "mountPath": "/t"}]}],
        automountServiceAccountToken=False)
    container = pod["spec"]["containers"][0]
    (mount,) = await setup.configs.mounts(pod, container, "172.17.0.9")
    path = Path(mount.host_path) / "token"
    first = path.read_text()
    assert claims(first)["exp"] - claims(first)["iat"] == 600
    uid = pod["metadata"]["uid"]
    assert setup.configs.tokens.refresh_at(uid) == pytest.approx(setup.clock.now() + 480)

    setup.clock.step(479)
    for _ in range(20):  # let the renewal task look at the clock
        await asyncio.sleep(0)
    assert path.read_text() == first

    setup.clock.step(2)
    second = await eventually_changes(path, first)
    assert claims(second)["jti"] != claims(first)["jti"]
    assert setup.configs.tokens.refresh_at(uid) == pytest.approx(setup.clock.now() + 480)
    assert (await who(setup, second))["username"] == "system:serviceaccount:default:default"


async def test_a_restarted_kubelet_renews_the_tokens_the_last_one_wrote(setup: Setup) -> None:
    pod = await create_pod(setup.admin)
    path = await token_volume_dir(setup, pod) / "token"
    written = read_token(path.read_text())
    assert written is not None and written.lifetime == 3607
    await setup.configs.stop()

    restarted = setup.new_configs()
    try:
        await restarted.keep_tokens(pod)
        uid = pod["metadata"]["uid"]
        assert restarted.tokens.refresh_at(uid) == pytest.approx(written.issued + 0.8 * 3607)
        before = path.read_text()
        setup.clock.step(3607 * 0.8 + 1)
        await eventually_changes(path, before)
        finished = {**pod, "status": {"phase": "Succeeded"}}
        await restarted.keep_tokens(finished)  # a finished pod's tokens are renewed no more
        assert not restarted.tokens.tracks(uid)
    finally:
        await restarted.stop()


async def test_removing_the_pod_stops_the_renewal_and_drops_the_files(setup: Setup) -> None:
    pod = await create_pod(setup.admin)
    directory = await token_volume_dir(setup, pod)
    uid = pod["metadata"]["uid"]
    assert setup.configs.tokens.tracks(uid)
    await setup.configs.remove(uid)
    assert not setup.configs.tokens.tracks(uid) and not directory.exists()


async def test_projected_configmaps_secrets_and_downward_api_land_with_their_modes(setup: Setup) -> None:
    await setup.admin.create("configmaps", {"metadata": {"name": "settings"}, "data": {"a": "1", "b": "2"}},
                             "default")
    await setup.admin.create("secrets", {"metadata": {"name": "keys"},
                                         "data": {"key": base64.b64encode(b"s3cret").decode()}}, "default")
    pod = await create_pod(setup.admin, automountServiceAccountToken=False, volumes=[{"name": "all", "projected": {
        "defaultMode": 0o640, "sources": [
            {"configMap": {"name": "settings"}},
            {"secret": {"name": "keys", "items": [{"key": "key", "path": "private/key", "mode": 0o600}]}},
            {"configMap": {"name": "absent", "optional": True}},
            {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}}],
        containers=[{"name": "c", "image": "busybox", "volumeMounts": [{"name": "all", "mountPath": "/all"}]}])
    (mount,) = await setup.configs.mounts(pod, pod["spec"]["containers"][0], "172.17.0.9")
    root = Path(mount.host_path)
    files = {str(p.relative_to(root)): (p.read_text(), stat.S_IMODE(p.stat().st_mode))
             for p in root.rglob("*") if p.is_file()}
    assert files == {"a": ("1", 0o640), "b": ("2", 0o640), "private/key": ("s3cret", 0o600),
                     "labels": ("app", 0o640)}


async def test_without_the_root_ca_configmap_the_container_cannot_start(setup: Setup) -> None:
    await setup.admin.delete("configmaps", "kube-root-ca.crt", "default")
    pod = await create_pod(setup.admin)
    with pytest.raises(RuntimeFailure) as failed:
        await token_volume_dir(setup, pod)
    assert (failed.value.reason, failed.value.message) == ("CreateContainerConfigError",
                                                           'configmap "kube-root-ca.crt" not found')


async def test_a_token_the_api_refuses_keeps_the_container_from_starting(setup: Setup) -> None:
    pod = await create_pod(setup.admin)
    await setup.admin.delete("serviceaccounts", "default", "default")
    with pytest.raises(RuntimeFailure) as failed:
        await token_volume_dir(setup, pod)
    assert failed.value.reason == "CreateContainerConfigError"
    assert failed.value.message == 'failed to fetch token: serviceaccounts "default" not found'


async def test_a_source_with_an_audience_gets_a_token_for_it_that_the_api_server_refuses(setup: Setup) -> None:
    pod = await create_pod(setup.admin, automountServiceAccountToken=False, volumes=[{"name": "vault", "projected": {
        "sources": [{"serviceAccountToken": {"path": "vault-token", "audience": "vault"}}]}}],
        containers=[{"name": "c", "image": "busybox", "volumeMounts": [{"name": "vault", "mountPath": "/v"}]}])
    (mount,) = await setup.configs.mounts(pod, pod["spec"]["containers"][0], "172.17.0.9")
    token = (Path(mount.host_path) / "vault-token").read_text()
    assert claims(token)["aud"] == ["vault"] and claims(token)["exp"] - claims(token)["iat"] == 3600
    with pytest.raises(StatusError) as refused:
        await who(setup, token)
    assert refused.value.code == 401
