"""Writes to pods/status over real HTTP: what they may change, how they are validated, and that a write changing
nothing leaves the pod as it was. Also: a large list on a kept-alive connection."""

from __future__ import annotations

from typing import Any

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str = "web") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


async def test_a_status_patch_changes_the_status_and_bumps_the_resource_version(http) -> None:
    _, created = await http.post(PODS, pod())
    status, patched = await http.patch(f"{PODS}/web/status", {"status": {"phase": "Running"}})
    assert status == 200, patched
    assert patched["status"]["phase"] == "Running"
    assert int(patched["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert patched["spec"] == created["spec"]


async def test_a_status_patch_that_changes_nothing_keeps_the_resource_version(http) -> None:
    await http.post(PODS, pod())
    _, first = await http.patch(f"{PODS}/web/status", {"status": {"phase": "Running"}})
    status, again = await http.patch(f"{PODS}/web/status", {"status": {"phase": "Running"}})
    assert status == 200
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    status, put = await http.put(f"{PODS}/web/status", again)
    assert status == 200 and put["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


async def test_a_status_put_from_a_stale_copy_is_a_conflict(http) -> None:
    _, created = await http.post(PODS, pod())
    await http.patch(f"{PODS}/web/status", {"status": {"phase": "Running"}})
    stale = {**created, "status": {"phase": "Failed"}}
    status, body = await http.put(f"{PODS}/web/status", stale)
    assert status == 409 and body["reason"] == "Conflict"


async def test_a_custom_condition_type_must_be_a_qualified_name(http) -> None:
    await http.post(PODS, pod())
    ok = {"type": "example.com/Warm", "status": "True"}
    status, body = await http.patch(f"{PODS}/web/status", {"status": {"conditions": [ok]}},
                                    "application/strategic-merge-patch+json")
    assert status == 200, body
    bad = {"type": "not a type!", "status": "True"}
    status, body = await http.patch(f"{PODS}/web/status", {"status": {"conditions": [bad]}},
                                    "application/strategic-merge-patch+json")
    assert status == 422 and body["reason"] == "Invalid"
    assert [c["field"] for c in body["details"]["causes"]] == ["status.conditions[1].Type"]


async def test_pod_ips_in_a_status_write_must_be_ip_addresses(http) -> None:
    await http.post(PODS, pod())
    status, body = await http.patch(f"{PODS}/web/status", {"status": {"podIPs": [{"ip": "10.0.0.300"}]}})
    assert status == 422
    assert body["details"]["causes"][0]["field"] == "status.podIPs[0]"
    status, body = await http.patch(f"{PODS}/web/status", {"status": {"podIPs": [{"ip": "10.0.0.3"}],
                                                                      "podIP": "10.0.0.3"}})
    assert status == 200 and body["status"]["podIPs"] == [{"ip": "10.0.0.3"}]


async def test_a_status_write_cannot_change_the_spec_or_the_labels(http) -> None:
    _, created = await http.post(PODS, pod())
    changed = {**created, "metadata": {**created["metadata"], "labels": {"sneaky": "yes"}},
               "spec": {**created["spec"], "activeDeadlineSeconds": 5}, "status": {"phase": "Running"}}
    status, body = await http.put(f"{PODS}/web/status", changed)
    assert status == 200, body
    assert body["status"]["phase"] == "Running"
    assert "labels" not in body["metadata"] and "activeDeadlineSeconds" not in body["spec"]


async def test_a_large_list_arrives_whole_and_the_connection_serves_the_next_request(http) -> None:
    value = "x" * 60_000
    for i in range(8):  # about half a megabyte: sent in slices
        status, body = await http.post("/api/v1/namespaces/default/configmaps",
                                       {"metadata": {"name": f"big-{i}"}, "data": {"v": value}})
        assert status == 201, body
    status, listed = await http.get("/api/v1/namespaces/default/configmaps")
    assert status == 200
    assert sorted(i["metadata"]["name"] for i in listed["items"] if i["data"].get("v") == value) == \
        [f"big-{i}" for i in range(8)]
    status, one = await http.get("/api/v1/namespaces/default/configmaps/big-3")
    assert status == 200 and one["data"]["v"] == value


async def test_a_status_patch_records_its_manager_and_leaves_the_rest_of_the_pod_as_stored(http) -> None:
    _, created = await http.post(PODS, pod())
    patch = {"status": {"conditions": [{"type": "example.com/Warm", "status": "True"}]}}
    status, patched = await http.call("PATCH", f"{PODS}/web/status", patch,
                                      content_type="application/strategic-merge-patch+json",
                                      params={"fieldManager": "warmer"})
    assert status == 200, patched
    entries = {(e["manager"], e.get("subresource", "")) for e in patched["metadata"]["managedFields"]}
    assert ("warmer", "status") in entries
    assert {c["type"] for c in patched["status"]["conditions"]} >= {"example.com/Warm"}
    assert patched["status"]["phase"] == created["status"]["phase"] and patched["spec"] == created["spec"]
    _, stored = await http.get(f"{PODS}/web")
    assert stored == patched
    status, again = await http.call("PATCH", f"{PODS}/web/status", patch,
                                    content_type="application/strategic-merge-patch+json",
                                    params={"fieldManager": "warmer"})
    assert status == 200 and again["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]
