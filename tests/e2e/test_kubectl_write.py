"""Real kubectl (the binary the dispatcher picks for the server's /version, 1.32) writing to a real minik API
server: create, client-side and server-side apply, patch, label, annotate, replace, delete with every cascade
mode, wait and get --watch; what kubectl prints, and what the server holds afterwards.

kubectl runs as a subprocess while the cluster serves from the test's event loop; each test has its own
kubeconfig and cache directory. Validation is kubectl's default (strict, checked by the server).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from kubectl_helpers import Result, finish

pytestmark = pytest.mark.timeout(120)

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"




@pytest.fixture
async def running() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """Background kubectl processes a test starts; any still running at the end are ended."""
    processes: list[asyncio.subprocess.Process] = []
    yield processes
    for process in processes:
        if process.returncode is None:
            process.kill()
            await process.communicate()


def pod(name: str = "web", image: str = "nginx:1", env: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": image}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"containers": [container]}}


def deployment(name: str = "d", image: str = "nginx:1", replicas: int | None = None,
               env: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": name}},
                            "template": {"metadata": {"labels": {"app": name}}, "spec": pod(name, image, env)["spec"]}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
            "spec": spec}


def managers(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["manager"], m["operation"]) for m in obj["metadata"].get("managedFields", [])]


async def until(check: Any, timeout: float = 10) -> Any:
    """Poll an async check until it returns something truthy."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await check()
        if value:
            return value
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


# -- create and client-side apply ----------------------------------------------------------------------------
async def test_create_then_create_again(http, kubectl) -> None:
    path = kubectl.manifest("pod.yaml", pod())
    assert (await kubectl("create", "-f", path)).out == "pod/web created\n"
    status, live = await http.get(f"{PODS}/web")
    assert status == 200 and live["spec"]["containers"][0]["image"] == "nginx:1"
    assert managers(live) == [("kubectl-create", "Update")]

    again = await kubectl("create", "-f", path, ok=False)
    assert again.code == 1
    assert again.err.strip() == f'Error from server (AlreadyExists): error when creating "{path}": pods "web" ' \
                                f'already exists'


async def test_client_side_apply_creates_leaves_unchanged_and_configures_with_a_strategic_patch(http, kubectl
                                                                                               ) -> None:
    path = kubectl.manifest("deploy.yaml", deployment(env={"A": "1", "B": "2"}))
    assert (await kubectl("apply", "-f", path)).out == "deployment.apps/d created\n"
    _, created = await http.get(f"{DEPLOYMENTS}/d")
    assert orjson.loads(created["metadata"]["annotations"][LAST_APPLIED])["metadata"]["name"] == "d"
    assert managers(created) == [("kubectl-client-side-apply", "Update")]

    assert (await kubectl("apply", "-f", path)).out == "deployment.apps/d unchanged\n"
    _, same = await http.get(f"{DEPLOYMENTS}/d")
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    # someone else adds an env var to the container; a strategic merge patch (merged by name) keeps it, where a
    # JSON merge patch would have replaced the container list
    await kubectl("set", "env", "deployment/d", "C=3")
    kubectl.manifest("deploy.yaml", deployment(image="nginx:2", env={"B": "20"}))
    assert (await kubectl("apply", "-f", path)).out == "deployment.apps/d configured\n"
    _, live = await http.get(f"{DEPLOYMENTS}/d")
    [container] = live["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "nginx:2"
    assert container["env"] == [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}]
    assert orjson.loads(live["metadata"]["annotations"][LAST_APPLIED])["spec"]["template"]["spec"][
        "containers"][0]["image"] == "nginx:2"
    assert live["metadata"]["generation"] == 3


