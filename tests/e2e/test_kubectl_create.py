"""Real kubectl 1.32's `create` generators and `expose`, which send their objects in Kubernetes protobuf
(``application/vnd.kubernetes.protobuf``) through its typed clients: each command succeeds and the server then
holds the object the flags describe, defaulted as from JSON."""

from __future__ import annotations

import base64

import pytest

pytestmark = pytest.mark.timeout(120)

NS = "/api/v1/namespaces/default"


async def held(http, path: str) -> dict:  # type: ignore[no-untyped-def, type-arg]
    status, body = await http.get(path)
    assert status == 200, body
    return body


async def test_create_namespace_is_sent_as_protobuf_and_the_namespace_exists(kubectl, http) -> None:
    result = await kubectl("create", "namespace", "foo", "-v=8")
    assert "namespace/foo created" in result.out
    assert "Content-Type: application/vnd.kubernetes.protobuf" in result.err  # the path under test
    namespace = await held(http, "/api/v1/namespaces/foo")
    assert namespace["status"] == {"phase": "Active"} and namespace["spec"] == {"finalizers": ["kubernetes"]}


async def test_create_configmap_from_literals_keeps_every_value(kubectl, http) -> None:
    await kubectl("create", "configmap", "cfg", "--from-literal=a=1", "--from-literal=greeting=hello world",
                  "--from-literal=empty=")
    assert (await held(http, f"{NS}/configmaps/cfg"))["data"] == {"a": "1", "greeting": "hello world", "empty": ""}


async def test_create_secret_generic_stores_base64_data(kubectl, http) -> None:
    await kubectl("create", "secret", "generic", "creds", "--from-literal=password=hunter2")
    secret = await held(http, f"{NS}/secrets/creds")
    assert secret["type"] == "Opaque"
    assert base64.b64decode(secret["data"]["password"]) == b"hunter2"


async def test_create_deployment_with_image_replicas_and_port(kubectl, http) -> None:
    await kubectl("create", "deployment", "web", "--image=busybox:1.36", "--replicas=3", "--port=8080")
    deployment = await held(http, "/apis/apps/v1/namespaces/default/deployments/web")
    spec = deployment["spec"]
    assert spec["replicas"] == 3 and spec["selector"] == {"matchLabels": {"app": "web"}}
    (container,) = spec["template"]["spec"]["containers"]
    assert (container["name"], container["image"]) == ("busybox", "busybox:1.36")
    assert container["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert spec["strategy"]["type"] == "RollingUpdate" and spec["revisionHistoryLimit"] == 10  # defaulted


async def test_create_deployment_with_zero_replicas_keeps_zero(kubectl, http) -> None:
    await kubectl("create", "deployment", "idle", "--image=busybox:1.36", "--replicas=0")
    assert (await held(http, "/apis/apps/v1/namespaces/default/deployments/idle"))["spec"]["replicas"] == 0


async def test_create_job_runs_the_command_given(kubectl, http) -> None:
    await kubectl("create", "job", "once", "--image=busybox:1.36", "--", "echo", "hi")
    job = await held(http, "/apis/batch/v1/namespaces/default/jobs/once")
    pod_spec = job["spec"]["template"]["spec"]
    assert pod_spec["containers"][0]["command"] == ["echo", "hi"] and pod_spec["restartPolicy"] == "Never"
    assert job["spec"]["backoffLimit"] == 6 and job["spec"]["completions"] == 1


async def test_create_cronjob_with_a_schedule(kubectl, http) -> None:
    await kubectl("create", "cronjob", "tick", "--image=busybox:1.36", "--schedule=*/5 * * * *", "--", "date")
    cronjob = await held(http, "/apis/batch/v1/namespaces/default/cronjobs/tick")
    assert cronjob["spec"]["schedule"] == "*/5 * * * *"
    assert cronjob["spec"]["suspend"] is False and cronjob["spec"]["concurrencyPolicy"] == "Allow"
    container = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["command"]) == ("busybox:1.36", ["date"])


async def test_create_service_clusterip_maps_the_port_and_gets_an_ip(kubectl, http) -> None:
    await kubectl("create", "service", "clusterip", "api", "--tcp=80:8080")
    service = await held(http, f"{NS}/services/api")
    assert service["spec"]["ports"] == [{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}]
    assert service["spec"]["type"] == "ClusterIP" and service["spec"]["clusterIP"].count(".") == 3
    assert service["spec"]["selector"] == {"app": "api"}


async def test_create_serviceaccount(kubectl, http) -> None:
    result = await kubectl("create", "serviceaccount", "robot")
    assert "serviceaccount/robot created" in result.out
    assert (await held(http, f"{NS}/serviceaccounts/robot"))["metadata"]["namespace"] == "default"


async def test_create_priorityclass_with_value_and_description(kubectl, http) -> None:
    await kubectl("create", "priorityclass", "high", "--value=1000", "--description=for the important ones",
                  "--preemption-policy=Never")
    priority = await held(http, "/apis/scheduling.k8s.io/v1/priorityclasses/high")
    assert (priority["value"], priority["description"]) == (1000, "for the important ones")
    assert priority["preemptionPolicy"] == "Never" and "globalDefault" not in priority


async def test_expose_a_deployment_makes_a_service_selecting_its_pods(kubectl, http) -> None:
    await kubectl("create", "deployment", "web", "--image=busybox:1.36")
    result = await kubectl("expose", "deployment", "web", "--port=80", "--target-port=8080", "--name=web-svc")
    assert "service/web-svc exposed" in result.out
    service = await held(http, f"{NS}/services/web-svc")
    assert service["spec"]["selector"] == {"app": "web"}
    assert service["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 8080}]


async def test_run_with_expose_creates_the_pod_and_its_service(kubectl, http) -> None:
    result = await kubectl("run", "echo", "--image=busybox:1.36", "--port=80", "--expose")
    assert "service/echo created" in result.out and "pod/echo created" in result.out
    service = await held(http, f"{NS}/services/echo")
    assert service["spec"]["selector"] == {"run": "echo"} and service["spec"]["ports"][0]["port"] == 80
    assert (await held(http, f"{NS}/pods/echo"))["spec"]["containers"][0]["ports"] == [
        {"containerPort": 80, "protocol": "TCP"}]


async def test_create_job_from_a_cronjob_is_owned_by_it(kubectl, http) -> None:
    await kubectl("create", "cronjob", "tick", "--image=busybox:1.36", "--schedule=0 * * * *", "--", "date")
    await kubectl("create", "job", "manual", "--from=cronjob/tick")
    job = await held(http, "/apis/batch/v1/namespaces/default/jobs/manual")
    assert job["metadata"]["annotations"] == {"cronjob.kubernetes.io/instantiate": "manual"}
    (owner,) = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "tick", True)


async def test_create_configmap_from_a_binary_file_keeps_its_bytes(kubectl, http, tmp_path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x00\xffminik\x80")
    await kubectl("create", "configmap", "bin", f"--from-file={blob}")
    configmap = await held(http, f"{NS}/configmaps/bin")
    assert base64.b64decode(configmap["binaryData"]["blob.bin"]) == b"\x00\xffminik\x80"
