"""Shared by the kubelet's Docker tests: a cluster whose local node runs on the real engine, pod specs on the
local busybox image, and HTTP from the test to a pod's address.

Without an engine these tests fail: they are never skipped (scripts/test starts one and builds the images)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiodocker

from minik.client import Client
from minik.cluster import Cluster, ClusterSettings
from minik.controllers.manager import ControllerSettings
from minik.kubelet.component import NodeComponent
from minik.kubelet.kubelet import KubeletSettings
from minik.kubelet.podworker import WorkerSettings
from minik.kubelet.runtimes.select import kubelet_id

NODE = "docker-node"
BUSYBOX = "busybox:latest"
#: the controllers a cluster with a CA needs for its pods to start: every pod mounts the CA from the
#: kube-root-ca.crt ConfigMap, which this controller publishes (``controllers=ROOT_CA_ONLY``, and "controllers"
#: left out of ``disabled``)
ROOT_CA_ONLY = ControllerSettings(enabled=["root-ca-cert-publisher"])


def busybox(name: str, script: str, **extra: object) -> dict:
    return {"name": name, "image": BUSYBOX, "imagePullPolicy": "IfNotPresent", "command": ["sh", "-c", script],
            **extra}


class DockerNode:
    def __init__(self, cluster: Cluster, client: Client, docker: aiodocker.Docker) -> None:
        self.cluster = cluster
        self.client = client
        self.docker = docker

    @property
    def component(self) -> NodeComponent:
        return self.cluster.components["node"]  # type: ignore[return-value]

    async def containers(self, uid: str) -> list[dict]:
        filters = json.dumps({"label": [f"io.kubernetes.pod.uid={uid}"]})
        async with self.docker._query("containers/json", params={"all": "1", "filters": filters}) as response:
            return list(await response.json())


@contextlib.asynccontextmanager
async def docker_cluster(data_dir: Path, *, disabled: frozenset[str] | None = None,
                         **settings: Any) -> AsyncIterator[DockerNode]:
    """A cluster with a Docker node named NODE (short back-offs), its containers removed when it stops. By
    default without the scheduler and the proxy, and of the controllers only the root CA publisher: every pod
    mounts the cluster CA from the kube-root-ca.crt ConfigMap it publishes."""
    options: dict[str, Any] = {"kubelet": KubeletSettings(worker=WorkerSettings(backoff_initial_seconds=1.0,
                                                                                   backoff_max_seconds=4.0))}
    if disabled is None:
        disabled = frozenset({"scheduler", "proxy"})
        options["controllers"] = ROOT_CA_ONLY
    options.update(settings)
    cluster_settings = ClusterSettings(data_dir=data_dir, port=0, synchronous="NORMAL", node_name=NODE,
                                       node_runtime="docker", disabled=disabled, **options)
    async with aiodocker.Docker() as docker:
        try:
            async with Cluster(cluster_settings) as cluster, cluster.admin_client() as client:
                component: NodeComponent = cluster.components["node"]  # type: ignore[assignment]
                await asyncio.wait_for(component.local_ready.wait(), 20)
                assert component.local is not None
                await component.local.wait_registered(10)
                yield DockerNode(cluster, client, docker)
        finally:
            await remove_containers(docker, kubelet_id(data_dir / "kubelet"))


async def remove_containers(docker: aiodocker.Docker, kubelet: str) -> None:
    """What the test's kubelet left running (its pods were not deleted) goes with the test."""
    filters = json.dumps({"label": [f"minik.io/kubelet={kubelet}"]})
    async with docker._query("containers/json", params={"all": "1", "filters": filters}) as response:
        for container in await response.json():
            try:
                await docker.containers.container(container["Id"]).delete(force=True)
            except aiodocker.DockerError as exc:
                if exc.status not in (404, 409):  # the kubelet, still stopping, removes (or removed) it
                    raise


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - the pod's own address
        return response.read().decode()


async def fetch_eventually(url: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await asyncio.to_thread(fetch, url)
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


