"""Workloads through a real API server with the scheduler, the controllers and simulated nodes whose kubelets run
(and, for Jobs, end) the containers."""

from __future__ import annotations

import asyncio
from typing import Any

from controller_helpers import eventually, pods

from minik.client import JSON_PATCH
from minik.testing.nodes import SimulatedCluster

Obj = dict[str, Any]
REVISION = "deployment.kubernetes.io/revision"


def deployment(name: str, replicas: int, image: str = "nginx:1.27", **spec: Any) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": image}]}}, **spec}}


def job(name: str, exit_code: int, **spec: Any) -> Obj:
    annotations = {"fake.minik.io/exit-code": str(exit_code), "fake.minik.io/run-seconds": "0.2"}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"annotations": annotations},
                                  "spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "work", "image": "busybox:1.36"}]}}, **spec}}


async def with_nodes(sim: SimulatedCluster, count: int) -> None:
    for i in range(count):
        await sim.nodes.add(f"node-{i}")


async def available(sim: SimulatedCluster, name: str, replicas: int) -> Obj:
    """The deployment once it is rolled out with ``replicas`` available pods, all bound and ready."""
    async def check() -> Obj:
        d = await sim.api.get("deployments", name, "default")
        s = d.get("status") or {}
        done = s.get("observedGeneration", 0) >= d["metadata"]["generation"] and \
            s.get("updatedReplicas") == replicas == s.get("availableReplicas") and s.get("replicas") == replicas
        return d if done else {}
    return await eventually(check, timeout=30)


async def test_a_deployment_of_three_scales_to_five_and_back_to_three(simulated: SimulatedCluster) -> None:
    sim = simulated
    await with_nodes(sim, 3)
    await sim.api.create("deployments", deployment("web", 3), "default")
    await available(sim, "web", 3)
    scale = await sim.api.get("deployments", "web", "default", subresource="scale")
    scale["spec"]["replicas"] = 5
    await sim.api.update("deployments", scale, "default", subresource="scale")
    await available(sim, "web", 5)
    running = await pods(sim.api, selector="app=web")
    assert len(running) == 5 and all(p["spec"].get("nodeName") for p in running)
    await sim.api.patch("deployments", "web", {"spec": {"replicas": 3}}, "default", subresource="scale")
    await available(sim, "web", 3)
    assert len(await eventually(lambda: _exactly(sim, "app=web", 3))) == 3


async def _exactly(sim: SimulatedCluster, selector: str, count: int) -> list[Obj]:
    items = await pods(sim.api, selector=selector)
    return items if len(items) == count else []


