"""Logs and exec through the API server to the kubelet, with real kubectl 1.32 on real Docker: `kubectl logs`
(-f, --tail, -p), `kubectl exec` (exit codes, stdin, a terminal), and the API's answers to requests it cannot
serve."""

from __future__ import annotations

import asyncio
import fcntl
import os
import struct
import sys
import termios
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.api.errors import StatusError
from minik.client import Client
from minik.cluster import Cluster
from tests.access import admin_kubeconfig
from tests.e2e.kubectl_helpers import Kubectl, finish
from tests.kubelet.docker_helpers import NODE, DockerNode, busybox
from tests.kubelet.helpers import container_state, phase, pod_manifest, wait_for_pod


@pytest.fixture
def kubectl(node: DockerNode, tmp_path: Path) -> Kubectl:
    return Kubectl(node.cluster, tmp_path / "kubectl")


@pytest.fixture
async def talker(node: DockerNode) -> AsyncIterator[str]:
    """A running pod that printed three lines to stdout and one to stderr."""
    script = "for i in 1 2 3; do echo line $i; done; sleep 0.3; echo oops >&2; exec sleep 3600"
    await node.client.create("pods", pod_manifest("talker", node=NODE, containers=[busybox("app", script)]))
    await wait_for_pod(node.client, "talker", lambda p: phase(p) == "Running", 30)
    yield "talker"


async def test_kubectl_logs_shows_the_output_and_its_tail(kubectl: Kubectl, talker: str) -> None:
    deadline = time.monotonic() + 10
    while (result := await kubectl("logs", talker)).out.count("\n") < 4 and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert result.out == "line 1\nline 2\nline 3\noops\n"
    assert (await kubectl("logs", talker, "--tail=2")).out == "line 3\noops\n"
    stamped = (await kubectl("logs", talker, "--timestamps", "--tail=1")).out
    assert stamped.endswith(" oops\n") and stamped[:4].isdigit() and "T" in stamped.split()[0]


async def test_kubectl_logs_follow_streams_until_the_container_ends(node: DockerNode, kubectl: Kubectl) -> None:
    script = "sleep 1; for i in 1 2 3; do echo tick $i; sleep 0.5; done"
    await node.client.create("pods", pod_manifest("ticker", node=NODE, restart_policy="Never",
                                                  containers=[busybox("app", script)]))
    await wait_for_pod(node.client, "ticker", lambda p: phase(p) in ("Running", "Succeeded"), 30)
    following = await kubectl.start("logs", "-f", "ticker")
    result = await finish(following, 30)
    assert result.code == 0, result.err
    assert result.out == "tick 1\ntick 2\ntick 3\n"


async def test_kubectl_logs_previous_shows_the_attempt_before_a_restart(node: DockerNode, kubectl: Kubectl) -> None:
    await node.client.create("pods", pod_manifest("again", node=NODE, containers=[
        busybox("app", "echo attempt $(ls /tmp | wc -l); touch /tmp/x; exit 1")]))
    await wait_for_pod(node.client, "again", lambda p: container_state(p).get("restartCount", 0) >= 1, 30)
    assert (await kubectl("logs", "again", "-p")).out == "attempt 0\n"
    missing = await kubectl("logs", "talker-does-not-exist", ok=False)
    assert missing.code == 1 and 'pods "talker-does-not-exist" not found' in missing.err


async def test_kubectl_exec_relays_stdout_stderr_and_the_exit_code(kubectl: Kubectl, talker: str) -> None:
    result = await kubectl("exec", talker, "--", "sh", "-c", "echo hi; echo oops >&2; exit 3", ok=False)
    assert result.code == 3
    assert result.out == "hi\n"
    assert result.err == "oops\ncommand terminated with exit code 3\n"
    result = await kubectl("exec", "-i", talker, "--", "sh", "-c", "tr a-z A-Z", stdin="hello stdin\n")
    assert result.out == "HELLO STDIN\n"


