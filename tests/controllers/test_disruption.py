"""The disruption controller in a cluster as `minik up` runs it (writing as its own service account under RBAC):
every PodDisruptionBudget's status counts the healthy pods it selects, what its pods' controllers expect, and the
disruptions it allows, with the DisruptionAllowed condition, as Kubernetes' controller keeps them."""

from __future__ import annotations

from typing import Any

from controller_helpers import eventually, make_ready, pod_template, pods, set_pod_phase

from minik.api.timestamps import now_rfc3339
from minik.client import Client

PDB = "poddisruptionbudgets.policy"


def budget(name: str, app: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"selector": {"matchLabels": {"app": app}}, **spec}}


def bare_pod(name: str, app: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"app": app}},
            "spec": {"containers": [{"name": "app", "image": "busybox"}]}}


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                                                 "template": pod_template({"app": name})}}


async def status_when(api: Client, name: str, **wanted: Any) -> dict[str, Any]:
    """The budget's status once it has the wanted counts."""
    async def check() -> dict[str, Any]:
        status = (await api.get(PDB, name, "default")).get("status") or {}
        assert {k: status.get(k) for k in wanted} == wanted, status
        return status
    return await eventually(check)


async def ready_pods(api: Client, selector: str, count: int) -> None:
    """Play the kubelet until ``count`` pods of the selector run Ready."""
    async def check() -> bool:
        await make_ready(api, selector=selector)
        live = await pods(api, selector=selector)
        return len(live) == count and all(
            any(c["type"] == "Ready" and c["status"] == "True" for c in p.get("status", {}).get("conditions", []))
            for p in live)
    await eventually(check)


def condition(status: dict[str, Any]) -> dict[str, Any]:
    (found,) = [c for c in status.get("conditions") or [] if c["type"] == "DisruptionAllowed"]
    return found


async def test_an_integer_min_available_counts_every_selected_pod_and_allows_what_exceeds_it(api: Client) -> None:
    await api.create(PDB, budget("web", "web", minAvailable=2), "default")
    status = await status_when(api, "web", expectedPods=0, disruptionsAllowed=0, observedGeneration=1)
    assert condition(status)["status"] == "False" and condition(status)["reason"] == "InsufficientPods"
    for name in ("a", "b", "c"):
        await api.create("pods", bare_pod(name, "web"), "default")
    await api.create("pods", bare_pod("other", "db"), "default")
    await status_when(api, "web", currentHealthy=0, desiredHealthy=2, expectedPods=3, disruptionsAllowed=0)
    await make_ready(api, selector="app=web")
    status = await status_when(api, "web", currentHealthy=3, desiredHealthy=2, expectedPods=3, disruptionsAllowed=1)
    cond = condition(status)
    assert (cond["status"], cond["reason"], cond["message"], cond["observedGeneration"]) == \
        ("True", "SufficientPods", "", 1)


async def test_a_pod_being_deleted_is_not_healthy(api: Client) -> None:
    await api.create(PDB, budget("web", "web", minAvailable=1), "default")
    for name in ("a", "b"):
        await api.create("pods", {**bare_pod(name, "web"), "spec": {
            "nodeName": "node-1", "containers": [{"name": "app", "image": "busybox"}]}}, "default")
    await make_ready(api, selector="app=web")
    await status_when(api, "web", currentHealthy=2, disruptionsAllowed=1)
    await api.delete("pods", "a", "default", grace_period_seconds=30)  # bound: held while it stops
    await status_when(api, "web", currentHealthy=1, expectedPods=2, disruptionsAllowed=0)


async def test_percentages_and_max_unavailable_count_the_deployments_replicas(api: Client) -> None:
    await api.create("deployments.apps", deployment("web", 4), "default")
    await api.create(PDB, budget("half", "web", minAvailable="50%"), "default")
    await api.create(PDB, budget("one", "web", maxUnavailable=1), "default")
    await ready_pods(api, "app=web", 4)
    await status_when(api, "half", currentHealthy=4, desiredHealthy=2, expectedPods=4, disruptionsAllowed=2)
    await status_when(api, "one", currentHealthy=4, desiredHealthy=3, expectedPods=4, disruptionsAllowed=1)
    # the percentage is of the scale, rounded up: 50% of 3 is 2
    await api.patch("deployments.apps", "web", {"spec": {"replicas": 3}}, "default")
    await status_when(api, "half", currentHealthy=3, desiredHealthy=2, expectedPods=3, disruptionsAllowed=1)


