"""`kubectl attach`, `kubectl run -it --rm` and `kubectl debug --target` with real kubectl 1.32 on real Docker, and
the official Python client's exec with stdin sent as text frames."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.stream import stream

from tests.access import admin_kubeconfig
from tests.e2e.kubectl_helpers import Kubectl, finish
from tests.kubelet.docker_helpers import NODE, ROOT_CA_ONLY, DockerNode, busybox, docker_cluster
from tests.kubelet.helpers import phase, pod_manifest, wait_for_pod, wait_gone
from tests.kubelet.terminal import Terminal


@pytest.fixture
def kubectl(node: DockerNode, tmp_path: Path) -> Kubectl:
    return Kubectl(node.cluster, tmp_path / "kubectl")


def _str_stdin_session(config: Path, pod: str, attach: bool) -> str:
    """What the process answers to a str written with the official client's ``write_stdin`` (a text frame): a
    command started by exec, or the container's own process through attach."""
    api = k8s.CoreV1Api(k8s_config.new_client_from_config(str(config)))
    if attach:
        session = stream(api.connect_get_namespaced_pod_attach, pod, "default", stdin=True, stdout=True,
                         stderr=True, tty=False, _preload_content=False)
    else:
        session = stream(api.connect_get_namespaced_pod_exec, pod, "default",
                         command=["sh", "-c", "head -n 1 | tr a-z A-Z"], stdin=True, stdout=True, stderr=True,
                         tty=False, _preload_content=False)
    try:
        session.write_stdin("sent as text\n")
        out = ""
        deadline = time.monotonic() + 15
        while session.is_open() and "\n" not in out and time.monotonic() < deadline:
            session.update(timeout=1)
            out += session.read_stdout(timeout=0) or ""
        return out
    finally:
        session.close()


async def test_python_client_exec_and_attach_deliver_a_str_written_to_stdin(node: DockerNode, tmp_path: Path) -> None:
    await node.client.create("pods", pod_manifest("texter", node=NODE, containers=[
        busybox("app", "head -n 1 | tr a-z A-Z; exec sleep 3600", stdin=True)]))
    await wait_for_pod(node.client, "texter", lambda p: phase(p) == "Running", 30)
    config = admin_kubeconfig(node.cluster, tmp_path / "kubeconfig")
    assert await asyncio.to_thread(_str_stdin_session, config, "texter", False) == "SENT AS TEXT\n"
    assert await asyncio.to_thread(_str_stdin_session, config, "texter", True) == "SENT AS TEXT\n"


async def test_kubectl_attach_relays_stdin_to_the_main_process_and_its_output_back(node: DockerNode,
                                                                                  kubectl: Kubectl) -> None:
    script = "while read line; do echo got $line; done; echo stdin ended"
    await node.client.create("pods", pod_manifest("reader", node=NODE, restart_policy="Never", containers=[
        busybox("app", script, stdin=True, stdinOnce=True)]))
    await wait_for_pod(node.client, "reader", lambda p: phase(p) == "Running", 30)
    result = await finish(await kubectl.start("attach", "-i", "reader", stdin=True), 30, "one\ntwo\n")
    assert result.code == 0, result.err
    assert result.out == "got one\ngot two\nstdin ended\n"
    # stdinOnce: the attached client's end of input was the process's end of input
    await wait_for_pod(node.client, "reader", lambda p: phase(p) == "Succeeded", 30)


async def test_kubectl_attach_with_a_terminal_drives_the_containers_shell(node: DockerNode, kubectl: Kubectl) -> None:
    await node.client.create("pods", pod_manifest("shell", node=NODE, restart_policy="Never", containers=[
        {**busybox("app", ""), "command": ["sh"], "stdin": True, "tty": True}]))
    await wait_for_pod(node.client, "shell", lambda p: phase(p) == "Running", 30)
    terminal = await Terminal.start(kubectl, "attach", "-it", "shell")
    try:
        await terminal.expect("If you don't see a command prompt, try pressing enter.")
        terminal.send("echo answer=$((6*7)) size=$(stty size)\n")
        await terminal.expect("answer=42 size=30 100")
        terminal.send("exit 5\n")
        assert await terminal.wait() == 0  # attach reports the session, not the process's exit code
    finally:
        terminal.close()
    pod = await wait_for_pod(node.client, "shell", lambda p: phase(p) == "Failed", 30)
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 5


async def test_attach_to_a_pod_that_has_finished_is_refused(node: DockerNode, kubectl: Kubectl) -> None:
    await node.client.create("pods", pod_manifest("done", node=NODE, restart_policy="Never",
                                                  containers=[busybox("app", "true")]))
    await wait_for_pod(node.client, "done", lambda p: phase(p) == "Succeeded", 30)
    result = await kubectl("attach", "done", ok=False)
    assert result.code == 1 and "cannot attach a container in a completed pod; current phase is Succeeded" in \
        result.err


