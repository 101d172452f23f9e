"""A join token is never handed a node name that is taken: the cluster's own node (the local node of `minik up`,
with or without its Node object), a name with a Node object, a name with a credential. An impostor with the
local node's credential could read its pods' Secrets, take over their logs and exec (the API server relays them
to the endpoint the impostor writes into the Node: 503 once it is gone) and post mirror pods the real kubelet
runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from security_helpers import ca_hash, connect, make_token, raw

from minik.api import tokens
from minik.client import Client
from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.kubelet.component import NodeComponent
from minik.kubelet.join import JoinError, join
from tests.kubelet.helpers import phase, pod_manifest, wait_for_pod

LOCAL = "control-plane-node"


@pytest.fixture
async def with_local_node(tmp_path: Path) -> AsyncIterator[Cluster]:
    """A cluster as `minik up` serves it, with its local node (fake runtime) registered."""
    cluster = Cluster(ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                                      disabled=frozenset(COMPONENTS) - {"node"}, node_name=LOCAL,
                                      node_runtime="fake"))
    await cluster.start()
    try:
        component: NodeComponent = cluster.components["node"]  # type: ignore[assignment]
        await asyncio.wait_for(component.local_ready.wait(), 20)
        assert component.local is not None
        await component.local.wait_registered(10)
        yield cluster
    finally:
        await cluster.stop()


async def credentials_of(admin: Client, node: str) -> list[dict]:
    return [s for s in (await admin.list("secrets", tokens.NAMESPACE))["items"]
            if (tokens.read_node_credential_secret(s) or tokens.NodeCredential("", "", "")).node == node]


async def read_logs(admin: Client, pod: str) -> str:
    logs = await admin.logs(pod, "default")
    try:
        return b"".join([chunk async for chunk in logs.chunks]).decode()
    finally:
        await logs.close()


async def test_a_join_token_cannot_take_the_local_nodes_name_whose_pods_keep_their_logs(
        with_local_node: Cluster, tmp_path: Path) -> None:
    async with connect(with_local_node, with_local_node.admin_token) as admin:
        await admin.create("pods", pod_manifest("app", node=LOCAL))
        await wait_for_pod(admin, "app", lambda p: phase(p) == "Running")
        endpoint = (await admin.get("nodes", LOCAL))["status"]["daemonEndpoints"]
        assert await read_logs(admin, "app") == ""  # served by the local kubelet (a fake container prints nothing)

        token = await make_token(admin)
        with pytest.raises(JoinError, match=rf'HTTP 409\): nodecredentials.minik.io "{LOCAL}" already exists; it is '
                                            r"a node this cluster runs itself"):
            await join(with_local_node.url, token, ca_hash(with_local_node), LOCAL, tmp_path / "impostor")
        assert await credentials_of(admin, LOCAL) == []
        assert not (tmp_path / "impostor" / "kubelet.conf").exists()
        # nothing took the node's endpoint: the API server still reaches the real kubelet
        assert (await admin.get("nodes", LOCAL))["status"]["daemonEndpoints"] == endpoint
        assert await read_logs(admin, "app") == ""

        await admin.delete("nodes", LOCAL)  # without its Node object the name is still the local node's
        with pytest.raises(JoinError, match="HTTP 409.*a node this cluster runs itself"):
            await join(with_local_node.url, token, ca_hash(with_local_node), LOCAL, tmp_path / "impostor")
        status, answer, _ = await raw(with_local_node, "POST", "/minik/v1/nodecredentials",
                                      with_local_node.admin_token,
                                      json={"kind": "NodeCredentialRequest", "nodeName": LOCAL})
        assert (status, answer["reason"]) == (409, "AlreadyExists")  # nor to an admin
        assert await credentials_of(admin, LOCAL) == []


async def test_a_join_token_cannot_take_the_name_of_an_existing_node(secure: Cluster, admin: Client,
                                                                     tmp_path: Path) -> None:
    await admin.create("nodes", {"metadata": {"name": "worker-1"}})
    token = await make_token(admin)
    with pytest.raises(JoinError) as refused:
        await join(secure.url, token, ca_hash(secure), "worker-1", tmp_path / "a")
    assert str(refused.value) == (
        'the join was refused (HTTP 409): nodecredentials.minik.io "worker-1" already exists; a Node of this name '
        "exists: to join a machine under this name, delete the Node (`minik delete node worker-1`) and its "
        "credential if it has one (`minik token list`, `minik token delete ID`)")
    assert await credentials_of(admin, "worker-1") == []
    await admin.delete("nodes", "worker-1")  # the name is free again
    joined = await join(secure.url, token, ca_hash(secure), "worker-1", tmp_path / "b")
    assert joined.node_name == "worker-1"


async def test_a_fresh_name_is_issued_one_credential_even_to_two_joins_at_once(secure: Cluster, admin: Client,
                                                                              tmp_path: Path) -> None:
    token = await make_token(admin)
    results = await asyncio.gather(*(join(secure.url, token, ca_hash(secure), "worker-1", tmp_path / str(i))
                                     for i in range(2)), return_exceptions=True)
    assert sorted(type(r).__name__ for r in results) == ["JoinError", "JoinedNode"]
    assert len(await credentials_of(admin, "worker-1")) == 1


async def test_an_admin_reissues_a_revoked_nodes_credential_and_the_node_keeps_its_node(
        secure: Cluster, admin: Client, tmp_path: Path) -> None:
    token = await make_token(admin)
    first = await join(secure.url, token, ca_hash(secure), "worker-1", tmp_path / "a")
    async with first.client() as node:
        await node.create("nodes", {"metadata": {"name": "worker-1"}})
    await admin.patch("nodes", "worker-1", {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}})
    request = {"kind": "NodeCredentialRequest", "nodeName": "worker-1"}
    status, answer, _ = await raw(secure, "POST", "/minik/v1/nodecredentials", secure.admin_token, json=request)
    assert (status, answer["reason"]) == (409, "AlreadyExists")  # an admin too revokes the old one first
    assert f"minik token delete {first.token.split('.')[0]}" in answer["message"]

    await admin.delete("secrets", tokens.NODE_CREDENTIAL_PREFIX + first.token.split(".")[0], tokens.NAMESPACE)
    with pytest.raises(JoinError, match="HTTP 409.*a Node of this name exists"):  # a join token may not
        await join(secure.url, token, ca_hash(secure), "worker-1", tmp_path / "b")
    status, answer, _ = await raw(secure, "POST", "/minik/v1/nodecredentials", secure.admin_token, json=request)
    assert status == 201, answer
    async with connect(secure, answer["token"]) as node:
        kept = await node.get("nodes", "worker-1")
    assert kept["spec"]["taints"] == [{"key": "k", "effect": "NoSchedule"}]
