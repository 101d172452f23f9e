"""securityContext on real Docker: what a container is given shows from inside it (`id`, /proc/self/status, a
sysctl, a refused write), and runAsNonRoot refuses an image that runs as root."""

from __future__ import annotations

from minik.client import Client
from tests.kubelet.docker_helpers import NODE, DockerNode, busybox
from tests.kubelet.helpers import container_state, phase, pod_manifest, wait_for_pod
from tests.kubelet.test_probes import wait_for_event

#: prints what the container runs as and may do, then tries to write to its root and to the emptyDir
REPORT = ("id; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; "
          "echo somaxconn $(cat /proc/sys/net/core/somaxconn); "
          "touch /written 2>/dev/null && echo root-writable || echo root-read-only; "
          "touch /data/by-$(id -u) && stat -c 'data %g %a' /data /data/by-$(id -u)")


async def logs_of(client: Client, pod: str, container: str) -> str:
    response = await client.logs(pod, "default", container=container)
    try:
        return b"".join([chunk async for chunk in response.chunks]).decode()
    finally:
        await response.close()


def status_line(logs: str, key: str) -> str:
    return next(line.split(":", 1)[1].strip() for line in logs.splitlines() if line.startswith(key + ":"))


async def test_users_groups_capabilities_and_a_read_only_root_show_inside_the_containers(node: DockerNode) -> None:
    client = node.client
    data = [{"name": "data", "mountPath": "/data"}]
    confined = busybox("confined", REPORT, volumeMounts=data, securityContext={
        "runAsUser": 1000, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}})
    root = busybox("root", REPORT, volumeMounts=data, securityContext={
        "runAsUser": 0, "runAsGroup": 0, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "CHOWN"]}})
    await client.create("pods", pod_manifest(
        "confined", node=NODE, restart_policy="Never", containers=[root, confined],
        securityContext={"runAsUser": 2000, "runAsGroup": 3000, "supplementalGroups": [4000], "fsGroup": 5000,
                         "sysctls": [{"name": "net.core.somaxconn", "value": "1234"}]},
        volumes=[{"name": "data", "emptyDir": {}}]))
    pod = await wait_for_pod(client, "confined", lambda p: phase(p) in ("Succeeded", "Failed"), 30)
    assert phase(pod) == "Succeeded", pod["status"]

    mine = await logs_of(client, "confined", "confined")
    assert mine.splitlines()[0] == "uid=1000 gid=3000 groups=3000,4000,5000"  # the container's runAsUser wins
    assert status_line(mine, "CapEff") == "0000000000000000"
    assert status_line(mine, "NoNewPrivs") == "1"
    assert status_line(mine, "Seccomp") == "2"  # a filter: Docker's default profile
    assert "root-read-only" in mine
    assert "somaxconn 1234" in mine  # the pod's sysctl, set on the sandbox whose network namespace it shares
    # fsGroup owns the emptyDir (setgid, so new files are the group's too), and starting a second container that
    # mounts it (root's, started first) does not undo that
    assert "data 5000 2777" in mine and "data 5000 644" in mine

    theirs = await logs_of(client, "confined", "root")
    assert theirs.splitlines()[0] == "uid=0(root) gid=0(root) groups=0(root),4000,5000"
    assert status_line(theirs, "CapEff") == f"{1 << 10 | 1 << 0:016x}"  # CAP_NET_BIND_SERVICE and CAP_CHOWN
    assert status_line(theirs, "NoNewPrivs") == "0"
    assert status_line(theirs, "Seccomp") == "0"  # no profile asked for: Unconfined, as Kubernetes runs it
    assert "root-writable" in theirs


async def test_run_as_non_root_refuses_an_image_that_runs_as_root(node: DockerNode) -> None:
    client = node.client
    pod = await client.create("pods", pod_manifest("rooted", node=NODE, containers=[busybox("app", "sleep 600")],
                                                   securityContext={"runAsNonRoot": True}))
    message = (f'container has runAsNonRoot and image will run as root (pod: "rooted_default('
               f'{pod["metadata"]["uid"]})", container: app)')
    pod = await wait_for_pod(client, "rooted", lambda p: "waiting" in container_state(p).get("state", {}) and
                             container_state(p)["state"]["waiting"].get("reason") == "CreateContainerConfigError", 30)
    assert container_state(pod)["state"]["waiting"]["message"] == message
    assert phase(pod) == "Pending"
    events = await wait_for_event(client, "rooted", lambda e: e[1] == "Failed")
    assert ("Warning", "Failed", f"Error: {message}") in events
    containers = await node.containers(pod["metadata"]["uid"])
    assert [c["Labels"]["io.kubernetes.container.name"] for c in containers] == ["POD"]  # the sandbox only
