"""LimitRanges through a real API server: their validation and defaults, and the LimitRanger admission plugin
giving pods the requests and limits they leave out and refusing those outside the ranges, in Kubernetes' words."""

from __future__ import annotations

RANGES = "/api/v1/namespaces/default/limitranges"
PODS = "/api/v1/namespaces/default/pods"


def limit_range(name: str, *items: dict) -> dict:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name}, "spec": {"limits": list(items)}}


def pod(name: str, *containers: dict, init: list[dict] | None = None) -> dict:
    spec: dict = {"containers": list(containers) or [{"name": "app", "image": "busybox"}]}
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def container(name: str = "app", requests: dict | None = None, limits: dict | None = None) -> dict:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {"name": name, "image": "busybox", "resources": resources}


async def test_a_container_item_defaults_its_limit_to_the_max_and_its_request_to_the_limit_or_the_min(http) -> None:
    status, created = await http.post(RANGES, limit_range("bounds", {
        "type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m"},
        "default": {"memory": "512Mi"}}))
    assert status == 201, created
    item = created["spec"]["limits"][0]
    assert item["default"] == {"cpu": "2", "memory": "512Mi"}
    assert item["defaultRequest"] == {"cpu": "2", "memory": "512Mi"}
    status, created = await http.post(RANGES, limit_range("floor", {"type": "Container", "min": {"cpu": "50m"}}))
    assert created["spec"]["limits"][0] == {"type": "Container", "min": {"cpu": "50m"},
                                            "defaultRequest": {"cpu": "50m"}}


async def test_inconsistent_bounds_are_refused_with_kubernetes_causes(http) -> None:
    status, body = await http.post(RANGES, limit_range("bad", {
        "type": "Container", "min": {"cpu": "200m"}, "max": {"cpu": "0.1"}, "default": {"cpu": "150m"}}))
    assert status == 422, body
    causes = {(c["field"], c["message"]) for c in body["details"]["causes"]}
    assert ("spec.limits[0].min[cpu]",
            'Invalid value: "200m": min value 200m is greater than max value 100m') in causes
    assert ("spec.limits[0].default[cpu]",
            'Invalid value: "200m": min value 200m is greater than default value 150m') in causes
    assert ("spec.limits[0].default[cpu]",
            'Invalid value: "100m": default value 150m is greater than max value 100m') in causes
    assert body["message"].startswith('LimitRange "bad" is invalid: ')


async def test_pod_items_may_not_carry_defaults_and_types_and_names_are_checked(http) -> None:
    status, body = await http.post(RANGES, limit_range("bad", {"type": "Pod", "default": {"cpu": "1"}},
                                                       {"type": "Pod", "max": {"cpus": "1"}},
                                                       {"type": "Node", "max": {"cpu": "1"}},
                                                       {"type": "Container", "maxLimitRequestRatio": {"cpu": "0.5"}}))
    assert status == 422, body
    causes = {(c["field"], c["message"]) for c in body["details"]["causes"]}
    assert ("spec.limits[0].default", "Forbidden: may not be specified when `type` is 'Pod'") in causes
    assert ("spec.limits[1].type", 'Duplicate value: "Pod"') in causes
    assert ("spec.limits[1].max[cpus]",
            'Invalid value: "cpus": must be a standard resource type or fully qualified') in causes
    assert ("spec.limits[2].type", 'Invalid value: "Node": must be a standard limit type or fully qualified') in causes
    assert ("spec.limits[3].maxLimitRequestRatio[cpu]", 'Invalid value: "500m": ratio 500m is less than 1') in causes


async def test_a_pod_gets_the_default_requests_and_limits_it_leaves_out_and_says_so(http) -> None:
    await http.post(RANGES, limit_range("defaults", {
        "type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
        "defaultRequest": {"cpu": "100m", "memory": "128Mi"}}))
    status, created = await http.post(PODS, pod("web", container("app", requests={"cpu": "200m"}),
                                                container("side")))
    assert status == 201, created
    app, side = created["spec"]["containers"]
    assert app["resources"] == {"requests": {"cpu": "200m", "memory": "128Mi"},
                                "limits": {"cpu": "500m", "memory": "256Mi"}}
    assert side["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"},
                                 "limits": {"cpu": "500m", "memory": "256Mi"}}
    assert created["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: memory request for container app; cpu, memory limit for container app; "
        "cpu, memory request for container side; cpu, memory limit for container side")
    assert created["status"]["qosClass"] == "Burstable"


async def test_a_pod_below_a_minimum_is_forbidden_as_kubernetes_words_it(http) -> None:
    await http.post(RANGES, limit_range("floor", {"type": "Container", "min": {"cpu": "100m"}}))
    status, body = await http.post(PODS, pod("tiny", container(requests={"cpu": "50m"})))
    assert status == 403, body
    assert body["reason"] == "Forbidden"
    assert body["message"] == ('pods "tiny" is forbidden: minimum cpu usage per Container is 100m, but request is '
                               '50m')
    assert body["details"] == {"name": "tiny", "kind": "pods"}
    status, created = await http.post(PODS, pod("defaulted"))
    assert status == 201 and created["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m"}


async def test_maximums_and_ratios_are_enforced_with_every_problem_named(http) -> None:
    await http.post(RANGES, limit_range("caps", {
        "type": "Container", "max": {"memory": "1Gi"}, "maxLimitRequestRatio": {"cpu": "2"}}))
    status, body = await http.post(PODS, pod("greedy", container(requests={"cpu": "100m", "memory": "1Gi"},
                                                                 limits={"cpu": "1", "memory": "2Gi"})))
    assert status == 403, body
    assert body["message"] == (
        'pods "greedy" is forbidden: [maximum memory usage per Container is 1Gi, but limit is 2Gi, cpu max limit '
        'to request ratio per Container is 2, but provided ratio is 10.000000]')
    status, _ = await http.post(PODS, pod("fits", container(requests={"cpu": "500m"}, limits={"cpu": "1"})))
    assert status == 201


async def test_a_pod_item_bounds_the_sum_of_the_pods_containers(http) -> None:
    await http.post(RANGES, limit_range("per-pod", {"type": "Pod", "max": {"cpu": "1"}}))
    two = pod("two", container("a", limits={"cpu": "600m"}), container("b", limits={"cpu": "600m"}))
    status, body = await http.post(PODS, two)
    assert status == 403
    assert body["message"] == 'pods "two" is forbidden: maximum cpu usage per Pod is 1, but limit is 1200m'
    one = pod("one", container("a", limits={"cpu": "600m"}), init=[container("setup", limits={"cpu": "1"})])
    assert (await http.post(PODS, one))[0] == 201


async def test_limit_ranges_in_other_namespaces_do_not_apply(http) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    await http.post("/api/v1/namespaces/other/limitranges", limit_range("floor", {
        "type": "Container", "min": {"cpu": "1"}}))
    status, created = await http.post(PODS, pod("free"))
    assert status == 201 and created["spec"]["containers"][0].get("resources", {}) == {}
