"""The kubelet on real Docker: pods as a pause container plus app containers, as Kubernetes runs them.

These need a Docker engine and the local images (scripts/build_images.py; scripts/test provides both). Without
an engine they fail: they are never skipped.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from minik.kubelet.component import NodeComponent
from tests.kubelet.docker_helpers import NODE, DockerNode, busybox, docker_cluster, fetch_eventually
from tests.kubelet.helpers import condition, container_state, phase, pod_manifest, wait_for_pod, wait_gone


async def test_httpd_pod_answers_on_its_ip_with_env_and_config_map_and_containers_share_localhost(
        node: DockerNode) -> None:
    client = node.client
    await client.create("configmaps", {"metadata": {"name": "site", "namespace": "default"},
                                       "data": {"index.html": "hello from a configMap\n", "greeting": "bonjour"}})
    await client.create("secrets", {"metadata": {"name": "creds", "namespace": "default"},
                                    "stringData": {"password": "s3cret"}})
    web = busybox("web", "cp /config/index.html /www/ && echo \"$GREETING $PASSWORD $POD_NAME $MY_NODE\" > "
                         "/www/env.txt && exec httpd -f -p 8080 -h /www",
                  env=[{"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "site", "key": "greeting"}}},
                       {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                       {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                       {"name": "MY_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                  ports=[{"containerPort": 8080}],
                  volumeMounts=[{"name": "www", "mountPath": "/www"}, {"name": "config", "mountPath": "/config"}])
    side = busybox("side", "until wget -q -O /www/via-localhost.txt http://localhost:8080/index.html; "
                           "do sleep 0.1; done; exec sleep 3600",
                   volumeMounts=[{"name": "www", "mountPath": "/www"}])
    await client.create("pods", pod_manifest("web", node=NODE, containers=[web, side], volumes=[
        {"name": "www", "emptyDir": {}}, {"name": "config", "configMap": {"name": "site"}}]))
    pod = await wait_for_pod(client, "web", lambda p: phase(p) == "Running" and condition(p, "Ready") == "True", 30)
    ip = pod["status"]["podIP"]
    assert ip and ip != pod["status"]["hostIP"]
    assert await fetch_eventually(f"http://{ip}:8080/index.html") == "hello from a configMap\n"
    assert await fetch_eventually(f"http://{ip}:8080/env.txt") == f"bonjour s3cret web {NODE}\n"
    assert await fetch_eventually(f"http://{ip}:8080/via-localhost.txt") == "hello from a configMap\n"
    assert [s["restartCount"] for s in pod["status"]["containerStatuses"]] == [0, 0]
    web_status = container_state(pod, "web")
    assert web_status["containerID"].startswith("docker://") and web_status["imageID"]
    containers = await node.containers(pod["metadata"]["uid"])
    assert sorted(c["Labels"]["io.kubernetes.container.name"] for c in containers) == ["POD", "side", "web"]


async def test_a_container_killed_from_outside_is_restarted_with_restart_count_one(node: DockerNode) -> None:
    client = node.client
    await client.create("pods", pod_manifest("victim", node=NODE, containers=[busybox("app", "exec sleep 3600")]))
    pod = await wait_for_pod(client, "victim", lambda p: phase(p) == "Running", 30)
    container_id = container_state(pod)["containerID"].removeprefix("docker://")
    await node.docker.containers.container(container_id).kill()
    pod = await wait_for_pod(client, "victim", lambda p: container_state(p).get("restartCount") == 1 and
                             "running" in container_state(p)["state"], 20)
    status = container_state(pod)
    assert status["lastState"]["terminated"]["exitCode"] == 137
    assert status["containerID"] != f"docker://{container_id}"


async def test_a_crashing_container_shows_crash_loop_back_off(node: DockerNode) -> None:
    client = node.client
    await client.create("pods", pod_manifest("crasher", node=NODE, containers=[busybox("app", "echo bye; exit 2")]))
    pod = await wait_for_pod(client, "crasher", lambda p: container_state(p).get("state", {}).get("waiting", {})
                             .get("reason") == "CrashLoopBackOff", 30)
    status = container_state(pod)
    assert status["lastState"]["terminated"]["exitCode"] == 2
    assert status["lastState"]["terminated"]["reason"] == "Error"
    assert status["restartCount"] >= 1


async def test_a_missing_image_shows_err_image_pull_then_image_pull_back_off(node: DockerNode) -> None:
    client = node.client
    await client.create("pods", pod_manifest("noimage", node=NODE, containers=[
        {"name": "app", "image": "minik.invalid/no-such-image:1"}]))
    seen: set[str] = set()

    def reasons(p: dict) -> bool:
        seen.add(container_state(p).get("state", {}).get("waiting", {}).get("reason", ""))
        return "ImagePullBackOff" in seen

    pod = await wait_for_pod(client, "noimage", reasons, 30)
    assert "ErrImagePull" in seen and phase(pod) == "Pending"


async def test_deletion_stops_the_containers_within_the_grace_period_and_removes_the_pod(node: DockerNode) -> None:
    client = node.client
    script = "trap 'echo stopping; exit 0' TERM; while true; do sleep 0.1; done"
    await client.create("pods", pod_manifest("leaver", node=NODE, containers=[busybox("app", script)],
                                             terminationGracePeriodSeconds=20))
    pod = await wait_for_pod(client, "leaver", lambda p: phase(p) == "Running", 30)
    began = time.monotonic()
    await client.delete("pods", "leaver", "default")
    await wait_gone(client, "pods", "leaver", timeout=20)
    assert time.monotonic() - began < 10  # SIGTERM ended it at once: no waiting out the 20 s
    assert await node.containers(pod["metadata"]["uid"]) == []


async def test_a_restarted_kubelet_adopts_its_containers_without_duplicates(node: DockerNode) -> None:
    client = node.client
    await client.create("pods", pod_manifest("steady", node=NODE, containers=[busybox("app", "exec sleep 3600")]))
    pod = await wait_for_pod(client, "steady", lambda p: phase(p) == "Running", 30)
    before = sorted(c["Id"] for c in await node.containers(pod["metadata"]["uid"]))
    component = node.component
    await component.stop()
    restarted = NodeComponent(node.cluster.settings, node.cluster.client)  # type: ignore[arg-type]
    node.cluster.components["node"] = restarted
    await restarted.start()
    await asyncio.wait_for(restarted.local_ready.wait(), 20)
    await asyncio.sleep(1.0)  # time to (wrongly) start anything twice
    after = sorted(c["Id"] for c in await node.containers(pod["metadata"]["uid"]))
    assert after == before
    pod = await client.get("pods", "steady", "default")
    assert container_state(pod)["restartCount"] == 0 and "running" in container_state(pod)["state"]


async def test_a_busybox_httpd_deployment_runs_and_answers_on_each_pod_ip(tmp_path: Path) -> None:
    """The scheduler and the controllers with the Docker node: the path `minik apply -f manifests/` takes."""
    script = "mkdir -p /www && echo hello from $(hostname) > /www/index.html && exec httpd -f -p 8080 -h /www"
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [busybox("httpd", script,
                                                                        ports=[{"containerPort": 8080}])]}}}}
    async with docker_cluster(tmp_path / "c", disabled=frozenset()) as node:
        client = node.client
        await client.create("deployments", deployment)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = await client.get("deployments", "web", "default")
            if (found.get("status") or {}).get("availableReplicas") == 2:
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError(f"the deployment did not become available: {found.get('status')}")
        pods = (await client.list("pods", "default", label_selector="app=web"))["items"]
        assert len(pods) == 2 and {p["spec"]["nodeName"] for p in pods} == {NODE}
        for pod in pods:
            name, ip = pod["metadata"]["name"], pod["status"]["podIP"]
            assert await fetch_eventually(f"http://{ip}:8080/") == f"hello from {name}\n"


async def test_a_restarted_kubelet_removes_the_containers_of_pods_deleted_while_it_was_down(node: DockerNode) -> None:
    client = node.client
    await client.create("pods", pod_manifest("goner", node=NODE, containers=[busybox("app", "exec sleep 3600")]))
    pod = await wait_for_pod(client, "goner", lambda p: phase(p) == "Running", 30)
    await node.component.stop()
    await client.delete("pods", "goner", "default", grace_period_seconds=0)  # forced: no kubelet confirms it
    await wait_gone(client, "pods", "goner")
    assert len(await node.containers(pod["metadata"]["uid"])) == 2  # pause + app, orphaned
    restarted = NodeComponent(node.cluster.settings, node.cluster.client)  # type: ignore[arg-type]
    node.cluster.components["node"] = restarted
    await restarted.start()
    deadline = time.monotonic() + 20
    while await node.containers(pod["metadata"]["uid"]) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert await node.containers(pod["metadata"]["uid"]) == []


async def test_a_pod_with_hostname_and_subdomain_sees_its_fully_qualified_name(node: DockerNode) -> None:
    """What a StatefulSet's pod gets: its host name, and ``hostname.subdomain.NS.svc.cluster.local`` in /etc/hosts."""
    client = node.client
    script = "echo $(hostname) $(grep -o 'web-0[^ ]*svc.cluster.local' /etc/hosts); exec sleep 3600"
    await client.create("pods", pod_manifest("web-x", node=NODE, containers=[busybox("app", script)],
                                             hostname="web-0", subdomain="web"))
    await wait_for_pod(client, "web-x", lambda p: phase(p) == "Running", 30)

    async def printed() -> str:
        logs = await client.logs("web-x", "default")
        try:
            return b"".join([chunk async for chunk in logs.chunks]).decode()
        finally:
            await logs.close()
    deadline = time.monotonic() + 10
    while not (text := await printed()) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert text == "web-0 web-0.web.default.svc.cluster.local\n"
