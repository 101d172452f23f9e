"""ResourceQuotas through a real API server (no controller): their validation, and the ResourceQuota admission
plugin refusing writes past a hard limit with Kubernetes' message and status code, counting in-flight writes so
that concurrent creates cannot share the last slot."""

from __future__ import annotations

import asyncio

QUOTAS = "/api/v1/namespaces/default/resourcequotas"
PODS = "/api/v1/namespaces/default/pods"


def quota(name: str, hard: dict, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": hard, **spec}}


def pod(name: str, requests: dict | None = None, limits: dict | None = None, **spec: object) -> dict:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "busybox", "resources": resources}], **spec}}


async def test_quotas_are_validated_as_kubernetes_validates_them(http) -> None:
    status, body = await http.post(QUOTAS, quota("bad", {"pods": "1.5", "cpus": "1", "memory": "-1"},
                                                 scopes=["BestEffort", "NotBestEffort"]))
    assert status == 422, body
    causes = {(c["field"], c["message"]) for c in body["details"]["causes"]}
    assert ("spec.hard[pods]", 'Invalid value: "1.5": must be an integer') in causes
    assert ("spec.hard[cpus]", 'Invalid value: "cpus": must be a standard resource for quota') in causes
    assert ("spec.hard[memory]", 'Invalid value: "-1": must be greater than or equal to 0') in causes
    scopes = '[]string{"BestEffort", "NotBestEffort"}'
    assert ("spec.scopes", f"Invalid value: {scopes}: conflicting scopes") in causes
    assert ("spec.scopes", f"Invalid value: {scopes}: unsupported scope applied to resource") in causes


async def test_a_new_quota_has_no_status_until_the_controller_writes_one(http) -> None:
    body = quota("q", {"pods": "2"})
    body["status"] = {"hard": {"pods": "9"}, "used": {"pods": "0"}}
    status, created = await http.post(QUOTAS, body)
    assert status == 201 and "status" not in created
    created["status"] = {"hard": {"pods": "2"}, "used": {"pods": "0"}}
    status, written = await http.put(f"{QUOTAS}/q/status", created)
    assert status == 200 and written["status"]["used"] == {"pods": "0"}


async def test_a_namespace_over_its_pod_quota_refuses_with_kubernetes_message(http) -> None:
    await http.post(QUOTAS, quota("small", {"pods": "2"}))
    for name in ("one", "two"):
        assert (await http.post(PODS, pod(name)))[0] == 201
    status, body = await http.post(PODS, pod("three"))
    assert status == 403, body
    assert body["reason"] == "Forbidden"
    assert body["message"] == ('pods "three" is forbidden: exceeded quota: small, requested: pods=1, used: pods=2, '
                               'limited: pods=2')
    assert body["details"] == {"name": "three", "kind": "pods"}
    await http.delete(f"{PODS}/one", gracePeriodSeconds="0")
    assert (await http.post(PODS, pod("three")))[0] == 201


async def test_compute_quotas_add_up_requests_and_refuse_pods_that_leave_them_out(http) -> None:
    await http.post(QUOTAS, quota("compute", {"requests.cpu": "1", "requests.memory": "1Gi", "limits.cpu": "2"}))
    status, body = await http.post(PODS, pod("bare"))
    assert status == 403
    assert body["message"] == ('pods "bare" is forbidden: failed quota: compute: must specify '
                               'limits.cpu,requests.cpu,requests.memory')
    ok = pod("a", requests={"cpu": "600m", "memory": "512Mi"}, limits={"cpu": "1"})
    assert (await http.post(PODS, ok))[0] == 201
    status, body = await http.post(PODS, pod("b", requests={"cpu": "600m", "memory": "256Mi"}, limits={"cpu": "1"}))
    assert status == 403
    assert body["message"] == ('pods "b" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, '
                               'used: requests.cpu=600m, limited: requests.cpu=1')
    fits = pod("c", requests={"cpu": "400m", "memory": "512Mi"}, limits={"cpu": "1"})
    assert (await http.post(PODS, fits))[0] == 201
    status, body = await http.post(PODS, pod("d", requests={"cpu": "1m", "memory": "1"}, limits={"cpu": "1m"}))
    assert status == 403
    assert body["message"].endswith(
        "requested: limits.cpu=1m,requests.cpu=1m,requests.memory=1, used: limits.cpu=2,requests.cpu=1,"
        "requests.memory=1Gi, limited: limits.cpu=2,requests.cpu=1,requests.memory=1Gi")


