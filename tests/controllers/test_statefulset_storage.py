"""StatefulSets with volumeClaimTemplates on the whole storage stack (the PV binder, the local-path provisioner,
the garbage collector) and simulated nodes: one claim per replica that outlives its pod, and the retention policy
deciding which claims go when the set shrinks or is deleted."""

from __future__ import annotations

from typing import Any

from controller_helpers import eventually
from test_statefulset import scale, settled, statefulset
from test_volumes_on_nodes import bound, gone

from minik.api.errors import StatusError
from minik.testing.nodes import SimulatedCluster

Obj = dict[str, Any]


def with_claims(replicas: int, **retention: str) -> Obj:
    sts = statefulset("web", replicas)
    sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    sts["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "64Mi"}}}}]
    if retention:
        sts["spec"]["persistentVolumeClaimRetentionPolicy"] = retention
    return sts


async def exists(sim: SimulatedCluster, resource: str, name: str) -> bool:
    try:
        await sim.api.get(resource, name, "default")
    except StatusError as exc:
        if exc.code == 404:
            return False
        raise
    return True


async def test_each_replica_gets_its_own_bound_claim_and_a_replaced_pod_gets_the_same_one(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    for i in range(2):
        await sim.nodes.add(f"node-{i}")
    await sim.api.create("statefulsets", with_claims(2), "default")
    await settled(sim.api, "web")
    volumes = {}
    for i in range(2):
        claim = await bound(sim, f"data-web-{i}")
        volumes[i] = claim["spec"]["volumeName"]
        pod = await sim.api.get("pods", f"web-{i}", "default")
        assert {"name": "data", "persistentVolumeClaim": {"claimName": f"data-web-{i}"}} in pod["spec"]["volumes"]
    assert volumes[0] != volumes[1]
    node = (await sim.api.get("pods", "web-1", "default"))["spec"]["nodeName"]
    old = await sim.api.get("pods", "web-1", "default")
    await sim.api.delete("pods", "web-1", "default")

    async def back() -> Obj:
        pod = await sim.api.get("pods", "web-1", "default")
        ready = (pod.get("status") or {}).get("phase") == "Running"
        return pod if pod["metadata"]["uid"] != old["metadata"]["uid"] and ready else {}
    again = await eventually(back, timeout=30)
    assert again["spec"]["nodeName"] == node  # its volume is on that node
    assert (await bound(sim, "data-web-1"))["spec"]["volumeName"] == volumes[1]


async def test_when_scaled_delete_removes_the_claims_of_removed_replicas_and_when_deleted_retain_keeps_the_rest(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    await sim.api.create("statefulsets", with_claims(2, whenDeleted="Retain", whenScaled="Delete"), "default")
    await settled(sim.api, "web")
    await bound(sim, "data-web-1")
    await scale(sim.api, "web", 1)
    await gone(sim, "persistentvolumeclaims", "data-web-1", "default")
    assert await exists(sim, "persistentvolumeclaims", "data-web-0")
    await sim.api.delete("statefulsets", "web", "default")
    await gone(sim, "pods", "web-0", "default")
    claim = await sim.api.get("persistentvolumeclaims", "data-web-0", "default")
    assert not claim["metadata"].get("ownerReferences") and not claim["metadata"].get("deletionTimestamp")


async def test_when_deleted_delete_removes_every_claim_with_the_set(simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    await sim.api.create("statefulsets", with_claims(2, whenDeleted="Delete", whenScaled="Retain"), "default")
    await settled(sim.api, "web")
    await scale(sim.api, "web", 1)
    await settled(sim.api, "web")
    assert await exists(sim, "persistentvolumeclaims", "data-web-1")  # whenScaled Retain
    await sim.api.delete("statefulsets", "web", "default")
    for i in range(2):
        await gone(sim, "persistentvolumeclaims", f"data-web-{i}", "default")