async def test_a_percentage_over_pods_without_a_controller_expects_none_of_them(api: Client) -> None:
    await api.create(PDB, budget("web", "web", maxUnavailable="50%"), "default")
    await api.create("pods", bare_pod("lonely", "web"), "default")
    await make_ready(api, selector="app=web")
    await status_when(api, "web", currentHealthy=1, expectedPods=0, desiredHealthy=0, disruptionsAllowed=0)


async def test_a_controller_without_a_scale_makes_the_sync_fail_safe(api: Client) -> None:
    await api.create("jobs.batch", {"metadata": {"name": "batch"}, "spec": {
        "template": {"metadata": {"labels": {"app": "batch"}},
                     "spec": {"restartPolicy": "Never", "containers": [{"name": "app", "image": "busybox"}]}}}},
        "default")
    await api.create(PDB, budget("batch", "batch", maxUnavailable=1), "default")

    async def failed() -> dict[str, Any]:
        status = (await api.get(PDB, "batch", "default")).get("status") or {}
        cond = condition(status) if status.get("conditions") else {}
        assert cond.get("reason") == "SyncFailed", status
        return status

    status = await eventually(failed)
    assert status["disruptionsAllowed"] == 0 and condition(status)["status"] == "False"
    assert condition(status)["message"] == "jobs.batch does not implement the scale subresource"


async def test_a_disrupted_pod_is_not_counted_until_its_deletion_times_out(api: Client) -> None:
    await api.create(PDB, budget("web", "web", minAvailable=1), "default")
    for name in ("a", "b"):
        await api.create("pods", bare_pod(name, "web"), "default")
    await make_ready(api, selector="app=web")
    await status_when(api, "web", currentHealthy=2, disruptionsAllowed=1)
    current = await api.get(PDB, "web", "default")
    # as the eviction subresource records a pod it let go, a moment ago and three minutes ago
    current["status"]["disruptedPods"] = {"a": now_rfc3339()}
    await api.update_status(PDB, current, "default")
    status = await status_when(api, "web", currentHealthy=1, disruptionsAllowed=0)
    assert list(status["disruptedPods"]) == ["a"]
    current = await api.get(PDB, "web", "default")
    current["status"]["disruptedPods"] = {"a": now_rfc3339(-180)}
    await api.update_status(PDB, current, "default")
    status = await status_when(api, "web", currentHealthy=2, disruptionsAllowed=1)
    assert "disruptedPods" not in status


async def test_a_spec_change_is_observed(api: Client) -> None:
    await api.create(PDB, budget("web", "web", minAvailable=1), "default")
    await api.create("pods", bare_pod("a", "web"), "default")
    pod = await api.get("pods", "a", "default")
    await set_pod_phase(api, pod)
    await status_when(api, "web", observedGeneration=1, disruptionsAllowed=0, desiredHealthy=1)
    await api.patch(PDB, "web", {"spec": {"minAvailable": 0}}, "default")
    status = await status_when(api, "web", observedGeneration=2, disruptionsAllowed=1, desiredHealthy=0)
    assert condition(status)["observedGeneration"] == 2


async def test_a_disruption_target_condition_whose_deletion_never_came_is_cleared(api: Client) -> None:
    await api.create("pods", bare_pod("stale", "web"), "default")
    await api.create("pods", bare_pod("fresh", "web"), "default")
    for name, since in (("stale", now_rfc3339(-180)), ("fresh", now_rfc3339())):
        await api.patch_status("pods", name, {"status": {"conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
             "message": "Eviction API: evicting", "lastTransitionTime": since}]}}, "default",
            content_type="application/strategic-merge-patch+json")

    def target(pod: dict[str, Any]) -> dict[str, Any]:
        (found,) = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
        return found

    async def cleared() -> dict[str, Any]:
        found = target(await api.get("pods", "stale", "default"))
        assert found["status"] == "False", found
        return found

    found = await eventually(cleared)
    assert found["reason"] == "EvictionByEvictionAPI"
    stale = await api.get("pods", "stale", "default")
    assert "DisruptionController" in {m["manager"] for m in stale["metadata"]["managedFields"]}
    assert target(await api.get("pods", "fresh", "default"))["status"] == "True"
