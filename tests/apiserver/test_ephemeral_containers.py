"""pods/ephemeralcontainers as Kubernetes 1.32 serves it (get, update, patch of a Pod whose
spec.ephemeralContainers alone changes) and pods/attach in discovery."""

from __future__ import annotations

from typing import Any

from minik.testing.namespaces import default_service_account, service_accounts_path

PODS = "/api/v1/namespaces/default/pods"
STRATEGIC = "application/strategic-merge-patch+json"


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}],
                     "initContainers": [{"name": "setup", "image": "busybox:1.36"}]}}


def debugger(name: str = "debugger", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox:1.36", "stdin": True, "tty": True, "targetContainerName": "app",
            "resources": {}, **extra}


def causes(body: dict) -> list[tuple[str, str, str]]:
    return [(c["field"], c["reason"], c["message"]) for c in body["details"]["causes"]]


async def test_discovery_lists_pods_attach_and_pods_ephemeralcontainers_as_kubernetes_does(http) -> None:
    _, doc = await http.get("/api/v1")
    entries = {r["name"]: r for r in doc["resources"]}
    assert (entries["pods/attach"]["kind"], entries["pods/attach"]["verbs"]) == ("PodAttachOptions",
                                                                                 ["create", "get"])
    ephemeral = entries["pods/ephemeralcontainers"]
    assert (ephemeral["kind"], sorted(ephemeral["verbs"])) == ("Pod", ["get", "patch", "update"])


async def test_a_strategic_patch_as_kubectl_debug_sends_adds_a_defaulted_ephemeral_container(http) -> None:
    await http.post(PODS, pod("web"))
    status, body = await http.patch(f"{PODS}/web/ephemeralcontainers",
                                    {"spec": {"ephemeralContainers": [debugger()]}}, STRATEGIC)
    assert status == 200, body
    assert body["kind"] == "Pod"
    (added,) = body["spec"]["ephemeralContainers"]
    assert added["targetContainerName"] == "app" and added["terminationMessagePolicy"] == "File"
    assert added["imagePullPolicy"] == "IfNotPresent"
    status, read = await http.get(f"{PODS}/web/ephemeralcontainers")
    assert status == 200 and read["spec"]["ephemeralContainers"] == body["spec"]["ephemeralContainers"]


async def test_the_subresource_changes_nothing_but_the_ephemeral_containers(http) -> None:
    _, created = await http.post(PODS, pod("web"))
    changed = pod("web")
    changed["metadata"]["labels"] = {"sneaky": "yes"}
    changed["spec"]["containers"][0]["image"] = "busybox:1.35"
    changed["spec"]["ephemeralContainers"] = [debugger()]
    status, body = await http.put(f"{PODS}/web/ephemeralcontainers", changed)
    assert status == 200, body
    assert "labels" not in body["metadata"] and body["spec"]["containers"] == created["spec"]["containers"]
    assert [c["name"] for c in body["spec"]["ephemeralContainers"]] == ["debugger"]


async def test_ephemeral_containers_cannot_be_removed_or_changed(http) -> None:
    await http.post(PODS, pod("web"))
    _, body = await http.patch(f"{PODS}/web/ephemeralcontainers", {"spec": {"ephemeralContainers": [debugger()]}},
                               STRATEGIC)
    removed = dict(body, spec=dict(body["spec"], ephemeralContainers=[]))
    status, answer = await http.put(f"{PODS}/web/ephemeralcontainers", removed)
    assert status == 422 and answer["reason"] == "Invalid"
    assert causes(answer) == [("spec.ephemeralContainers", "FieldValueForbidden",
                               'Forbidden: existing ephemeral containers "debugger" may not be removed\n')]
    changed = dict(body["spec"]["ephemeralContainers"][0], image="busybox:1.35")
    status, answer = await http.put(f"{PODS}/web/ephemeralcontainers",
                                    dict(body, spec=dict(body["spec"], ephemeralContainers=[changed])))
    assert status == 422
    assert causes(answer) == [("spec.ephemeralContainers.debugger", "FieldValueForbidden",
                               'Forbidden: existing ephemeral containers "debugger" may not be changed\n')]


