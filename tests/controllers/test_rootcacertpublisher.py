"""The root CA publisher in a cluster as `minik up` runs it (HTTPS, every controller writing as its own service
account under RBAC): every namespace gets kube-root-ca.crt with the cluster's CA, and gets it back when it is
deleted or changed. Run alone (`minik controllers`), it publishes the CA its kubeconfig trusts."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from controller_helpers import eventually

from minik import kubeconfig
from minik.api.errors import StatusError
from minik.apiserver.auth.credentials import client_ssl_context
from minik.client import Client
from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.controllers.manager import ControllerSettings
from minik.controllers.rootcacertpublisher import DESCRIPTION


async def secure_cluster(data_dir: Path, disabled: frozenset[str]) -> Cluster:
    cluster = Cluster(ClusterSettings(data_dir=data_dir, port=0, synchronous="NORMAL", disabled=disabled,
                                      controllers=ControllerSettings(workers=2)))
    await cluster.start()
    return cluster


def admin_of(cluster: Cluster) -> Client:
    assert cluster.credentials is not None
    return Client.http(cluster.url, cluster.admin_token, ssl=client_ssl_context(cluster.credentials.ca_pem))


@pytest.fixture
async def controlled(tmp_path: Path) -> AsyncIterator[tuple[Cluster, Client]]:
    cluster = await secure_cluster(tmp_path / "c", frozenset(COMPONENTS) - {"controllers"})
    try:
        async with admin_of(cluster) as admin:
            yield cluster, admin
    finally:
        await cluster.stop()


async def published(admin: Client, namespace: str) -> dict | None:
    try:
        return await admin.get("configmaps", "kube-root-ca.crt", namespace)
    except StatusError as exc:
        if exc.code == 404:
            return None
        raise


async def test_every_namespace_gets_the_cluster_ca_and_gets_it_back_when_deleted_or_changed(
        controlled: tuple[Cluster, Client]) -> None:
    cluster, admin = controlled
    assert cluster.credentials is not None
    ca = cluster.credentials.ca_pem.decode()
    await admin.create("namespaces", {"metadata": {"name": "team"}})
    for namespace in ("default", "kube-system", "kube-public", "kube-node-lease", "team"):
        configmap = await eventually(lambda namespace=namespace: published(admin, namespace))
        assert configmap["data"] == {"ca.crt": ca}
        assert configmap["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}

    first = await admin.get("configmaps", "kube-root-ca.crt", "team")
    await admin.delete("configmaps", "kube-root-ca.crt", "team")

    async def made_again() -> dict | None:
        found = await published(admin, "team")
        return found if found is not None and found["metadata"]["uid"] != first["metadata"]["uid"] else None
    assert (await eventually(made_again))["data"] == {"ca.crt": ca}

    await admin.patch("configmaps", "kube-root-ca.crt", {"data": {"ca.crt": "forged"}}, "team")

    async def repaired() -> bool:
        found = await published(admin, "team")
        return found is not None and found["data"] == {"ca.crt": ca}
    await eventually(repaired)


async def test_the_controller_writes_as_its_own_account_with_only_the_rights_it_needs(
        controlled: tuple[Cluster, Client]) -> None:
    _, admin = controlled
    role = await admin.get("clusterroles", "system:controller:root-ca-cert-publisher")
    assert role["rules"] == [
        {"verbs": ["create", "update"], "apiGroups": [""], "resources": ["configmaps"]},
        {"verbs": ["create", "patch", "update"], "apiGroups": ["", "events.k8s.io"], "resources": ["events"]}]
    binding = await admin.get("clusterrolebindings", "system:controller:root-ca-cert-publisher")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "root-ca-cert-publisher",
                                    "namespace": "kube-system"}]


async def test_run_alone_it_publishes_the_ca_its_kubeconfig_trusts(tmp_path: Path) -> None:
    cluster = await secure_cluster(tmp_path / "c", frozenset(COMPONENTS))
    try:
        assert cluster.credentials is not None and cluster.admin_token is not None
        config = tmp_path / "kubeconfig"
        kubeconfig.write(config, kubeconfig.for_cluster("test", cluster.url, ca_data=cluster.credentials.ca_pem,
                                                        token=cluster.admin_token))
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "minik", "controllers", "--kubeconfig", str(config), "--controller",
            "root-ca-cert-publisher", "--log-level", "warning", env=dict(os.environ),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            async with admin_of(cluster) as admin:
                configmap = await eventually(lambda: published(admin, "default"), timeout=30)
                assert configmap["data"] == {"ca.crt": cluster.credentials.ca_pem.decode()}
        finally:
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), 30)
        assert process.returncode == 0
    finally:
        await cluster.stop()