# -- server-side apply ---------------------------------------------------------------------------------------
async def test_server_side_apply_creates_updates_conflicts_and_forces(http, kubectl) -> None:
    path = kubectl.manifest("deploy.yaml", deployment(replicas=2))
    assert (await kubectl("apply", "--server-side", "-f", path)).out == "deployment.apps/d serverside-applied\n"
    _, created = await http.get(f"{DEPLOYMENTS}/d")
    assert managers(created) == [("kubectl", "Apply")]
    assert (await kubectl("apply", "--server-side", "-f", path)).out == "deployment.apps/d serverside-applied\n"
    _, same = await http.get(f"{DEPLOYMENTS}/d")
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    await kubectl("patch", "deployment", "d", "--type=merge", "-p", '{"spec":{"replicas":5}}')
    kubectl.manifest("deploy.yaml", deployment(replicas=3, image="nginx:2"))
    refused = await kubectl("apply", "--server-side", "-f", path, ok=False)
    assert refused.code == 1
    assert refused.err.startswith('error: Apply failed with 1 conflict: conflict with "kubectl-patch" using '
                                  'apps/v1: .spec.replicas\nPlease review the fields above')
    _, live = await http.get(f"{DEPLOYMENTS}/d")
    assert live["spec"]["replicas"] == 5 and live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"

    forced = await kubectl("apply", "--server-side", "--force-conflicts", "-f", path)
    assert forced.out == "deployment.apps/d serverside-applied\n"
    _, live = await http.get(f"{DEPLOYMENTS}/d")
    assert live["spec"]["replicas"] == 3 and live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert managers(live) == [("kubectl", "Apply")]  # kubectl-patch owned only replicas, now taken over

    # a field dropped from the manifest is removed (the server defaults replicas again)
    kubectl.manifest("deploy.yaml", deployment(image="nginx:2"))
    await kubectl("apply", "--server-side", "-f", path)
    _, live = await http.get(f"{DEPLOYMENTS}/d")
    assert live["spec"]["replicas"] == 1


