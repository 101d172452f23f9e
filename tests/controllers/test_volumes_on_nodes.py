"""Persistent volumes through a real API server with the scheduler, the controllers (PV binder, local-path
provisioner, pvc- and pv-protection) and simulated nodes: static binding by class, size, access modes and
selector; WaitForFirstConsumer claims provisioned on the node the scheduler picked; pods pinned to their volume's
node; reclaim policies; and claims kept while a pod uses them."""

from __future__ import annotations

from typing import Any

from controller_helpers import eventually

from minik.api.errors import StatusError
from minik.testing.nodes import SimulatedCluster

Obj = dict[str, Any]
NS = "default"


def volume(name: str, size: str = "1Gi", node: str | None = None, **spec: Any) -> Obj:
    body: Obj = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                 "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                          "storageClassName": "manual", "hostPath": {"path": f"/tmp/minik-test/{name}"}, **spec}}
    if node is not None:
        body["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    return body


def claim(name: str, size: str = "1Gi", **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}}


def pod(name: str, *claims: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.36",
                                     "volumeMounts": [{"name": c, "mountPath": f"/{c}"} for c in claims]}],
                     "volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]}}


async def manual_class(sim: SimulatedCluster, mode: str = "Immediate") -> None:
    await sim.api.create("storageclasses", {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                            "metadata": {"name": "manual"},
                                            "provisioner": "kubernetes.io/no-provisioner",
                                            "volumeBindingMode": mode})


async def bound(sim: SimulatedCluster, name: str, timeout: float = 15) -> Obj:
    async def check() -> Obj:
        c = await sim.api.get("persistentvolumeclaims", name, NS)
        return c if (c.get("status") or {}).get("phase") == "Bound" else {}
    return await eventually(check, timeout=timeout)


async def phase_of(sim: SimulatedCluster, pv: str, phase: str) -> Obj:
    async def check() -> Obj:
        v = await sim.api.get("persistentvolumes", pv)
        return v if (v.get("status") or {}).get("phase") == phase else {}
    return await eventually(check, timeout=15)


async def running_on(sim: SimulatedCluster, name: str) -> str:
    async def check() -> str:
        p = await sim.api.get("pods", name, NS)
        return str(p["spec"].get("nodeName") or "") if (p.get("status") or {}).get("phase") == "Running" else ""
    return await eventually(check, timeout=20)


async def gone(sim: SimulatedCluster, resource: str, name: str, namespace: str | None = None) -> None:
    async def check() -> bool:
        try:
            await sim.api.get(resource, name, namespace)
        except StatusError as exc:
            return exc.code == 404
        return False
    await eventually(check, timeout=20)


