"""Persistent volumes on real Docker: a claim of the default local-path class is provisioned on the node the
scheduler picked, mounted into the pod as a bind mount of the node's directory, what one pod writes there the
next pod using the claim reads, and once the claim is deleted the volume and its directory go (reclaimPolicy
Delete); and the kubelet's sweep of deleted local volumes' directories."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.controllers.manager import ControllerSettings
from minik.kubelet.localvolumes import LOCAL_PATH_DIR, LocalVolumes
from tests.kubelet.docker_helpers import NODE, busybox, docker_cluster
from tests.kubelet.helpers import phase, pod_manifest, wait_for_pod, wait_gone

STORAGE = ControllerSettings(enabled=["root-ca-cert-publisher", "persistentvolume-binder", "local-path-provisioner",
                                      "pvc-protection", "pv-protection"])


def claim_pod(name: str, script: str) -> dict:
    container = busybox("app", script, volumeMounts=[{"name": "data", "mountPath": "/data"}])
    return pod_manifest(name, containers=[container], restart_policy="Never",
                        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])


async def test_what_one_pod_writes_to_its_claim_the_next_pod_reads(tmp_path: Path) -> None:
    async with docker_cluster(tmp_path / "c", disabled=frozenset({"proxy"}), controllers=STORAGE) as node:
        client = node.client
        await client.create("persistentvolumeclaims", {
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "64Mi"}}}}, "default")
        await client.create("pods", claim_pod("writer", "echo kept across pods > /data/note && id -u > /data/by"))
        writer = await wait_for_pod(client, "writer", lambda p: phase(p) in ("Succeeded", "Failed"), 60)
        assert phase(writer) == "Succeeded", writer["status"]
        assert writer["spec"]["nodeName"] == NODE
        data = await client.get("persistentvolumeclaims", "data", "default")
        assert data["status"]["phase"] == "Bound"
        pv = await client.get("persistentvolumes", data["spec"]["volumeName"])
        directory = Path(pv["spec"]["hostPath"]["path"])
        assert directory.parent == tmp_path / "c" / "kubelet" / LOCAL_PATH_DIR
        assert (directory / "note").read_text() == "kept across pods\n"
        await client.create("pods", claim_pod("reader", 'test "$(cat /data/note)" = "kept across pods"'))
        reader = await wait_for_pod(client, "reader", lambda p: phase(p) in ("Succeeded", "Failed"), 60)
        assert phase(reader) == "Succeeded", reader["status"]
        # reclaimPolicy Delete: once the claim goes, the provisioner deletes the volume and the node its directory
        for name in ("writer", "reader"):
            await client.delete("pods", name, "default")
        await client.delete("persistentvolumeclaims", "data", "default")
        await wait_gone(client, "persistentvolumes", pv["metadata"]["name"], None, 30)
        agent = node.component.agent
        assert agent is not None
        assert await agent.local_volumes.sweep() == [directory.name]
        assert not directory.exists()
        for done in (writer, reader):  # the node has removed their containers too
            await wait_gone(client, "pods", done["metadata"]["name"], "default", 30)
            deadline = time.monotonic() + 30
            while await node.containers(done["metadata"]["uid"]):
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)


async def test_the_sweep_removes_the_directories_of_deleted_volumes_only(tmp_path: Path) -> None:
    cluster = Cluster(ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL",
                                      disabled=frozenset(COMPONENTS)))
    async with cluster, cluster.admin_client() as client:
        root = tmp_path / "node" / LOCAL_PATH_DIR
        for name in ("pvc-kept", "pvc-gone"):
            (root / f"{name}_default_data").mkdir(parents=True)
            (root / f"{name}_default_data" / "file").write_text("x")
        await client.create("persistentvolumes", {
            "metadata": {"name": "pvc-kept"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": str(root / "pvc-kept_default_data")}}})
        (root / "unrelated").mkdir()
        removed = await LocalVolumes(client, root).sweep()
        assert removed == ["pvc-gone_default_data"]
        assert sorted(p.name for p in root.iterdir()) == ["pvc-kept_default_data", "unrelated"]