async def test_server_side_apply_takes_over_from_client_side_apply(http, kubectl) -> None:
    path = kubectl.manifest("deploy.yaml", deployment(env={"A": "1"}))
    await kubectl("apply", "-f", path)
    kubectl.manifest("deploy.yaml", deployment(image="nginx:2"))
    result = await kubectl("apply", "--server-side", "-f", path)
    assert result.out == "deployment.apps/d serverside-applied\n" and result.err == ""
    _, live = await http.get(f"{DEPLOYMENTS}/d")
    [container] = live["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "nginx:2" and "env" not in container
    # kubectl migrated client-side apply's ownership to its server-side manager; the server keeps the
    # last-applied annotation current, owned by kubectl-last-applied
    assert sorted(managers(live)) == [("kubectl", "Apply"), ("kubectl-last-applied", "Apply")]
    assert orjson.loads(live["metadata"]["annotations"][LAST_APPLIED])["spec"]["template"]["spec"][
        "containers"][0]["image"] == "nginx:2"
    # and client-side apply still works afterwards
    kubectl.manifest("deploy.yaml", deployment(image="nginx:3"))
    assert (await kubectl("apply", "-f", path)).out == "deployment.apps/d configured\n"


# -- patch, label, annotate, replace -------------------------------------------------------------------------
async def test_patch_with_each_patch_type(http, kubectl) -> None:
    await kubectl("create", "-f", kubectl.manifest("pod.yaml", pod(env={"A": "1"})))
    strategic = await kubectl("patch", "pod", "web", "-p",
                              '{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}')
    assert strategic.out == "pod/web patched\n"
    _, live = await http.get(f"{PODS}/web")
    assert live["spec"]["containers"][0]["image"] == "nginx:2"
    assert live["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]  # merged by name

    assert (await kubectl("patch", "pod", "web", "--type", "merge", "-p",
                          '{"metadata":{"labels":{"tier":"front"}}}')).out == "pod/web patched\n"
    assert (await kubectl("patch", "pod", "web", "--type", "json", "-p",
                          '[{"op":"replace","path":"/metadata/labels/tier","value":"back"}]')).out == \
        "pod/web patched\n"
    _, live = await http.get(f"{PODS}/web")
    assert live["metadata"]["labels"] == {"app": "web", "tier": "back"}
    assert ("kubectl-patch", "Update") in managers(live)

    same = await kubectl("patch", "pod", "web", "--type", "merge", "-p", '{"metadata":{"labels":{"tier":"back"}}}')
    assert same.out == "pod/web patched (no change)\n"
    failed = await kubectl("patch", "pod", "web", "--type", "json", "-p",
                           '[{"op":"test","path":"/metadata/name","value":"other"}]', ok=False)
    assert failed.code == 1 and failed.err.startswith("The request is invalid: ")  # 422, as Kubernetes answers


async def test_label_and_annotate(http, kubectl) -> None:
    await kubectl("create", "-f", kubectl.manifest("pod.yaml", pod()))
    assert (await kubectl("label", "pod", "web", "tier=front")).out == "pod/web labeled\n"
    refused = await kubectl("label", "pod", "web", "tier=back", ok=False)
    assert refused.code == 1 and "'tier' already has a value (front), and --overwrite is false" in refused.err
    assert (await kubectl("label", "pod", "web", "tier=back", "--overwrite")).out == "pod/web labeled\n"
    assert (await kubectl("annotate", "pod", "web", "note=hello")).out == "pod/web annotated\n"
    _, live = await http.get(f"{PODS}/web")
    assert live["metadata"]["labels"] == {"app": "web", "tier": "back"}
    assert live["metadata"]["annotations"] == {"note": "hello"}
    assert ("kubectl-label", "Update") in managers(live) and ("kubectl-annotate", "Update") in managers(live)

    assert (await kubectl("label", "pod", "web", "tier-")).out == "pod/web unlabeled\n"
    assert (await kubectl("annotate", "pod", "web", "note-")).out == "pod/web annotated\n"
    _, live = await http.get(f"{PODS}/web")
    assert live["metadata"]["labels"] == {"app": "web"} and not live["metadata"].get("annotations")
    assert ("kubectl-label", "Update") not in managers(live)  # it owned only the removed label


async def test_replace_writes_the_whole_object_and_refuses_a_stale_one(http, kubectl) -> None:
    await kubectl("create", "-f", kubectl.manifest("pod.yaml", pod()))
    live = yaml.safe_load((await kubectl("get", "pod", "web", "-o", "yaml")).out)
    live["spec"]["containers"][0]["image"] = "nginx:2"
    path = kubectl.manifest("live.yaml", live)
    assert (await kubectl("replace", "-f", path)).out == "pod/web replaced\n"
    _, stored = await http.get(f"{PODS}/web")
    assert stored["spec"]["containers"][0]["image"] == "nginx:2"
    assert ("kubectl-replace", "Update") in managers(stored)

    stale = await kubectl("replace", "-f", path, ok=False)  # still carries the first resourceVersion
    assert stale.code == 1
    assert 'Operation cannot be fulfilled on pods "web": the object has been modified' in stale.err


# -- delete --------------------------------------------------------------------------------------------------
async def test_delete_waits_until_the_object_is_gone(http, kubectl) -> None:
    await kubectl("create", "-f", kubectl.manifest("pod.yaml", pod()))
    await kubectl("apply", "-f", kubectl.manifest("deploy.yaml", deployment()))
    assert (await kubectl("delete", "pod", "web")).out == 'pod "web" deleted\n'
    assert (await kubectl("delete", "deployment", "d", "--cascade=background")).out == \
        'deployment.apps "d" deleted\n'
    assert (await http.get(f"{PODS}/web"))[0] == 404 and (await http.get(f"{DEPLOYMENTS}/d"))[0] == 404
    missing = await kubectl("delete", "pod", "web", ok=False)
    assert missing.code == 1 and missing.err.strip() == 'Error from server (NotFound): pods "web" not found'


@pytest.mark.parametrize(("cascade", "finalizer"), [("foreground", "foregroundDeletion"), ("orphan", "orphan")])
async def test_foreground_and_orphan_deletes_wait_for_the_garbage_collectors_finalizer(
        http, kubectl, running, cascade: str, finalizer: str) -> None:
    """Foreground and orphan deletion only mark the object: the server adds the garbage collector's finalizer,
    and kubectl (waiting by default) returns when the collector has done its work and removed it. There is no
    garbage collector yet, so the test plays its part."""
    await kubectl("apply", "-f", kubectl.manifest("deploy.yaml", deployment()))
    delete = await kubectl.start("delete", "deployment", "d", f"--cascade={cascade}")
    running.append(delete)

    async def marked() -> dict[str, Any] | None:
        _, obj = await http.get(f"{DEPLOYMENTS}/d")
        return obj if obj["metadata"].get("deletionTimestamp") else None

    obj = await until(marked)
    assert obj["metadata"]["finalizers"] == [finalizer]
    await asyncio.sleep(0.5)
    assert delete.returncode is None  # kubectl is still waiting for the object to go

    status, _ = await http.patch(f"{DEPLOYMENTS}/d", {"metadata": {"finalizers": None}})  # the collector's step
    assert status == 200
    result = await finish(delete)
    assert (result.code, result.out) == (0, 'deployment.apps "d" deleted\n')
    assert (await http.get(f"{DEPLOYMENTS}/d"))[0] == 404


async def test_delete_without_waiting_leaves_the_marked_object(http, kubectl) -> None:
    await kubectl("apply", "-f", kubectl.manifest("deploy.yaml", deployment()))
    result = await kubectl("delete", "deployment", "d", "--cascade=foreground", "--wait=false")
    assert result.out == 'deployment.apps "d" deleted\n'
    _, obj = await http.get(f"{DEPLOYMENTS}/d")
    assert obj["metadata"]["finalizers"] == ["foregroundDeletion"] and obj["metadata"]["deletionTimestamp"]
    # the answer kubectl got: 200 with the marked object (202 is only for the old orphanDependents=false on an
    # object that is not gone at once)
    await http.post(DEPLOYMENTS, deployment("e"))
    status, body = await http.delete(f"{DEPLOYMENTS}/e", {"propagationPolicy": "Foreground"})
    assert status == 200 and body["metadata"]["finalizers"] == ["foregroundDeletion"]
    # orphanDependents=false is Background, as in Kubernetes: no finalizer, so the object goes at once
    await http.post(DEPLOYMENTS, deployment("f"))
    status, body = await http.delete(f"{DEPLOYMENTS}/f", {"orphanDependents": False})
    assert (status, body["kind"], body["status"]) == (200, "Status", "Success")
    held = deployment("g")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await http.post(DEPLOYMENTS, held)
    status, body = await http.delete(f"{DEPLOYMENTS}/g", {"orphanDependents": False})
    assert status == 202 and body["metadata"]["finalizers"] == ["example.com/hold"]


# -- wait and watch ------------------------------------------------------------------------------------------
async def test_wait_for_a_condition_and_for_deletion(http, kubectl, running) -> None:
    await kubectl("create", "-f", kubectl.manifest("pod.yaml", pod()))
    waiting = await kubectl.start("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
    running.append(waiting)
    await asyncio.sleep(0.5)
    assert waiting.returncode is None
    status, _ = await http.call("PATCH", f"{PODS}/web/status", {"status": {"conditions": [
        {"type": "Ready", "status": "True"}]}}, content_type="application/merge-patch+json")
    assert status == 200
    assert await finish(waiting) == Result(0, "pod/web condition met\n", "")

    gone = await kubectl.start("wait", "--for=delete", "pod/web", "--timeout=30s")
    running.append(gone)
    await asyncio.sleep(0.5)
    assert gone.returncode is None
    await http.delete(f"{PODS}/web")
    assert await finish(gone) == Result(0, "pod/web condition met\n", "")

    timed_out = await kubectl("wait", "--for=condition=Ready", "pod/nope", "--timeout=1s", ok=False)
    assert timed_out.code == 1 and 'pods "nope" not found' in timed_out.err


async def test_get_watch_prints_each_change(http, kubectl, running) -> None:
    await kubectl("create", "-f", kubectl.manifest("pod.yaml", pod()))
    watch = await kubectl.start("get", "pods", "--watch")
    running.append(watch)
    assert watch.stdout is not None

    async def line() -> list[str]:
        return (await asyncio.wait_for(watch.stdout.readline(), timeout=20)).decode().split()

    assert (await line())[:3] == ["NAME", "READY", "STATUS"]
    assert (await line())[:3] == ["web", "0/1", "Pending"]
    await http.post(PODS, pod("db"))
    assert (await line())[:3] == ["db", "0/1", "Pending"]
    await http.call("PATCH", f"{PODS}/db/status", {"status": {"phase": "Running"}},
                    content_type="application/merge-patch+json")
    assert (await line())[:3] == ["db", "0/1", "Running"]
    await http.delete(f"{PODS}/db")
    assert (await line())[0] == "db"  # the deletion prints the last state once more
    watch.terminate()
    await watch.communicate()


# -- the Python client sees what kubectl wrote, and the other way round ---------------------------------------
def _python_client_side(kubeconfig: Path) -> dict[str, Any]:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    api = k8s_config.new_client_from_config(str(kubeconfig))  # the one kubectl uses
    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    seen: dict[str, Any] = {}
    deploy = apps.read_namespaced_deployment("d", "default")
    seen["deployment"] = (deploy.spec.template.spec.containers[0].image,
                          [(m.manager, m.operation) for m in deploy.metadata.managed_fields])
    seen["pods"] = sorted(p.metadata.name for p in core.list_namespaced_pod("default").items)
    core.create_namespaced_config_map("default", k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(name="from-python"), data={"k": "v"}), field_manager="python-test")
    core.patch_namespaced_pod("web", "default", {"metadata": {"labels": {"by": "python"}}})
    return seen


async def test_kubectl_and_the_python_client_see_the_same_objects(http, kubectl) -> None:
    await kubectl("apply", "--server-side", "-f", kubectl.manifest("deploy.yaml", deployment(image="nginx:7")))
    await kubectl("create", "-f", kubectl.manifest("pod.yaml", pod()))
    seen = await asyncio.to_thread(_python_client_side, kubectl.config)
    assert seen == {"deployment": ("nginx:7", [("kubectl", "Apply")]), "pods": ["web"]}

    config_map = orjson.loads((await kubectl("get", "configmap", "from-python", "-o", "json",
                                             "--show-managed-fields")).out)
    assert config_map["data"] == {"k": "v"} and managers(config_map) == [("python-test", "Update")]
    labels = (await kubectl("get", "pod", "web", "-o", "jsonpath={.metadata.labels}")).out
    assert orjson.loads(labels) == {"app": "web", "by": "python"}
    hidden = orjson.loads((await kubectl("get", "pod", "web", "-o", "json")).out)
    assert "managedFields" not in hidden["metadata"]  # kubectl hides them unless asked
    # the Python client's User-Agent names its manager when it names none
    _, stored = await http.get(f"{PODS}/web")
    assert ("OpenAPI-Generator", "Update") in managers(stored)


async def test_apply_of_a_secret_with_its_certificate_wrapped_over_lines_stores_it_on_one_line(kubectl, http) -> None:
    cert = bytes(range(256)) * 2
    lines = "".join(f"    {line}\n" for line in base64.encodebytes(cert).decode().splitlines())
    path = kubectl.home / "secret.yaml"
    path.write_text(f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: pasted\ndata:\n  ca.crt: |\n{lines}")
    for args in (("apply", "-f", str(path)), ("apply", "--server-side", "-f", str(path))):
        await kubectl(*args)
        status, secret = await http.get("/api/v1/namespaces/default/secrets/pasted")
        assert status == 200, secret
        stored = secret["data"]["ca.crt"]
        assert stored == base64.b64encode(cert).decode(), args
    printed = await kubectl("get", "secret", "pasted", "-o", "jsonpath={.data.ca\\.crt}")
    assert base64.b64decode(printed.out, validate=True) == cert
