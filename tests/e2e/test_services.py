"""Services end to end on real Docker: a whole cluster (scheduler, controllers, proxy, a Docker node) runs a
Deployment of busybox httpd pods that each serve their own name, and a client pod reaches them through the
Service's node port, cluster IP, DNS name and environment variables, in round robin, following scaling and
deletion. Needs a Docker engine and the local images (scripts/test provides both); never skipped."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiodocker
import pytest

from minik.api.errors import StatusError
from minik.client import Client
from minik.cluster import Cluster, ClusterSettings
from minik.kubelet.runtimes.select import kubelet_id
from minik.proxy import NodeProxy

NS = "default"
HTTPD = "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"
Obj = dict[str, Any]


class Services:
    def __init__(self, cluster: Cluster, client: Client, docker: aiodocker.Docker) -> None:
        self.cluster = cluster
        self.client = client
        self.docker = docker

    @property
    def proxy(self) -> NodeProxy:
        proxy = self.cluster.components["proxy"]
        assert isinstance(proxy, NodeProxy)
        return proxy

    async def web(self, replicas: int = 3, **service_spec: Any) -> Obj:
        """The web Deployment and its Service; returns the Service once every replica is a ready endpoint."""
        container = {"name": "httpd", "image": "busybox:latest", "imagePullPolicy": "IfNotPresent",
                     "command": ["sh", "-c", HTTPD], "ports": [{"name": "http", "containerPort": 8080}]}
        await self.client.create("deployments", {
            "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [container], "terminationGracePeriodSeconds": 1}}}}, NS)
        service = await self.client.create("services", {"metadata": {"name": "web"}, "spec": {
            "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}], **service_spec}}, NS)
        await self.ready_endpoints(replicas)
        return service

    async def ready_endpoints(self, count: int, timeout: float = 60.0) -> list[str]:
        async def names() -> list[str] | None:
            try:
                endpoints = await self.client.get("endpoints", "web", NS)
            except StatusError:
                return None
            found = [a["targetRef"]["name"] for s in endpoints.get("subsets") or [] for a in s.get("addresses") or []]
            return sorted(found) if len(found) == count else None
        return await poll(names, timeout, f"{count} ready endpoints")

    async def scale(self, replicas: int) -> None:
        await self.client.patch("deployments", "web", {"spec": {"replicas": replicas}}, NS)

    async def run_client(self) -> str:
        """A busybox pod to run commands in; its container's id."""
        await self.client.create("pods", {"metadata": {"name": "client"}, "spec": {
            "containers": [{"name": "sh", "image": "busybox:latest", "imagePullPolicy": "IfNotPresent",
                            "command": ["sleep", "3600"]}], "terminationGracePeriodSeconds": 0}}, NS)

        async def running() -> str | None:
            pod = await self.client.get("pods", "client", NS)
            for status in (pod.get("status") or {}).get("containerStatuses") or []:
                if status.get("state", {}).get("running"):
                    return str(status["containerID"]).removeprefix("docker://")
            return None
        return await poll(running, 60.0, "the client pod running")

    async def sh(self, container: str, script: str) -> str:
        """Run ``script`` in the container (docker exec); its output."""
        execution = await self.docker.containers.container(container).exec(["sh", "-c", script])
        output = b""
        async with execution.start(detach=False) as stream:
            while (message := await stream.read_out()) is not None:
                output += message.data
        return output.decode()


async def poll(check: Any, timeout: float, what: str) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        found = await check()
        if found is not None and found is not False:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"no {what} after {timeout}s")


async def http_get(port: int, host: str = "127.0.0.1") -> str:
    """One HTTP/1.0 request on a new connection: the body (the name of the pod that answered)."""
    async with asyncio.timeout(10):
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(b"GET / HTTP/1.0\r\n\r\n")
            response = await reader.read()
        finally:
            writer.close()
    return response.split(b"\r\n\r\n", 1)[-1].decode().strip()


async def connection_refused(port: int, host: str = "127.0.0.1") -> bool:
    try:
        async with asyncio.timeout(2):
            _, writer = await asyncio.open_connection(host, port)
    except ConnectionRefusedError:
        return True
    writer.close()
    return False


