"""kubectl against a Docker node: `kubectl wait --for=condition=Ready=False` returns while a pod is being
deleted gracefully (the kubelet reports its stopped containers before removing it), and `kubectl logs` shows
the user a securityContext put the container under."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubectl_helpers import Kubectl, finish

from tests.kubelet.docker_helpers import NODE, DockerNode, busybox, docker_cluster
from tests.kubelet.helpers import pod_manifest


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[DockerNode]:
    async with docker_cluster(tmp_path / "c") as docker_node:
        yield docker_node


async def test_kubectl_wait_sees_ready_false_while_a_pod_is_deleted_gracefully(node: DockerNode,
                                                                               tmp_path: Path) -> None:
    kubectl = Kubectl(node.cluster, tmp_path / "kubectl")
    app = busybox("app", "id -u; trap 'exit 0' TERM; while true; do sleep 0.1; done",
                  securityContext={"runAsUser": 1234, "runAsNonRoot": True})
    manifest = kubectl.manifest("pod.yaml", pod_manifest("web", node=NODE, containers=[app],
                                                         terminationGracePeriodSeconds=30))
    await kubectl("apply", "-f", manifest)
    await kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
    assert (await kubectl("logs", "web")).out == "1234\n"
    waiting = await kubectl.start("wait", "--for=condition=Ready=False", "pod/web", "--timeout=30s")
    await asyncio.sleep(0)
    await kubectl("delete", "pod", "web", "--wait=false")
    result = await finish(waiting, 40)
    assert result.code == 0, result.err
    assert result.out.strip() == "pod/web condition met"
    await kubectl("wait", "--for=delete", "pod/web", "--timeout=30s")