async def test_a_claim_binds_the_smallest_volume_of_its_class_with_its_access_modes_and_labels(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await manual_class(sim)
    await sim.api.create("persistentvolumes", volume("big", "10Gi"))
    await sim.api.create("persistentvolumes", volume("small", "2Gi"))
    await sim.api.create("persistentvolumes", volume("tiny", "500Mi"))
    await sim.api.create("persistentvolumes", volume("shared", "2Gi", accessModes=["ReadWriteMany"]))
    await sim.api.create("persistentvolumes", volume("fast", "5Gi", **{}) | {
        "metadata": {"name": "fast", "labels": {"tier": "fast"}}})
    await phase_of(sim, "small", "Available")
    await sim.api.create("persistentvolumeclaims", claim("data", "1Gi", storageClassName="manual"), NS)
    data = await bound(sim, "data")
    assert data["spec"]["volumeName"] == "small"
    assert data["status"]["capacity"] == {"storage": "2Gi"} and data["status"]["accessModes"] == ["ReadWriteOnce"]
    assert data["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    pv = await phase_of(sim, "small", "Bound")
    assert (pv["spec"]["claimRef"]["name"], pv["spec"]["claimRef"]["uid"]) == ("data", data["metadata"]["uid"])
    await sim.api.create("persistentvolumeclaims", claim("many", storageClassName="manual",
                                                         accessModes=["ReadWriteMany"]), NS)
    assert (await bound(sim, "many"))["spec"]["volumeName"] == "shared"
    await sim.api.create("persistentvolumeclaims", claim("picky", storageClassName="manual",
                                                         selector={"matchLabels": {"tier": "fast"}}), NS)
    assert (await bound(sim, "picky"))["spec"]["volumeName"] == "fast"


async def test_a_claim_nothing_matches_stays_pending_until_a_volume_appears(simulated: SimulatedCluster) -> None:
    sim = simulated
    await manual_class(sim)
    await sim.api.create("persistentvolumeclaims", claim("data", "5Gi", storageClassName="manual"), NS)
    await sim.api.create("persistentvolumes", volume("small", "1Gi"))
    await phase_of(sim, "small", "Available")
    assert (await sim.api.get("persistentvolumeclaims", "data", NS))["status"]["phase"] == "Pending"
    await sim.api.create("persistentvolumes", volume("enough", "5Gi"))
    assert (await bound(sim, "data"))["spec"]["volumeName"] == "enough"


async def test_a_pod_whose_claim_is_bound_to_a_local_volume_lands_on_that_volumes_node(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    for name in ("node-a", "node-b", "node-c"):
        await sim.nodes.add(name)
    await manual_class(sim)
    await sim.api.create("persistentvolumes", volume("on-b", node="node-b"))
    await sim.api.create("persistentvolumeclaims", claim("data", storageClassName="manual"), NS)
    await bound(sim, "data")
    for i in range(3):
        await sim.api.create("pods", pod(f"user-{i}", "data"), NS)
    for i in range(3):
        assert await running_on(sim, f"user-{i}") == "node-b"


async def test_a_pod_with_an_unbound_immediate_claim_waits_and_says_why(simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-a")
    await manual_class(sim)
    await sim.api.create("persistentvolumeclaims", claim("data", storageClassName="manual"), NS)
    await sim.api.create("pods", pod("user", "data"), NS)

    async def unschedulable() -> str:
        p = await sim.api.get("pods", "user", NS)
        cond = next((c for c in p["status"].get("conditions") or [] if c["type"] == "PodScheduled"), {})
        return str(cond.get("message") or "") if cond.get("reason") == "Unschedulable" else ""
    message = await eventually(unschedulable, timeout=15)
    assert message.startswith("0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.")
    await sim.api.create("persistentvolumes", volume("late"))
    assert await running_on(sim, "user") == "node-a"


async def test_a_volume_on_another_node_is_a_node_affinity_conflict(simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-a")
    await manual_class(sim)
    await sim.api.create("persistentvolumes", volume("elsewhere", node="node-z"))
    await sim.api.create("persistentvolumeclaims", claim("data", storageClassName="manual"), NS)
    await bound(sim, "data")
    await sim.api.create("pods", pod("user", "data"), NS)

    async def message() -> str:
        p = await sim.api.get("pods", "user", NS)
        cond = next((c for c in p["status"].get("conditions") or [] if c["type"] == "PodScheduled"), {})
        return str(cond.get("message") or "")
    text = await eventually(message, timeout=15)
    assert text.startswith("0/1 nodes are available: 1 node(s) had volume node affinity conflict.")


async def test_a_wait_for_first_consumer_claim_is_provisioned_on_the_node_the_scheduler_picked(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    for name in ("node-a", "node-b"):
        await sim.nodes.add(name)
    created = await sim.api.create("persistentvolumeclaims", claim("data"), NS)
    assert created["spec"]["storageClassName"] == "local-path"

    async def waiting() -> bool:
        events = (await sim.api.list("events", NS, field_selector="involvedObject.name=data"))["items"]
        return any(e["reason"] == "WaitForFirstConsumer" for e in events)
    await eventually(waiting, timeout=15)
    assert (await sim.api.get("persistentvolumeclaims", "data", NS))["status"]["phase"] == "Pending"
    await sim.api.create("pods", pod("user", "data"), NS)
    node = await running_on(sim, "user")
    data = await bound(sim, "data")
    assert data["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
    pv = await sim.api.get("persistentvolumes", data["spec"]["volumeName"])
    assert pv["metadata"]["name"] == f"pvc-{data['metadata']['uid']}"
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    assert pv["spec"]["hostPath"]["path"].endswith(f"/pvc-{data['metadata']['uid']}_default_data")
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]
    # the next pod of the claim goes where its data is
    await sim.api.delete("pods", "user", NS, grace_period_seconds=0)
    await gone(sim, "pods", "user", NS)
    await sim.api.create("pods", pod("again", "data"), NS)
    assert await running_on(sim, "again") == node


async def test_a_claim_in_use_stays_terminating_until_its_pod_is_gone_and_delete_removes_its_volume(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-a")
    await sim.api.create("persistentvolumeclaims", claim("data"), NS)
    await sim.api.create("pods", pod("user", "data"), NS)
    await running_on(sim, "user")
    volume_name = (await bound(sim, "data"))["spec"]["volumeName"]
    await sim.api.delete("persistentvolumeclaims", "data", NS)
    terminating = await sim.api.get("persistentvolumeclaims", "data", NS)
    assert terminating["metadata"]["deletionTimestamp"]
    assert terminating["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    await sim.api.delete("pods", "user", NS, grace_period_seconds=0)
    await gone(sim, "persistentvolumeclaims", "data", NS)
    await gone(sim, "persistentvolumes", volume_name)


async def test_a_retained_volume_is_released_when_its_claim_goes_and_kept(simulated: SimulatedCluster) -> None:
    sim = simulated
    await manual_class(sim)
    await sim.api.create("persistentvolumes", volume("keep"))
    await sim.api.create("persistentvolumeclaims", claim("data", storageClassName="manual"), NS)
    await bound(sim, "data")
    await sim.api.delete("persistentvolumeclaims", "data", NS)
    await gone(sim, "persistentvolumeclaims", "data", NS)
    released = await phase_of(sim, "keep", "Released")
    assert released["spec"]["claimRef"]["name"] == "data"
    # a bound volume being deleted waits for its claim; a released one goes at once
    await sim.api.delete("persistentvolumes", "keep")
    await gone(sim, "persistentvolumes", "keep")


async def test_a_bound_volume_being_deleted_is_kept_while_its_claim_exists(simulated: SimulatedCluster) -> None:
    sim = simulated
    await manual_class(sim)
    await sim.api.create("persistentvolumes", volume("pv1"))
    await sim.api.create("persistentvolumeclaims", claim("data", storageClassName="manual"), NS)
    await bound(sim, "data")
    await phase_of(sim, "pv1", "Bound")
    await sim.api.delete("persistentvolumes", "pv1")
    held = await sim.api.get("persistentvolumes", "pv1")
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    await sim.api.delete("persistentvolumeclaims", "data", NS)
    await gone(sim, "persistentvolumes", "pv1")


async def test_an_ephemeral_volume_gets_a_claim_of_its_own_that_goes_with_the_pod(simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-a")
    scratch = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
        "metadata": {"labels": {"kind": "scratch"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}
    body = pod("user")
    body["spec"]["volumes"] = [scratch]
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
    created = await sim.api.create("pods", body, NS)
    assert await running_on(sim, "user") == "node-a"
    data = await bound(sim, "user-scratch")
    assert data["metadata"]["labels"] == {"kind": "scratch"}
    assert data["spec"]["storageClassName"] == "local-path"
    [owner] = data["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Pod", created["metadata"]["uid"], True)
    await sim.api.delete("pods", "user", NS, grace_period_seconds=0)
    await gone(sim, "persistentvolumeclaims", "user-scratch", NS)
    await gone(sim, "persistentvolumes", data["spec"]["volumeName"])


async def test_a_claim_of_a_class_that_does_not_exist_binds_a_volume_of_that_class_or_says_so(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.api.create("persistentvolumeclaims", claim("lost", storageClassName="nowhere"), NS)

    async def said() -> str:
        events = (await sim.api.list("events", NS, field_selector="involvedObject.name=lost"))["items"]
        return next((e["message"] for e in events if e["reason"] == "ProvisioningFailed"), "")
    assert await eventually(said, timeout=15) == 'storageclass.storage.k8s.io "nowhere" not found'
    await sim.api.create("persistentvolumes", volume("somewhere", storageClassName="nowhere"))
    assert (await bound(sim, "lost"))["spec"]["volumeName"] == "somewhere"