def in_turn(answers: list[str], names: list[str]) -> bool:
    """Every name equally often, in a repeating order."""
    n = len(names)
    return Counter(answers) == {name: len(answers) // n for name in names} and \
        all(answers[i] == answers[i % n] for i in range(len(answers)))


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[Services]:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL",
                               node_runtime="docker",
                               node_name=f"e2e-services-{random.randrange(1 << 24):x}",
                               service_cidr=f"10.{random.randint(128, 250)}.{random.randint(0, 255)}.0/24")
    async with aiodocker.Docker() as docker:
        try:
            async with Cluster(settings) as cluster, cluster.admin_client() as client:
                proxy = cluster.components["proxy"]
                assert isinstance(proxy, NodeProxy)
                await proxy.wait_ready(20)
                yield Services(cluster, client, docker)
        finally:
            await remove_containers(docker, kubelet_id(settings.data_dir / "kubelet"))


async def remove_containers(docker: aiodocker.Docker, kubelet: str) -> None:
    filters = json.dumps({"label": [f"minik.io/kubelet={kubelet}"]})
    async with docker._query("containers/json", params={"all": "1", "filters": filters}) as response:  # noqa: SLF001
        for container in await response.json():
            try:
                await docker.containers.container(container["Id"]).delete(force=True)
            except aiodocker.DockerError as exc:
                if exc.status not in (404, 409):  # gone, or the kubelet is removing it already
                    raise


async def test_a_node_port_service_spreads_over_its_pods_in_turn_and_follows_scaling_and_deletion(
        services: Services) -> None:
    service = await services.web(type="NodePort")
    node_port = service["spec"]["ports"][0]["nodePort"]
    names = await services.ready_endpoints(3)
    await poll(lambda: http_get(node_port), 10.0, "an answer on the node port")
    answers = [await http_get(node_port) for _ in range(30)]
    assert in_turn(answers, names), answers

    await services.scale(1)
    (left,) = await services.ready_endpoints(1)
    assert {await http_get(node_port) for _ in range(10)} == {left}

    await services.scale(0)  # the ReplicaSet deletes the selector's last pod
    await services.ready_endpoints(0)
    await poll(lambda: connection_refused(node_port), 1.0, "refusal within a second of the endpoints emptying")

    cluster_ip = service["spec"]["clusterIP"]
    await services.client.delete("services", "web", NS)

    async def closed() -> bool:
        forwarders = services.proxy.proxier.forwarders  # type: ignore[union-attr]
        chain = services.proxy.chain
        return not any(key.name == "web" for key in forwarders) and chain is not None and \
            all(r.ip != cluster_ip for r in chain.applied or ())
    await poll(closed, 2.0, "the service's listeners and redirect gone")
    assert await connection_refused(node_port)
    assert str(node_port) not in subprocess.run(["ss", "-Hltn"], capture_output=True, text=True).stdout


async def test_a_pod_reaches_a_service_by_cluster_ip_dns_name_and_environment_in_turn(services: Services) -> None:
    service = await services.web()
    names = await services.ready_endpoints(3)
    client = await services.run_client()

    env = await services.sh(client, "env | grep ^WEB_ | sort")
    assert f"WEB_SERVICE_HOST={service['spec']['clusterIP']}\n" in env and "WEB_SERVICE_PORT=80\n" in env
    resolv = await services.sh(client, "cat /etc/resolv.conf")
    kube_dns = await services.client.get("services", "kube-dns", "kube-system")
    assert f"nameserver {kube_dns['spec']['clusterIP']}" in resolv
    assert "search default.svc.cluster.local svc.cluster.local cluster.local" in resolv

    by_env = await services.sh(client, "for i in $(seq 30); do "
                                       "wget -q -O - http://$WEB_SERVICE_HOST:$WEB_SERVICE_PORT/; done")
    assert in_turn(by_env.split(), names), by_env
    by_name = await services.sh(client, "for i in 1 2 3; do wget -q -O - http://web; done; "
                                        "wget -q -O - http://web.default.svc.cluster.local")
    assert set(by_name.split()) <= set(names) and len(by_name.split()) == 4, by_name

    await services.scale(0)
    await services.ready_endpoints(0)
    refused = await services.sh(client, "wget -q -O - http://web 2>&1; echo exit=$?")
    assert "Connection refused" in refused and "exit=1" in refused, refused