async def test_kubectl_exec_with_a_terminal_runs_an_interactive_shell(kubectl: Kubectl, talker: str) -> None:
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))  # kubectl sends it as a resize
    process = await asyncio.create_subprocess_exec(*kubectl.command("exec", "-it", talker, "--", "sh"),
                                                   env=kubectl.env, stdin=follower, stdout=follower, stderr=follower,
                                                   start_new_session=True)
    os.close(follower)
    try:
        await asyncio.sleep(1.0)
        os.write(leader, b"echo answer=$((6*7)) size=$(stty size)\n")
        await asyncio.sleep(0.5)
        os.write(leader, b"exit 7\n")
        output = await asyncio.to_thread(_read_all, leader, 30)
        code = await asyncio.wait_for(process.wait(), 30)
    finally:
        os.close(leader)
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert "answer=42 size=30 100" in output
    assert code == 7


def _read_all(fd: int, timeout: float) -> str:
    import select

    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the other side of the terminal closed: kubectl exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


# -- what the API answers without asking a kubelet ------------------------------------------------------------
async def _raw(client: Client, path: str, **query: str) -> StatusError:
    with pytest.raises(StatusError) as raised:
        response = await client.transport.request("GET", path, query)
        if response.status >= 400:
            from minik.client import status_error

            raise status_error(response.status, response.body)
    return raised.value


async def test_logs_and_exec_requests_the_api_cannot_serve_get_kubernetes_answers(cluster: Cluster) -> None:
    async with cluster.admin_client() as client:
        two = pod_manifest("two", containers=[{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}])
        await client.create("pods", two)
        base = "/api/v1/namespaces/default/pods"
        error = await _raw(client, f"{base}/two/log")
        assert error.code == 400 and error.message == ("a container name must be specified for pod two, choose one "
                                                       "of: [a b]")
        error = await _raw(client, f"{base}/two/log", container="c")
        assert error.code == 400 and error.message == "container c is not valid for pod two"
        error = await _raw(client, f"{base}/two/log", container="a")
        assert error.code == 400 and error.message == "pod two does not have a host assigned"
        error = await _raw(client, f"{base}/two/log", container="a", tailLines="-1")
        assert error.code == 422 and "tailLines" in error.message
        error = await _raw(client, f"{base}/nope/log")
        assert error.code == 404 and error.message == 'pods "nope" not found'
        error = await _raw(client, f"{base}/two/exec", container="a", command="ls")
        assert error.code == 400 and error.message == "pod two does not have a host assigned"


async def _minik(config: Path, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "minik", "--kubeconfig", str(config), *args,
                                                   stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(stdin), 60)
    return process.returncode or 0, out.decode(), err.decode()


async def test_minik_logs_and_exec_work_as_kubectl_does(node: DockerNode, tmp_path: Path) -> None:
    script = "echo one; echo two; exec sleep 3600"
    await node.client.create("pods", pod_manifest("pair", node=NODE, containers=[
        busybox("app", script), busybox("side", "echo beside; exec sleep 3600")]))
    await wait_for_pod(node.client, "pair", lambda p: phase(p) == "Running", 30)
    config = admin_kubeconfig(node.cluster, tmp_path / "kubeconfig")
    deadline = time.monotonic() + 10
    while (result := await _minik(config, "logs", "pair"))[1] != "one\ntwo\n" and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert result == (0, "one\ntwo\n", 'Defaulted container "app" out of: app, side\n')
    assert await _minik(config, "logs", "pair", "-c", "side", "--tail", "1") == (0, "beside\n", "")
    assert await _minik(config, "logs", "pod/pair", "-c", "side") == (0, "beside\n", "")
    pod = await node.client.get("pods", "pair", "default")
    pod["metadata"]["labels"] = {"app": "pair"}
    await node.client.update("pods", pod, "default")
    await node.client.create("services", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "pairs"},
                                          "spec": {"selector": {"app": "pair"}, "ports": [{"port": 80}]}},
                             namespace="default")
    assert await _minik(config, "logs", "svc/pairs", "-c", "side") == (0, "beside\n", "")
    assert await _minik(config, "exec", "service/pairs", "-c", "side", "--", "echo", "via the service") == \
        (0, "via the service\n", "")
    code, out, err = await _minik(config, "exec", "-i", "pair", "-c", "side", "--", "sh", "-c",
                                  "cat; echo bad >&2; exit 4", stdin=b"piped in\n")
    assert (code, out) == (4, "piped in\n") and err == "bad\ncommand terminated with exit code 4\n"
    code, _, err = await _minik(config, "exec", "pair", "-c", "nope", "--", "true")
    assert code == 1 and err == "Error from server (BadRequest): container nope is not valid for pod pair\n"