async def test_a_rolling_update_never_has_fewer_ready_pods_than_max_unavailable_allows_and_undo_goes_back(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await with_nodes(sim, 3)
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}
    await sim.api.create("deployments", deployment("web", 4, strategy=strategy), "default")
    before = await available(sim, "web", 4)
    listing = await sim.api.list("pods", "default")
    ready = {p["metadata"]["name"]: True for p in listing["items"]}
    history: list[tuple[int, int]] = []

    async def watch() -> None:
        async with sim.api.watch("pods", "default", resource_version=listing["metadata"]["resourceVersion"]) as events:
            async for kind, pod in events:
                name = pod["metadata"]["name"]
                if kind == "DELETED" or pod["metadata"].get("deletionTimestamp"):
                    ready.pop(name, None)
                else:
                    conditions = {c["type"]: c["status"] for c in (pod.get("status") or {}).get("conditions") or []}
                    ready[name] = conditions.get("Ready") == "True"
                history.append((sum(ready.values()), len(ready)))

    watching = asyncio.create_task(watch())
    try:
        await sim.api.patch("deployments", "web", {"spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "nginx:1.28"}]}}}}, "default")
        await eventually(lambda: _generation_above(sim, before["metadata"]["generation"]))
        await available(sim, "web", 4)
        await eventually(lambda: _exactly(sim, "app=web", 4))
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
    assert history and min(r for r, _ in history) >= 3, f"fewer than replicas - maxUnavailable ready: {history}"
    assert max(n for _, n in history) <= 5, f"more than replicas + maxSurge pods: {history}"
    assert {p["spec"]["containers"][0]["image"] for p in await pods(sim.api, selector="app=web")} == {"nginx:1.28"}

    await rollout_undo(sim, "web")
    undone = await available(sim, "web", 4)
    assert undone["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert undone["metadata"]["annotations"][REVISION] == "3"
    await eventually(lambda: _exactly(sim, "app=web", 4))
    assert {p["spec"]["containers"][0]["image"] for p in await pods(sim.api, selector="app=web")} == {"nginx:1.27"}


async def _generation_above(sim: SimulatedCluster, generation: int) -> bool:
    d = await sim.api.get("deployments", "web", "default")
    return d["metadata"]["generation"] > generation


async def rollout_undo(sim: SimulatedCluster, name: str) -> None:
    """What `kubectl rollout undo` does: put the previous revision's template back (without its hash label)."""
    d = await sim.api.get("deployments", name, "default")
    owned = [rs for rs in (await sim.api.list("replicasets", "default"))["items"]
             if any(r["uid"] == d["metadata"]["uid"] for r in rs["metadata"].get("ownerReferences") or [])]
    by_revision = sorted(owned, key=lambda rs: int(rs["metadata"]["annotations"][REVISION]))
    previous = by_revision[-2]["spec"]["template"]
    previous["metadata"]["labels"].pop("pod-template-hash")
    await sim.api.patch("deployments", name, [{"op": "replace", "path": "/spec/template", "value": previous}],
                        "default", content_type=JSON_PATCH)


async def test_a_daemonset_covers_three_nodes_then_a_fourth_that_joins_and_leaves_one_that_goes(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await with_nodes(sim, 3)
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
          "spec": {"selector": {"matchLabels": {"app": "agent"}},
                   "template": {"metadata": {"labels": {"app": "agent"}},
                                "spec": {"containers": [{"name": "agent", "image": "busybox:1.36"}]}}}}
    await sim.api.create("daemonsets", ds, "default")

    async def covered(count: int) -> dict[str, Obj]:
        running = await pods(sim.api, selector="app=agent")
        by_node = {p["spec"].get("nodeName"): p for p in running}
        ready = [p for p in running if any(c["type"] == "Ready" and c["status"] == "True"
                                           for c in (p.get("status") or {}).get("conditions") or [])]
        return by_node if len(running) == count == len(by_node) == len(ready) else {}

    assert set(await eventually(lambda: covered(3), timeout=30)) == {"node-0", "node-1", "node-2"}
    await sim.nodes.add("node-3")
    assert set(await eventually(lambda: covered(4), timeout=30)) == {"node-0", "node-1", "node-2", "node-3"}

    async def status() -> Obj:
        s = (await sim.api.get("daemonsets", "agent", "default")).get("status") or {}
        return s if s.get("numberReady") == 4 else {}
    s = await eventually(status)
    assert (s["desiredNumberScheduled"], s["currentNumberScheduled"], s["updatedNumberScheduled"],
            s["numberAvailable"]) == (4, 4, 4, 4)

    await sim.nodes.stop("node-3")
    await sim.api.delete("nodes", "node-3")
    assert set(await eventually(lambda: covered(3), timeout=30)) == {"node-0", "node-1", "node-2"}


async def test_a_job_of_five_completions_two_at_a_time_completes(simulated: SimulatedCluster) -> None:
    sim = simulated
    await with_nodes(sim, 2)
    created = await sim.api.create("jobs", job("batch", 0, completions=5, parallelism=2), "default")
    uid = created["metadata"]["uid"]
    most_active = 0

    async def complete() -> Obj:
        nonlocal most_active
        j = await sim.api.get("jobs", "batch", "default")
        status = j.get("status") or {}
        most_active = max(most_active, int(status.get("active") or 0))
        return j if any(c["type"] == "Complete" and c["status"] == "True" for c in status.get("conditions") or []) \
            else {}

    j = await eventually(complete, timeout=60, interval=0.02)
    status = j["status"]
    assert status["succeeded"] == 5 and not status.get("failed") and status["completionTime"]
    assert [(c["type"], c["reason"]) for c in status["conditions"]] == [("SuccessCriteriaMet", "CompletionsReached"),
                                                                        ("Complete", "CompletionsReached")]
    assert 1 <= most_active <= 2
    finished = (await sim.api.list("pods", "default", label_selector=f"batch.kubernetes.io/controller-uid={uid}"))
    assert len(finished["items"]) == 5
    assert all(p["status"]["phase"] == "Succeeded" and not p["metadata"].get("finalizers") for p in finished["items"])


async def test_a_job_that_always_fails_stops_at_its_backoff_limit(simulated: SimulatedCluster) -> None:
    sim = simulated
    await with_nodes(sim, 2)
    created = await sim.api.create("jobs", job("doomed", 1, backoffLimit=2), "default")

    async def failed() -> Obj:
        j = await sim.api.get("jobs", "doomed", "default")
        conditions = (j.get("status") or {}).get("conditions") or []
        return j if any(c["type"] == "Failed" and c["status"] == "True" for c in conditions) else {}

    j = await eventually(failed, timeout=60)
    assert j["status"]["failed"] == 3 and not j["status"].get("succeeded")
    assert [(c["type"], c["reason"]) for c in j["status"]["conditions"]] == [
        ("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]
    await asyncio.sleep(0.3)  # no fourth attempt comes
    attempts = await sim.api.list("pods", "default", label_selector="batch.kubernetes.io/controller-uid="
                                  + created["metadata"]["uid"])
    assert len(attempts["items"]) == 3
    assert all(p["status"]["phase"] == "Failed" for p in attempts["items"])