async def test_kubectl_debug_target_starts_a_shell_that_sees_the_targets_processes(node: DockerNode,
                                                                                   kubectl: Kubectl) -> None:
    await node.client.create("pods", pod_manifest("patient", node=NODE, containers=[
        busybox("app", "exec sleep 3600"), busybox("side", "exec sleep 7200")]))
    await wait_for_pod(node.client, "patient", lambda p: phase(p) == "Running", 30)
    terminal = await Terminal.start(kubectl, "debug", "-it", "patient", "--image=busybox:1.36", "--target=app",
                                    "--container=debugger")
    try:
        await terminal.expect("If you don't see a command prompt, try pressing enter.")
        terminal.send("ps -o args; echo listed\n")
        shown = await terminal.expect("listed\r\n", since=await terminal.expect("sleep 3600"))
        terminal.send("exit\n")
        await terminal.wait()
    finally:
        terminal.close()
    assert "sleep 7200" not in terminal.output[:shown]  # the target's namespace, not the pod's whole
    pod = await wait_for_pod(node.client, "patient", lambda p: "terminated" in (
        (p["status"].get("ephemeralContainerStatuses") or [{}])[0].get("state") or {}), 30)
    spec = pod["spec"]["ephemeralContainers"][0]
    assert (spec["name"], spec["targetContainerName"], spec["image"]) == ("debugger", "app", "busybox:1.36")
    assert pod["status"]["phase"] == "Running"  # the pod goes on without its debugger


async def test_an_ephemeral_container_starts_in_a_pod_stuck_in_its_init_containers(node: DockerNode) -> None:
    await node.client.create("pods", pod_manifest("stuck", node=NODE, initContainers=[
        busybox("setup", "exec sleep 3600")], containers=[busybox("app", "exec sleep 3600")]))
    await wait_for_pod(node.client, "stuck", lambda p: "running" in (
        (p["status"].get("initContainerStatuses") or [{}])[0].get("state") or {}), 30)
    debugger = {**busybox("debugger", "echo looking; exec sleep 3600"), "targetContainerName": "setup"}
    await node.client.patch("pods", "stuck", {"spec": {"ephemeralContainers": [debugger]}}, "default",
                            subresource="ephemeralcontainers")
    pod = await wait_for_pod(node.client, "stuck", lambda p: "running" in (
        (p["status"].get("ephemeralContainerStatuses") or [{}])[0].get("state") or {}), 30)
    assert pod["status"]["phase"] == "Pending"
    status = pod["status"]["ephemeralContainerStatuses"][0]
    assert (status["name"], status["ready"], status["restartCount"]) == ("debugger", False, 0)


@pytest.fixture
async def scheduled(tmp_path: Path) -> AsyncIterator[DockerNode]:
    """A Docker node with the scheduler: `kubectl run` makes pods without a node."""
    async with docker_cluster(tmp_path / "c", disabled=frozenset({"proxy"}), controllers=ROOT_CA_ONLY) as node:
        yield node


async def _run_shell(kubectl: Kubectl, name: str, last_line: str, *flags: str) -> tuple[int, str]:
    """`kubectl run -it --rm NAME --image=busybox:1.36 [FLAGS] -- sh`, typed into: kubectl's exit code and output."""
    terminal = await Terminal.start(kubectl, "run", "-it", "--rm", name, "--image=busybox:1.36", *flags, "--", "sh")
    try:
        await terminal.expect("If you don't see a command prompt, try pressing enter.", 60)
        terminal.send("echo made=$((40+2)) in $(hostname)\n")
        await terminal.expect(f"made=42 in {name}")
        terminal.send(last_line)
        return await terminal.wait(60), terminal.output
    finally:
        terminal.close()


async def test_kubectl_run_it_rm_runs_a_shell_and_deletes_its_pod(scheduled: DockerNode, tmp_path: Path) -> None:
    kubectl = Kubectl(scheduled.cluster, tmp_path / "kubectl")
    code, output = await _run_shell(kubectl, "scratch", "exit\n")
    assert code == 0 and 'pod "scratch" deleted' in output
    # restartPolicy Always restarted the shell, which (as PID 1) ignores SIGTERM: its pod goes after the grace period
    pod = await scheduled.client.get("pods", "scratch", "default")
    assert pod["metadata"]["deletionTimestamp"] and pod["spec"]["restartPolicy"] == "Always"
    # restartPolicy Never: kubectl waits for the pod to finish and exits with the container's code
    code, output = await _run_shell(kubectl, "once", "exit 3\n", "--restart=Never")
    assert code == 3 and 'pod "once" deleted' in output
    await wait_gone(scheduled.client, "pods", "once", timeout=30)
