"""pods/eviction: an Eviction deletes its pod with the DeleteOptions it carries, as `kubectl drain` relies on."""

from __future__ import annotations

from typing import Any

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


def eviction(name: str, **delete_options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": name, "namespace": "default"}}
    if delete_options:
        body["deleteOptions"] = delete_options
    return body


async def test_discovery_lists_pods_eviction_as_a_policy_v1_eviction(http) -> None:
    _, doc = await http.get("/api/v1")
    (entry,) = [r for r in doc["resources"] if r["name"] == "pods/eviction"]
    assert (entry["group"], entry["version"], entry["kind"], entry["verbs"]) == ("policy", "v1", "Eviction",
                                                                                 ["create"])


async def test_evicting_an_unbound_pod_deletes_it_at_once(http) -> None:
    await http.post(PODS, pod("web"))
    status, body = await http.post(f"{PODS}/web/eviction", eviction("web"))
    assert status == 201 and body["kind"] == "Status" and body["status"] == "Success"
    assert (await http.get(f"{PODS}/web"))[0] == 404


async def test_evicting_a_bound_pod_starts_its_graceful_deletion_with_the_given_grace_period(http) -> None:
    await http.post(PODS, pod("web"))
    await http.post(f"{PODS}/web/binding", {"target": {"name": "node-1"}})
    status, _ = await http.post(f"{PODS}/web/eviction", eviction("web", gracePeriodSeconds=5))
    assert status == 201
    status, held = await http.get(f"{PODS}/web")
    assert status == 200
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["deletionGracePeriodSeconds"] == 5


async def test_an_eviction_naming_another_pod_is_a_bad_request_and_deletes_nothing(http) -> None:
    await http.post(PODS, pod("web"))
    status, body = await http.post(f"{PODS}/web/eviction", eviction("other"))
    assert status == 400 and body["reason"] == "BadRequest"
    assert body["message"] == "name in URL does not match name in Eviction object"
    assert (await http.get(f"{PODS}/web"))[0] == 200


async def test_evicting_a_missing_pod_is_not_found(http) -> None:
    status, body = await http.post(f"{PODS}/ghost/eviction", eviction("ghost"))
    assert status == 404 and body["reason"] == "NotFound"


async def test_eviction_preconditions_are_checked(http) -> None:
    await http.post(PODS, pod("web"))
    status, body = await http.post(f"{PODS}/web/eviction", eviction("web", preconditions={"uid": "not-its-uid"}))
    assert status == 409 and body["reason"] == "Conflict"
    assert (await http.get(f"{PODS}/web"))[0] == 200


async def test_a_dry_run_eviction_deletes_nothing(http) -> None:
    await http.post(PODS, pod("web"))
    status, _ = await http.call("POST", f"{PODS}/web/eviction", eviction("web"), params={"dryRun": "All"})
    assert status == 201
    assert (await http.get(f"{PODS}/web"))[0] == 200


async def test_an_evicted_pod_is_marked_with_the_disruption_target_condition_before_it_goes(http) -> None:
    await http.post(PODS, pod("web"))
    await http.post(f"{PODS}/web/binding", {"target": {"name": "node-1"}})
    status, _ = await http.post(f"{PODS}/web/eviction", eviction("web", gracePeriodSeconds=30))
    assert status == 201
    _, held = await http.get(f"{PODS}/web")
    (condition,) = [c for c in held["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (condition["status"], condition["reason"], condition["message"]) == \
        ("True", "EvictionByEvictionAPI", "Eviction API: evicting")


async def test_a_resource_version_precondition_holds_across_the_condition_write(http) -> None:
    _, created = await http.post(PODS, pod("web"))
    await http.post(f"{PODS}/web/binding", {"target": {"name": "node-1"}})
    _, current = await http.get(f"{PODS}/web")
    status, body = await http.post(f"{PODS}/web/eviction", eviction(
        "web", preconditions={"resourceVersion": created["metadata"]["resourceVersion"]}))
    assert status == 409 and body["reason"] == "Conflict"
    _, unchanged = await http.get(f"{PODS}/web")
    assert unchanged["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]
    status, _ = await http.post(f"{PODS}/web/eviction", eviction(
        "web", preconditions={"resourceVersion": current["metadata"]["resourceVersion"]}))
    assert status == 201
    _, held = await http.get(f"{PODS}/web")
    assert held["metadata"]["deletionTimestamp"]