async def test_fields_that_would_make_a_debugger_part_of_the_workload_are_refused(http) -> None:
    await http.post(PODS, pod("web"))
    bad = debugger(ports=[{"containerPort": 80}], resources={"limits": {"cpu": "1"}},
                   readinessProbe={"exec": {"command": ["true"]}}, restartPolicy="Always",
                   volumeMounts=[{"name": "v", "mountPath": "/v", "subPath": "x"}])
    status, body = await http.patch(f"{PODS}/web/ephemeralcontainers", {"spec": {"ephemeralContainers": [bad]}},
                                    STRATEGIC)
    assert status == 422 and body["details"]["kind"] == "Pod" and body["details"]["name"] == "web"
    fields = {field for field, reason, message in causes(body)
              if reason == "FieldValueForbidden" and message == "Forbidden: cannot be set for an Ephemeral Container"}
    base = "spec.ephemeralContainers[0]"
    assert fields == {f"{base}.ports", f"{base}.resources", f"{base}.readinessProbe", f"{base}.restartPolicy",
                      f"{base}.volumeMounts[0].subPath"}


async def test_names_must_be_new_and_the_target_must_be_an_app_or_init_container(http) -> None:
    await http.post(PODS, pod("web"))
    status, body = await http.patch(f"{PODS}/web/ephemeralcontainers", {"spec": {"ephemeralContainers": [
        debugger("app", targetContainerName="nope"), debugger("d2", targetContainerName="setup")]}}, STRATEGIC)
    assert status == 422
    assert causes(body) == [
        ("spec.ephemeralContainers[0].name", "FieldValueDuplicate", 'Duplicate value: "app"'),
        ("spec.ephemeralContainers[0].targetContainerName", "FieldValueNotFound", 'Not found: "nope"')]


async def test_the_subresource_takes_no_create_and_the_pod_none_on_create(http) -> None:
    await http.post(PODS, pod("web"))
    status, _ = await http.post(f"{PODS}/web/ephemeralcontainers", pod("web"))
    assert status == 405
    with_debugger = pod("other")
    with_debugger["spec"]["ephemeralContainers"] = [debugger()]
    status, body = await http.post(PODS, with_debugger)
    assert status == 422 and ("spec.ephemeralContainers", "FieldValueForbidden",
                              "Forbidden: cannot be set on create") in causes(body)


async def test_a_plain_pod_update_cannot_drop_its_ephemeral_containers(http) -> None:
    await http.post(PODS, pod("web"))
    _, body = await http.patch(f"{PODS}/web/ephemeralcontainers", {"spec": {"ephemeralContainers": [debugger()]}},
                               STRATEGIC)
    body["spec"].pop("ephemeralContainers")
    status, answer = await http.put(f"{PODS}/web", body)
    assert status == 422 and answer["reason"] == "Invalid"


async def test_attach_to_a_pod_without_a_node_is_a_bad_request(http) -> None:
    await http.post(PODS, pod("web"))
    status, body = await http.post(f"{PODS}/web/attach?stdout=true", None)
    assert status == 400 and body["message"] == "pod web does not have a host assigned"
    status, body = await http.post(f"{PODS}/web/attach?container=nope", None)
    assert status == 400 and body["message"] == "container nope is not valid for pod web"


async def test_pod_security_holds_a_debug_container_to_the_namespaces_level(http) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "guarded", "labels": {
        "pod-security.kubernetes.io/enforce": "baseline"}}})
    await http.post(service_accounts_path("guarded"), default_service_account())  # no controller makes it here
    pods = "/api/v1/namespaces/guarded/pods"
    assert (await http.post(pods, pod("web")))[0] == 201
    root = debugger("root", securityContext={"privileged": True})
    status, body = await http.patch(f"{pods}/web/ephemeralcontainers", {"spec": {"ephemeralContainers": [root]}},
                                    STRATEGIC)
    assert status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == ('pods "web" is forbidden: violates PodSecurity "baseline:latest": privileged '
                               '(container "root" must not set securityContext.privileged=true)')
    status, _ = await http.patch(f"{pods}/web/ephemeralcontainers", {"spec": {"ephemeralContainers": [debugger()]}},
                                 STRATEGIC)
    assert status == 200
