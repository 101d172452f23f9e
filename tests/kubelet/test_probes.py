"""Probes and the preStop hook on real Docker: liveness restarts, readiness gates Ready, a startup probe holds
the others back, and deletion runs preStop before SIGTERM."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from minik.client import Client
from tests.kubelet.docker_helpers import NODE, DockerNode, busybox
from tests.kubelet.helpers import condition, container_state, phase, pod_manifest, wait_for_pod, wait_gone


async def events_of(client: Client, pod: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the pod's events, oldest first."""
    items = (await client.list("events", "default", field_selector=f"involvedObject.name={pod}"))["items"]
    items.sort(key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"]))
    return [(e["type"], e["reason"], e["message"]) for e in items]


async def wait_for_event(client: Client, pod: str, wanted: Callable[[tuple[str, str, str]], bool],
                         timeout: float = 20.0) -> list[tuple[str, str, str]]:
    """The pod's events once one of them is ``wanted`` (all of them after ``timeout``, for the assertion)."""
    deadline = time.monotonic() + timeout
    while True:
        events = await events_of(client, pod)
        if any(wanted(e) for e in events) or time.monotonic() > deadline:
            return events
        await asyncio.sleep(0.2)


async def test_a_failing_liveness_probe_restarts_the_container_with_unhealthy_and_killing_events(
        node: DockerNode) -> None:
    client = node.client
    app = busybox("app", "touch /tmp/healthy; sleep 1; rm /tmp/healthy; exec sleep 3600",
                  livenessProbe={"exec": {"command": ["cat", "/tmp/healthy"]}, "periodSeconds": 1,
                                 "failureThreshold": 2})
    await client.create("pods", pod_manifest("sick", node=NODE, containers=[app], terminationGracePeriodSeconds=1))
    pod = await wait_for_pod(client, "sick", lambda p: container_state(p).get("restartCount") == 1 and
                             "running" in container_state(p)["state"], 40)
    assert container_state(pod)["lastState"]["terminated"]["exitCode"] in (137, 143)
    events = await wait_for_event(client, "sick", lambda e: e[1] == "Killing")
    assert ("Warning", "Unhealthy", "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or "
                                    "directory") in events
    assert ("Normal", "Killing", "Container app failed liveness probe, will be restarted") in events
    assert ("Normal", "Started", "Started container app") in events


async def test_readiness_gates_the_ready_condition_until_the_http_probe_answers(node: DockerNode) -> None:
    client = node.client
    app = busybox("web", "mkdir /www; httpd -p 8080 -h /www; sleep 2; echo ok > /www/ready; exec sleep 3600",
                  ports=[{"name": "http", "containerPort": 8080}],
                  readinessProbe={"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 1})
    await client.create("pods", pod_manifest("gated", node=NODE, containers=[app]))
    pod = await wait_for_pod(client, "gated", lambda p: phase(p) == "Running", 30)
    assert condition(pod, "Ready") == "False" and container_state(pod, "web")["ready"] is False
    pod = await wait_for_pod(client, "gated", lambda p: condition(p, "Ready") == "True", 30)
    assert container_state(pod, "web")["ready"] is True and container_state(pod, "web")["restartCount"] == 0
    events = await events_of(client, "gated")
    assert any(e[1] == "Unhealthy" and e[2].startswith("Readiness probe failed: HTTP probe failed with statuscode: "
                                                       "404") for e in events), events


async def test_a_startup_probe_holds_started_and_ready_until_it_passes(node: DockerNode) -> None:
    client = node.client
    app = busybox("app", "sleep 2; touch /tmp/started; exec sleep 3600",
                  startupProbe={"exec": {"command": ["test", "-e", "/tmp/started"]}, "periodSeconds": 1,
                                "failureThreshold": 30},
                  readinessProbe={"tcpSocket": {"port": 9}, "periodSeconds": 1})
    await client.create("pods", pod_manifest("slow", node=NODE, containers=[app]))
    pod = await wait_for_pod(client, "slow", lambda p: phase(p) == "Running", 30)
    assert container_state(pod)["started"] is False and container_state(pod)["ready"] is False
    pod = await wait_for_pod(client, "slow", lambda p: container_state(p).get("started") is True, 30)
    events = await wait_for_event(client, "slow", lambda e: e[2].startswith("Readiness probe failed"))
    # started, but the readiness probe (no one listens on port 9) keeps it out of Ready
    assert container_state(pod)["ready"] is False and condition(pod, "Ready") == "False"
    readiness = [e[2] for e in events if e[2].startswith("Readiness probe failed")]
    assert readiness and readiness[0].startswith("Readiness probe failed: dial tcp ")
    assert readiness[0].endswith(":9: connect: connection refused")


async def test_deletion_runs_the_pre_stop_hook_before_sigterm(node: DockerNode, tmp_path: Path) -> None:
    client = node.client
    out = tmp_path / "out"
    out.mkdir(mode=0o777)
    script = "trap 'echo term >> /out/log; exit 0' TERM; while true; do sleep 0.1; done"
    app = busybox("app", script, volumeMounts=[{"name": "out", "mountPath": "/out"}],
                  lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "echo prestop >> /out/log"]}}})
    await client.create("pods", pod_manifest("hooked", node=NODE, containers=[app], terminationGracePeriodSeconds=20,
                                             volumes=[{"name": "out", "hostPath": {"path": str(out)}}]))
    await wait_for_pod(client, "hooked", lambda p: phase(p) == "Running", 30)
    began = time.monotonic()
    await client.delete("pods", "hooked", "default")
    await wait_gone(client, "pods", "hooked", timeout=20)
    assert time.monotonic() - began < 15
    assert (out / "log").read_text() == "prestop\nterm\n"
    events = await events_of(client, "hooked")
    assert ("Normal", "Killing", "Stopping container app") in events
