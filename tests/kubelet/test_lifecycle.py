"""A pod's life cycle on real Docker: postStart hooks, the grace period's SIGKILL, native sidecars started
before and stopped after the app containers, termination messages, and a pod being deleted reporting its
containers terminated and Ready False before it goes."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from minik.client import Client
from tests.kubelet.docker_helpers import NODE, DockerNode, busybox
from tests.kubelet.helpers import condition, container_state, phase, pod_manifest, wait_for_pod, wait_gone
from tests.kubelet.test_probes import wait_for_event
from tests.kubelet.test_security_context import logs_of

#: a container that appends WORD-start to /out/log, and WORD-stop when SIGTERM ends it
RECORDER = "echo {word}-start >> /out/log; trap 'echo {word}-stop >> /out/log; exit 0' TERM; " \
           "while true; do sleep 0.1; done"


async def updates_until_gone(client: Client, name: str) -> list[dict]:
    """Every state of the pod the watch shows until it is deleted."""
    seen: list[dict] = []
    async with client.watch("pods", "default", field_selector=f"metadata.name={name}") as events:
        async for type_, pod in events:
            if type_ == "DELETED":
                return seen
            seen.append(pod)
    return seen


def hostpath_out(tmp_path: Path) -> tuple[Path, list[dict]]:
    out = tmp_path / "out"
    out.mkdir(mode=0o777)
    return out, [{"name": "out", "hostPath": {"path": str(out)}}]


async def test_post_start_runs_before_the_next_container_and_a_failing_one_kills_its_container(
        node: DockerNode) -> None:
    client = node.client
    shared = [{"name": "shared", "mountPath": "/shared"}]
    hooked = busybox("hooked", "exec sleep 600", volumeMounts=shared, lifecycle={
        "postStart": {"exec": {"command": ["sh", "-c", "sleep 1; echo hooked > /shared/hook"]}}})
    # the next container starts only once the hook has run: it finds the file the hook wrote
    reader = busybox("reader", "cat /shared/hook; exec sleep 600", volumeMounts=shared)
    failing = busybox("failing", "exec sleep 600", lifecycle={"postStart": {"exec": {"command": ["false"]}}})
    await client.create("pods", pod_manifest("hooks", node=NODE, containers=[hooked, reader, failing],
                                             terminationGracePeriodSeconds=1,
                                             volumes=[{"name": "shared", "emptyDir": {}}]))
    pod = await wait_for_pod(client, "hooks", lambda p: container_state(p, "failing").get("restartCount", 0) >= 1, 40)
    assert container_state(pod, "hooked")["restartCount"] == 0
    assert container_state(pod, "reader")["restartCount"] == 0
    assert (await logs_of(client, "hooks", "reader")) == "hooked\n"
    events = await wait_for_event(client, "hooks", lambda e: e[1] == "FailedPostStartHook")
    assert ("Warning", "FailedPostStartHook", "PostStartHook failed") in events
    assert ("Normal", "Killing", "FailedPostStartHook") in events


async def test_a_deleted_pod_reports_its_containers_terminated_and_ready_false_after_the_grace_period_kill(
        node: DockerNode) -> None:
    client = node.client
    stubborn = busybox("stubborn", "trap '' TERM; while true; do sleep 0.1; done")  # SIGTERM does nothing
    polite = busybox("polite", "trap 'exit 0' TERM; while true; do sleep 0.1; done")
    await client.create("pods", pod_manifest("leaving", node=NODE, containers=[stubborn, polite],
                                             terminationGracePeriodSeconds=2))
    await wait_for_pod(client, "leaving", lambda p: condition(p, "Ready") == "True", 30)
    watch = asyncio.create_task(updates_until_gone(client, "leaving"))
    await asyncio.sleep(0)
    began = time.monotonic()
    await client.delete("pods", "leaving", "default")
    await wait_gone(client, "pods", "leaving", timeout=20)
    took = time.monotonic() - began
    seen = await asyncio.wait_for(watch, 5)
    assert 2 <= took < 8  # SIGKILL came at the end of the grace period, not 30 s later
    last = seen[-1]
    assert condition(last, "Ready") == "False" and condition(last, "ContainersReady") == "False"
    assert container_state(last, "stubborn")["state"]["terminated"]["exitCode"] == 137
    assert container_state(last, "polite")["state"]["terminated"]["exitCode"] == 0
    assert phase(last) == "Failed"  # one container was killed
    assert last["metadata"].get("deletionTimestamp")


async def test_sidecars_start_before_and_stop_after_the_app_and_count_in_readiness(
        node: DockerNode, tmp_path: Path) -> None:
    client = node.client
    out, volumes = hostpath_out(tmp_path)
    mounts = [{"name": "out", "mountPath": "/out"}]
    sidecar = busybox("sidecar", "(sleep 1; touch /tmp/ready) & " + RECORDER.format(word="sidecar"),
                      restartPolicy="Always", volumeMounts=mounts,
                      readinessProbe={"exec": {"command": ["test", "-e", "/tmp/ready"]}, "periodSeconds": 1},
                      # the app waits until the sidecar has started: its startup probe sees what it wrote
                      startupProbe={"exec": {"command": ["test", "-s", "/out/log"]}, "periodSeconds": 1})
    app = busybox("app", RECORDER.format(word="app"), volumeMounts=mounts)
    await client.create("pods", pod_manifest("sided", node=NODE, initContainers=[sidecar], containers=[app],
                                             terminationGracePeriodSeconds=10, volumes=volumes))
    pod = await wait_for_pod(client, "sided", lambda p: container_state(p, "app").get("state", {}).get("running"), 30)
    sidecar_status = pod["status"]["initContainerStatuses"][0]
    assert "running" in sidecar_status["state"] and condition(pod, "Initialized") == "True"
    if not sidecar_status["ready"]:  # the app is up, but the pod waits for its sidecar's readiness
        assert condition(pod, "Ready") == "False"
    pod = await wait_for_pod(client, "sided", lambda p: condition(p, "Ready") == "True", 30)
    assert pod["status"]["initContainerStatuses"][0]["ready"] is True
    await client.delete("pods", "sided", "default")
    await wait_gone(client, "pods", "sided", timeout=20)
    assert (out / "log").read_text().split() == ["sidecar-start", "app-start", "app-stop", "sidecar-stop"]


async def test_a_pod_that_runs_to_completion_completes_with_its_sidecar_stopped(node: DockerNode) -> None:
    client = node.client
    sidecar = busybox("sidecar", "trap 'exit 0' TERM; while true; do sleep 0.1; done", restartPolicy="Always")
    await client.create("pods", pod_manifest("batch", node=NODE, restart_policy="Never", initContainers=[sidecar],
                                             containers=[busybox("app", "sleep 1")]))
    pod = await wait_for_pod(client, "batch", lambda p: phase(p) == "Succeeded" and "terminated" in
                             p["status"]["initContainerStatuses"][0]["state"], 30)
    assert container_state(pod, "app")["state"]["terminated"]["exitCode"] == 0
    assert container_state(pod, "app")["restartCount"] == 0
    # stopped with SIGTERM, as at deletion, not killed
    assert pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0


async def test_termination_messages_come_from_the_file_or_the_log_on_failure(node: DockerNode) -> None:
    client = node.client
    written = busybox("written", "echo -n all done > /dev/termination-log")
    elsewhere = busybox("elsewhere", "echo -n moved > /tmp/message; exit 2", terminationMessagePath="/tmp/message")
    logged = busybox("logged", "echo first; echo it broke; exit 3", terminationMessagePolicy="FallbackToLogsOnError")
    await client.create("pods", pod_manifest("ended", node=NODE, restart_policy="Never",
                                             containers=[written, elsewhere, logged]))
    pod = await wait_for_pod(client, "ended", lambda p: phase(p) == "Failed", 30)

    def message(name: str) -> str | None:
        return container_state(pod, name)["state"]["terminated"].get("message")

    assert message("written") == "all done"
    assert message("elsewhere") == "moved"
    assert message("logged") == "first\nit broke\n"
