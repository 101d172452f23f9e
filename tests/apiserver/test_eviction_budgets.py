"""pods/eviction honours PodDisruptionBudgets as Kubernetes' eviction subresource does: 429 TooManyRequests with a
DisruptionBudget cause when no disruption is left, one disruption spent (and the pod recorded in disruptedPods)
per eviction that goes through, 500 for a pod under two budgets, the unhealthy-pod rules, and pods that are not
running evicted freely. The tests write the budgets' status themselves, as the disruption controller would."""

from __future__ import annotations

from typing import Any

import orjson

PODS = "/api/v1/namespaces/default/pods"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"


def eviction(name: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}}


async def running_pod(http, name: str, *, ready: bool = True, phase: str = "Running", app: str = "web") -> None:
    status, body = await http.post(PODS, {"apiVersion": "v1", "kind": "Pod",
                                          "metadata": {"name": name, "labels": {"app": app}},
                                          "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}})
    assert status == 201, body
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    status, body = await http.patch(f"{PODS}/{name}/status", {"status": {"phase": phase, "conditions": conditions}})
    assert status == 200, body


async def budget(http, name: str, *, allowed: int, healthy: int, desired: int, observed: int = 1,
                 selector: dict[str, Any] | None = None, **spec: Any) -> None:
    """A budget with the status the disruption controller would have written."""
    status, body = await http.post(PDBS, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                          "metadata": {"name": name},
                                          "spec": {"selector": {"matchLabels": {"app": "web"}}
                                                   if selector is None else selector, "minAvailable": desired,
                                                   **spec}})
    assert status == 201, body
    body["status"] = {"observedGeneration": observed, "disruptionsAllowed": allowed, "currentHealthy": healthy,
                      "desiredHealthy": desired, "expectedPods": healthy}
    status, body = await http.put(f"{PDBS}/{name}/status", body)
    assert status == 200, body


async def evict(http, name: str, **params: str) -> tuple[int, dict[str, Any], str | None]:
    """POST the Eviction; its code, Status and Retry-After header."""
    async with http.session.post(f"{PODS}/{name}/eviction", data=orjson.dumps(eviction(name)), params=params,
                                 headers={"Content-Type": "application/json"}) as response:
        return response.status, orjson.loads(await response.read()), response.headers.get("Retry-After")


async def exists(http, name: str) -> bool:
    return (await http.get(f"{PODS}/{name}"))[0] == 200


async def test_an_eviction_that_would_break_the_budget_is_refused_with_429_and_the_budgets_message(http) -> None:
    await running_pod(http, "a")
    await budget(http, "web", allowed=0, healthy=2, desired=2)
    code, status, retry_after = await evict(http, "a")
    assert code == 429 and retry_after is None
    assert status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": "Cannot evict pod as it would violate the pod's disruption budget.",
                      "reason": "TooManyRequests",
                      "details": {"causes": [{"reason": "DisruptionBudget", "message":
                                              "The disruption budget web needs 2 healthy pods and has 2 currently"}]},
                      "code": 429}
    assert await exists(http, "a")


async def test_an_allowed_eviction_spends_a_disruption_and_records_the_pod_before_deleting_it(http) -> None:
    await running_pod(http, "a")
    await budget(http, "web", allowed=1, healthy=3, desired=2)
    code, status, _ = await evict(http, "a")
    assert code == 201 and status["status"] == "Success"
    assert not await exists(http, "a")
    _, pdb = await http.get(f"{PDBS}/web")
    assert pdb["status"]["disruptionsAllowed"] == 0
    assert list(pdb["status"]["disruptedPods"]) == ["a"]
    (condition,) = pdb["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == \
        ("DisruptionAllowed", "False", "InsufficientPods")
    await running_pod(http, "b")
    assert (await evict(http, "b"))[0] == 429


async def test_a_budget_whose_latest_generation_is_not_observed_asks_to_retry_later(http) -> None:
    await running_pod(http, "a")
    await budget(http, "web", allowed=1, healthy=3, desired=2, observed=0)
    code, status, retry_after = await evict(http, "a")
    assert code == 429 and retry_after == "10" and status["details"]["retryAfterSeconds"] == 10
    assert status["details"]["causes"] == [
        {"reason": "DisruptionBudget", "message": "The disruption budget web is still being processed by the server."}]
    assert await exists(http, "a")


async def test_a_pod_under_two_budgets_cannot_be_evicted(http) -> None:
    await running_pod(http, "a")
    await budget(http, "one", allowed=1, healthy=3, desired=2)
    await budget(http, "two", allowed=1, healthy=3, desired=2)
    code, status, _ = await evict(http, "a")
    assert code == 500 and status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                      "message": "This pod has more than one PodDisruptionBudget, which the eviction "
                                                 "subresource does not support.", "code": 500}
    assert await exists(http, "a")


async def test_pods_that_are_not_running_go_whatever_the_budget_says(http) -> None:
    await budget(http, "web", allowed=0, healthy=0, desired=2)
    for name, phase in (("pending", "Pending"), ("done", "Succeeded"), ("failed", "Failed")):
        await running_pod(http, name, phase=phase, ready=False)
        assert (await evict(http, name))[0] == 201, name
        assert not await exists(http, name)


async def test_an_unready_pod_goes_without_spending_a_disruption_while_the_budget_is_healthy(http) -> None:
    await running_pod(http, "sick", ready=False)
    await budget(http, "web", allowed=0, healthy=2, desired=2)
    assert (await evict(http, "sick"))[0] == 201
    _, pdb = await http.get(f"{PDBS}/web")
    assert pdb["status"]["disruptionsAllowed"] == 0 and "disruptedPods" not in pdb["status"]


async def test_an_unready_pod_of_an_unhealthy_budget_waits_unless_the_policy_is_always_allow(http) -> None:
    await running_pod(http, "sick", ready=False)
    await budget(http, "web", allowed=0, healthy=1, desired=2)
    assert (await evict(http, "sick"))[0] == 429
    await running_pod(http, "other", ready=False, app="db")
    await budget(http, "db", allowed=0, healthy=0, desired=2, selector={"matchLabels": {"app": "db"}},
                 unhealthyPodEvictionPolicy="AlwaysAllow")
    assert (await evict(http, "other"))[0] == 201


async def test_an_empty_selector_guards_no_eviction(http) -> None:
    await running_pod(http, "a")
    await budget(http, "all", allowed=0, healthy=2, desired=2, selector={})
    assert (await evict(http, "a"))[0] == 201


async def test_a_dry_run_eviction_neither_spends_a_disruption_nor_deletes(http) -> None:
    await running_pod(http, "a")
    await budget(http, "web", allowed=1, healthy=3, desired=2)
    assert (await evict(http, "a", dryRun="All"))[0] == 201
    assert await exists(http, "a")
    _, pdb = await http.get(f"{PDBS}/web")
    assert pdb["status"]["disruptionsAllowed"] == 1 and "disruptedPods" not in pdb["status"]