async def test_a_finished_pod_no_longer_counts(http) -> None:
    await http.post(QUOTAS, quota("one", {"pods": "1"}))
    _, done = await http.post(PODS, pod("done"))
    assert (await http.post(PODS, pod("next")))[0] == 403
    done["status"] = {**done["status"], "phase": "Succeeded"}
    assert (await http.put(f"{PODS}/done/status", done))[0] == 200
    assert (await http.post(PODS, pod("next")))[0] == 201


async def test_concurrent_creates_never_share_the_last_slot(http) -> None:
    await http.post(QUOTAS, quota("few", {"pods": "3", "count/configmaps": "4"}))
    results = await asyncio.gather(*(http.post(PODS, pod(f"p{i}")) for i in range(12)))
    assert sorted(status for status, _ in results) == [201] * 3 + [403] * 9
    maps = await asyncio.gather(*(http.post("/api/v1/namespaces/default/configmaps",
                                            {"metadata": {"name": f"m{i}"}}) for i in range(10)))
    assert sorted(status for status, _ in maps) == [201] * 4 + [403] * 6
    refused = next(body for status, body in maps if status == 403)
    assert refused["message"].endswith("exceeded quota: few, requested: count/configmaps=1, used: "
                                       "count/configmaps=4, limited: count/configmaps=4")


async def test_a_write_that_fails_after_admission_or_a_dry_run_takes_no_slot(http) -> None:
    await http.post(QUOTAS, quota("two", {"pods": "2"}))
    assert (await http.post(PODS, pod("a")))[0] == 201
    assert (await http.post(PODS, pod("a")))[0] == 409  # admitted, then the name was taken
    assert (await http.call("POST", PODS, pod("dry"), params={"dryRun": "All"}))[0] == 201
    assert (await http.post(PODS, pod("b")))[0] == 201
    assert (await http.post(PODS, pod("c")))[0] == 403


async def test_service_quotas_count_node_ports_and_load_balancers_on_create_and_update(http) -> None:
    services = "/api/v1/namespaces/default/services"
    await http.post(QUOTAS, quota("svc", {"services.nodeports": "1", "services.loadbalancers": "0"}))
    plain = {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
    assert (await http.post(services, plain))[0] == 201
    status, body = await http.patch(f"{services}/web", {"spec": {"type": "LoadBalancer"}})
    assert status == 403
    assert body["message"] == ('services "web" is forbidden: exceeded quota: svc, requested: '
                               'services.loadbalancers=1, used: services.loadbalancers=0, limited: '
                               'services.loadbalancers=0')
    assert (await http.patch(f"{services}/web", {"spec": {"type": "NodePort"}}))[0] == 200
    two = {"metadata": {"name": "two"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}
    status, body = await http.post(services, two)
    assert status == 403 and "requested: services.nodeports=1, used: services.nodeports=1" in body["message"]


async def test_scopes_choose_which_pods_a_quota_counts(http) -> None:
    await http.post("/apis/scheduling.k8s.io/v1/priorityclasses",
                    {"metadata": {"name": "high"}, "value": 1000})
    await http.post(QUOTAS, quota("best-effort", {"pods": "1"}, scopes=["BestEffort"]))
    await http.post(QUOTAS, quota("high", {"pods": "1"}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}))
    assert (await http.post(PODS, pod("free")))[0] == 201
    status, body = await http.post(PODS, pod("free-2"))
    assert status == 403 and "exceeded quota: best-effort" in body["message"]
    assert (await http.post(PODS, pod("burstable", requests={"cpu": "1m"})))[0] == 201
    assert (await http.post(PODS, pod("vip", requests={"cpu": "1m"}, priorityClassName="high")))[0] == 201
    status, body = await http.post(PODS, pod("vip-2", requests={"cpu": "1m"}, priorityClassName="high"))
    assert status == 403 and "exceeded quota: high" in body["message"]
