"""RuntimeClasses through a real API server: their validation, and the RuntimeClass admission plugin refusing pods
that name a class that does not exist and giving the others the class's overhead and scheduling constraints."""

from __future__ import annotations

CLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
PODS = "/api/v1/namespaces/default/pods"


def runtime_class(name: str, handler: str = "runc", **fields: object) -> dict:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": handler,
            **fields}


def pod(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "busybox"}], **spec}}


async def test_runtime_classes_are_validated_and_their_handler_is_immutable(http) -> None:
    status, body = await http.post(CLASSES, runtime_class("bad", "Not_A_Label", overhead={"podFixed": {"cpu": "-1"}},
                                                          scheduling={"tolerations": [{"key": "a", "value": "1"},
                                                                                      {"key": "a", "value": "1"}]}))
    assert status == 422, body
    fields = {c["field"] for c in body["details"]["causes"]}
    assert {"handler", "overhead.limits[cpu]", "scheduling.tolerations[1]"} <= fields
    assert (await http.post(CLASSES, runtime_class("gvisor", "runsc")))[0] == 201
    status, body = await http.patch(f"{CLASSES}/gvisor", {"handler": "kata"})
    assert status == 422 and body["details"]["causes"][0] == {
        "reason": "FieldValueInvalid", "field": "handler", "message": 'Invalid value: "kata": field is immutable'}


async def test_a_pod_naming_a_missing_runtime_class_is_refused(http) -> None:
    status, body = await http.post(PODS, pod("lost", runtimeClassName="missing"))
    assert status == 403
    assert body["message"] == 'pods "lost" is forbidden: pod rejected: RuntimeClass "missing" not found'


async def test_a_pod_gets_its_classs_overhead_and_scheduling(http) -> None:
    await http.post(CLASSES, runtime_class("sandboxed", "runsc", overhead={"podFixed": {"cpu": "250m",
                                                                                       "memory": "120Mi"}},
                                           scheduling={"nodeSelector": {"sandbox": "true"},
                                                       "tolerations": [{"key": "sandbox", "operator": "Exists",
                                                                        "effect": "NoSchedule"}]}))
    status, created = await http.post(PODS, pod("isolated", runtimeClassName="sandboxed",
                                                nodeSelector={"zone": "a"}))
    assert status == 201, created
    spec = created["spec"]
    assert spec["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    assert spec["nodeSelector"] == {"zone": "a", "sandbox": "true"}
    assert {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    status, body = await http.post(PODS, pod("clash", runtimeClassName="sandboxed", nodeSelector={"sandbox": "no"}))
    assert status == 403
    assert body["message"] == ('pods "clash" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] '
                               '= true; pod.spec.nodeSelector[sandbox] = no')
    status, body = await http.post(PODS, pod("other", runtimeClassName="sandboxed", overhead={"cpu": "1"}))
    assert status == 403 and body["message"].endswith("pod rejected: Pod's Overhead doesn't match RuntimeClass's "
                                                      "defined Overhead")
    status, body = await http.post(PODS, pod("plain", overhead={"cpu": "1"}))
    assert status == 403 and body["message"].endswith("pod rejected: Pod Overhead set without corresponding "
                                                      "RuntimeClass defined Overhead")


async def test_a_quota_counts_the_overhead_a_runtime_class_adds(http) -> None:
    await http.post(CLASSES, runtime_class("heavy", overhead={"podFixed": {"cpu": "500m"}}))
    await http.post("/api/v1/namespaces/default/resourcequotas",
                    {"metadata": {"name": "cpu"}, "spec": {"hard": {"requests.cpu": "1"}}})
    small = {"containers": [{"name": "app", "image": "busybox", "resources": {"requests": {"cpu": "400m"}}}]}
    assert (await http.post(PODS, {"metadata": {"name": "a"}, "spec": {**small, "runtimeClassName": "heavy"}}))[0] \
        == 201
    status, body = await http.post(PODS, {"metadata": {"name": "b"}, "spec": {**small, "runtimeClassName": "heavy"}})
    assert status == 403 and "requested: requests.cpu=900m, used: requests.cpu=900m" in body["message"]
