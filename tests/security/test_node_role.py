"""A node's credential (system:node:NAME) as Kubernetes' node authorizer and NodeRestriction bound it: its own Node
and Lease, the status of pods bound to it, the Secrets and ConfigMaps of those pods, and nothing of anyone else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from security_helpers import join_node

from minik.api.errors import StatusError
from minik.client import Client
from minik.cluster import Cluster


def pod(name: str, node: str | None, **spec: object) -> dict:
    body: dict = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}
    if node:
        body["spec"]["nodeName"] = node
    return body


@pytest.fixture
async def node(secure: Cluster, admin: Client, tmp_path: Path) -> AsyncIterator[Client]:
    """worker-1, joined for real, with worker-2 (another node) and pods on both."""
    other = await join_node(secure, admin, "worker-2", tmp_path / "w2")
    async with other.client() as w2:
        await w2.create("nodes", {"metadata": {"name": "worker-2"}})
    joined = await join_node(secure, admin, "worker-1", tmp_path / "w1")
    for name, data in (("mine-cm", {"k": "v"}), ("theirs-cm", {"k": "v"})):
        await admin.create("configmaps", {"metadata": {"name": name}, "data": data}, "default")
    await admin.create("secrets", {"metadata": {"name": "mine-secret"}, "stringData": {"p": "x"}}, "default")
    await admin.create("secrets", {"metadata": {"name": "theirs-secret"}, "stringData": {"p": "x"}}, "default")
    await admin.create("pods", pod("mine", "worker-1", volumes=[{"name": "v", "configMap": {"name": "mine-cm"}}],
                                   imagePullSecrets=[{"name": "mine-secret"}]), "default")
    await admin.create("pods", pod("theirs", "worker-2", volumes=[{"name": "v", "secret": {
        "secretName": "theirs-secret"}}], envFrom=[]), "default")
    async with joined.client() as client:
        await client.create("nodes", {"metadata": {"name": "worker-1", "labels": {"kubernetes.io/hostname": "w1"}}})
        yield client


async def refused(call: object) -> StatusError:
    with pytest.raises(StatusError) as error:
        await call  # type: ignore[misc]
    assert error.value.code == 403, error.value
    return error.value


async def test_a_node_writes_its_own_node_lease_and_events(node: Client) -> None:
    await node.patch_status("nodes", "worker-1", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    await node.patch("nodes", "worker-1", {"metadata": {"labels": {"kubelet.kubernetes.io/x": "y"}}})
    lease = {"metadata": {"name": "worker-1"}, "spec": {"holderIdentity": "worker-1"}}
    await node.create("leases", lease, "kube-node-lease")
    await node.patch("leases", "worker-1", {"spec": {"leaseDurationSeconds": 40}}, "kube-node-lease")
    await node.create("events", {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Node", "name": "worker-1"},
                                 "reason": "Starting", "message": "m"}, "default")
    assert len((await node.list("pods"))["items"]) == 2  # a kubelet lists pods (by field selector)


async def test_a_node_credential_cannot_modify_another_node(node: Client) -> None:
    error = await refused(node.patch("nodes", "worker-2", {"metadata": {"labels": {"a": "b"}}}))
    assert error.message == 'nodes "worker-2" is forbidden: node "worker-1" is not allowed to modify node "worker-2"'
    await refused(node.patch_status("nodes", "worker-2", {"status": {"phase": "x"}}))
    await refused(node.delete("nodes", "worker-2"))
    created = await refused(node.create("nodes", {"metadata": {"name": "worker-3"}}))
    assert created.message == 'nodes "worker-3" is forbidden: node "worker-1" is not allowed to modify node "worker-3"'
    await refused(node.create("leases", {"metadata": {"name": "worker-2"}, "spec": {}}, "kube-node-lease"))
    await refused(node.create("leases", {"metadata": {"name": "worker-1"}, "spec": {}}, "default"))


async def test_a_node_cannot_change_its_taints_or_admin_only_labels(node: Client) -> None:
    error = await refused(node.patch("nodes", "worker-1", {"spec": {"taints": [
        {"key": "k", "effect": "NoSchedule"}]}}))
    assert error.message.endswith('node "worker-1" is not allowed to modify taints')
    error = await refused(node.patch("nodes", "worker-1", {"metadata": {"labels": {
        "node-restriction.kubernetes.io/trusted": "yes"}}}))
    assert "node-restriction.kubernetes.io/trusted" in error.message
    await refused(node.patch("nodes", "worker-1", {"metadata": {"labels": {"node-role.kubernetes.io/master": ""}}}))


async def test_a_node_writes_the_status_only_of_pods_bound_to_it(node: Client) -> None:
    await node.patch_status("pods", "mine", {"status": {"phase": "Running"}}, "default")
    error = await refused(node.patch_status("pods", "theirs", {"status": {"phase": "Failed"}}, "default"))
    assert error.message == ('pods "theirs" is forbidden: node "worker-1" can only update pod status for pods with '
                             "spec.nodeName set to itself")
    await refused(node.delete("pods", "theirs", "default", grace_period_seconds=0))
    await node.delete("pods", "mine", "default", grace_period_seconds=0)


async def test_a_node_cannot_change_any_pod_spec_nor_create_ordinary_pods(node: Client, admin: Client) -> None:
    await refused(node.patch("pods", "mine", {"metadata": {"labels": {"a": "b"}}}, "default"))
    await refused(node.update("pods", await admin.get("pods", "mine", "default"), "default"))
    error = await refused(node.create("pods", pod("new", "worker-1"), "default"))
    assert 'pod does not have "kubernetes.io/config.mirror" annotation, node "worker-1" can only create mirror ' \
           'pods' in error.message
    mirror = pod("static", "worker-2")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    await refused(node.create("pods", mirror, "default"))
    mirror["spec"]["nodeName"] = "worker-1"
    await node.create("pods", mirror, "default")
    await admin.create("pods", pod("pending", None), "default")
    await refused(node.bind("pending", "worker-1", "default"))  # only the scheduler binds


async def test_a_node_reads_secrets_and_configmaps_only_of_its_own_pods(node: Client) -> None:
    assert (await node.get("configmaps", "mine-cm", "default"))["data"] == {"k": "v"}
    assert (await node.get("secrets", "mine-secret", "default"))["data"]
    await refused(node.get("configmaps", "theirs-cm", "default"))
    await refused(node.get("secrets", "theirs-secret", "default"))
    await refused(node.list("secrets", "default"))
    await refused(node.list("secrets", "kube-system"))
    await refused(node.list("configmaps"))


async def test_a_node_gets_tokens_only_bound_by_uid_to_pods_it_runs_and_reads_their_ca(node: Client,
                                                                                       admin: Client) -> None:
    mine = await admin.get("pods", "mine", "default")
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "mine", "uid": mine["metadata"]["uid"]}
    answer = await node.create_token("default", "default", {"boundObjectRef": ref})
    assert answer["status"]["token"] and answer["spec"]["boundObjectRef"] == ref
    # its pods mount the cluster CA (the token volume every pod gets)
    await admin.create("configmaps", {"metadata": {"name": "kube-root-ca.crt"}, "data": {"ca.crt": "x"}}, "default")
    assert (await node.get("configmaps", "kube-root-ca.crt", "default"))["data"] == {"ca.crt": "x"}
    theirs = await admin.get("pods", "theirs", "default")
    for spec, reason in (
            ({}, "node requested token not bound to a pod"),
            ({"boundObjectRef": {**ref, "uid": ""}}, "node requested token with a pod binding without a uid"),
            ({"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "mine-secret"}},
             "node requested token not bound to a pod"),
            ({"boundObjectRef": {**ref, "name": "theirs", "uid": theirs["metadata"]["uid"]}},
             "node requested token bound to a pod scheduled on a different node")):
        error = await refused(node.create_token("default", "default", spec))
        assert error.message == f'serviceaccounts "default" is forbidden: {reason}', spec
    await refused(node.create_token("kube-system", "default", {"boundObjectRef": ref}))  # no pod of its uses it


async def test_a_node_may_not_touch_workloads(node: Client) -> None:
    await refused(node.create("configmaps", {"metadata": {"name": "x"}}, "default"))
    await refused(node.delete("namespaces", "default"))
    await refused(node.list("deployments"))


async def test_a_node_cannot_delete_its_own_node_and_keeps_the_admins_taints_and_cordon(node: Client,
                                                                                         admin: Client) -> None:
    await admin.patch("nodes", "worker-1", {"spec": {"unschedulable": True, "taints": [
        {"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}})
    error = await refused(node.delete("nodes", "worker-1"))
    assert error.message == ('nodes "worker-1" is forbidden: User "system:node:worker-1" cannot delete resource '
                             '"nodes" in API group "" at the cluster scope')
    error = await refused(node.create("nodes", {"metadata": {"name": "worker-1", "labels": {
        "node-role.kubernetes.io/control-plane": ""}}}))
    assert "node-role.kubernetes.io/control-plane" in error.message
    kept = await admin.get("nodes", "worker-1")
    assert kept["spec"]["unschedulable"] is True
    assert kept["spec"]["taints"] == [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    assert "node-role.kubernetes.io/control-plane" not in kept["metadata"]["labels"]


async def test_a_node_cannot_register_with_labels_reserved_to_admins(secure: Cluster, admin: Client,
                                                                      tmp_path: Path) -> None:
    joined = await join_node(secure, admin, "worker-3", tmp_path / "w3")
    async with joined.client() as node:
        for label in ("node-role.kubernetes.io/control-plane", "node-restriction.kubernetes.io/trusted",
                      "example.k8s.io/x"):
            error = await refused(node.create("nodes", {"metadata": {"name": "worker-3", "labels": {label: ""}}}))
            assert error.message == (f'nodes "worker-3" is forbidden: node "worker-3" is not allowed to set the '
                                     f"following labels: {label}")
        await node.create("nodes", {"metadata": {"name": "worker-3", "labels": {
            "kubernetes.io/hostname": "w3", "topology.kubernetes.io/zone": "z", "node.kubernetes.io/pool": "a",
            "kubelet.kubernetes.io/x": "y", "example.com/tier": "web"}}})  # the kubelet's own, and its own domain


async def test_a_node_cannot_add_admin_only_labels_by_update_patch_or_status(node: Client, admin: Client) -> None:
    current = await node.get("nodes", "worker-1")
    current["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
    error = await refused(node.update("nodes", current))
    assert error.message == ('nodes "worker-1" is forbidden: is not allowed to modify labels: '
                             "node-role.kubernetes.io/control-plane")
    await refused(node.patch("nodes", "worker-1", {"metadata": {"labels": {
        "node-role.kubernetes.io/control-plane": ""}}}))
    try:  # a status write carries no labels: refused, or the labels in it are dropped
        await node.patch_status("nodes", "worker-1", {"metadata": {"labels": {
            "node-role.kubernetes.io/control-plane": ""}}, "status": {"phase": "Running"}})
    except StatusError as error:
        assert error.code == 403, error
    labels = (await admin.get("nodes", "worker-1"))["metadata"]["labels"]
    assert "node-role.kubernetes.io/control-plane" not in labels
    await admin.patch("nodes", "worker-1", {"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}})
    await refused(node.patch("nodes", "worker-1", {"metadata": {"labels": {
        "node-role.kubernetes.io/control-plane": None}}}))  # nor remove one an admin set


async def test_a_node_cannot_give_its_node_an_owner_for_the_garbage_collector_to_follow(node: Client) -> None:
    error = await refused(node.patch("nodes", "worker-1", {"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "Namespace", "name": "gone", "uid": "0000"}]}}))
    assert error.message == 'nodes "worker-1" is forbidden: node "worker-1" is not allowed to modify ownerReferences'
