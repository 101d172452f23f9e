"""A pod talks to the API with its own identity, on real Docker, as in Kubernetes: a whole cluster as `minik up`
runs it (HTTPS, controllers, proxy, a Docker node) runs the official Python client in a pod
(minik/python-kubernetes:test, this host's Python), whose ``load_incluster_config()`` finds the token, the CA and
the namespace at /var/run/secrets/kubernetes.io/serviceaccount and the API at KUBERNETES_SERVICE_HOST:PORT (the
`kubernetes` Service, through the node's proxy, over TLS). RBAC decides what the pod's service account may do;
the token dies with the pod. Needs a Docker engine and iptables (scripts/test provides both); never skipped."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiodocker
import pytest

from minik.api.errors import StatusError
from minik.apiserver.auth.credentials import client_ssl_context
from minik.client import Client
from minik.cluster import Cluster, ClusterSettings
from minik.kubelet.runtimes.images import PYTHON_KUBERNETES_IMAGE
from minik.kubelet.runtimes.pythonimage import ensure_python_image
from minik.kubelet.runtimes.select import kubelet_id
from minik.proxy import NodeProxy
from tests.kubelet.docker_helpers import remove_containers
from tests.kubelet.helpers import phase, wait_for_pod, wait_gone

NS = "apps"
MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
RBAC = "rbac.authorization.k8s.io"
#: what the pod runs: the official client's in-cluster configuration, then a list of its namespace's pods
LIST_PODS = """
import json
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_incluster_config()
namespace = open("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read()
try:
    pods = client.CoreV1Api().list_namespaced_pod(namespace)
    print(json.dumps({"status": 200, "pods": sorted(p.metadata.name for p in pods.items)}))
except ApiException as exc:
    print(json.dumps({"status": exc.status, "message": json.loads(exc.body)["message"]}))
"""


@dataclass
class Setup:
    cluster: Cluster
    admin: Client
    docker: aiodocker.Docker

    def client_with(self, token: str) -> Client:
        assert self.cluster.credentials is not None
        return Client.http(self.cluster.url, token, ssl=client_ssl_context(self.cluster.credentials.ca_pem))

    async def run(self, name: str, **spec: object) -> str:
        """A pod in NS on the Python image that sleeps; its running container's id."""
        await self.admin.create("pods", {"metadata": {"name": name}, "spec": {
            "containers": [{"name": "app", "image": PYTHON_KUBERNETES_IMAGE, "imagePullPolicy": "Never",
                            "command": ["sleep", "3600"]}], "terminationGracePeriodSeconds": 0, **spec}}, NS)
        pod = await wait_for_pod(self.admin, name, lambda p: phase(p) == "Running", 60, NS)
        return str(pod["status"]["containerStatuses"][0]["containerID"]).removeprefix("docker://")

    async def exec(self, container: str, *command: str) -> tuple[int, str]:
        """Run a command in the container (docker exec, with the container's environment): exit code, output."""
        execution = await self.docker.containers.container(container).exec(list(command))
        output = b""
        async with execution.start(detach=False) as stream:
            while (message := await stream.read_out()) is not None:
                output += message.data
        return int((await execution.inspect())["ExitCode"]), output.decode()

    async def list_pods_from(self, container: str) -> dict:
        code, output = await self.exec(container, "python3", "-c", LIST_PODS)
        assert code == 0, output
        return json.loads(output.strip().splitlines()[-1])


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL", node_runtime="docker",
                               node_name=f"e2e-tokens-{random.randrange(1 << 24):x}",
                               service_cidr=f"10.{random.randint(128, 250)}.{random.randint(0, 255)}.0/24")
    async with aiodocker.Docker() as docker:
        await ensure_python_image(docker)  # built once, then kept (scripts/build_images.py builds it too)
        try:
            async with Cluster(settings) as cluster:
                assert cluster.credentials is not None and cluster.admin_token is not None
                proxy = cluster.components["proxy"]
                assert isinstance(proxy, NodeProxy)
                await proxy.wait_ready(20)
                async with Client.http(cluster.url, cluster.admin_token,
                                       ssl=client_ssl_context(cluster.credentials.ca_pem)) as admin:
                    await admin.create("namespaces", {"metadata": {"name": NS}})
                    await wait_for(lambda: admin.get("serviceaccounts", "default", NS))  # its controller's
                    await wait_for(lambda: admin.get("configmaps", "kube-root-ca.crt", NS))
                    yield Setup(cluster, admin, docker)
        finally:
            await remove_containers(docker, kubelet_id(settings.data_dir / "kubelet"))


async def wait_for(read: object, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            await read()  # type: ignore[operator]
            return
        except StatusError as exc:
            if exc.code != 404 or asyncio.get_running_loop().time() > deadline:
                raise
        await asyncio.sleep(0.1)


async def test_a_pod_lists_pods_with_the_official_client_once_its_account_is_bound_and_not_before(
        setup: Setup) -> None:
    await setup.admin.create("serviceaccounts", {"metadata": {"name": "reader"}}, NS)
    container = await setup.run("lister", serviceAccountName="reader")

    refused = await setup.list_pods_from(container)
    assert refused == {"status": 403, "message": 'pods is forbidden: User "system:serviceaccount:apps:reader" '
                                                 'cannot list resource "pods" in API group "" in the namespace '
                                                 '"apps"'}

    await setup.admin.create(f"roles.{RBAC}", {"metadata": {"name": "pod-reader"}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]}, NS)
    await setup.admin.create(f"rolebindings.{RBAC}", {
        "metadata": {"name": "reader-reads-pods"},
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": NS}]}, NS)
    assert await setup.list_pods_from(container) == {"status": 200, "pods": ["lister"]}

    await setup.admin.delete(f"rolebindings.{RBAC}", "reader-reads-pods", NS)
    assert (await setup.list_pods_from(container))["status"] == 403


async def test_the_token_the_ca_and_the_namespace_are_in_the_container_and_the_api_is_its_service(
        setup: Setup) -> None:
    assert setup.cluster.credentials is not None
    container = await setup.run("files")
    code, listing = await setup.exec(container, "ls", MOUNT)
    assert (code, sorted(listing.split())) == (0, ["ca.crt", "namespace", "token"])
    assert (await setup.exec(container, "cat", f"{MOUNT}/namespace"))[1] == NS
    assert (await setup.exec(container, "cat", f"{MOUNT}/ca.crt"))[1] == setup.cluster.credentials.ca_pem.decode()
    master = await setup.admin.get("services", "kubernetes", "default")
    code, env = await setup.exec(container, "sh", "-c", "echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT")
    assert env.strip() == f"{master['spec']['clusterIP']}:443"

    token = (await setup.exec(container, "cat", f"{MOUNT}/token"))[1]
    async with setup.client_with(token) as as_pod:
        review = await as_pod.create("selfsubjectreviews.authentication.k8s.io",
                                     {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        assert review["status"]["userInfo"]["username"] == f"system:serviceaccount:{NS}:default"

        await setup.admin.delete("pods", "files", NS, grace_period_seconds=0)
        await wait_gone(setup.admin, "pods", "files", NS, timeout=30)
        with pytest.raises(StatusError) as refused:  # the token died with its pod
            await as_pod.create("selfsubjectreviews.authentication.k8s.io",
                                {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        assert refused.value.code == 401


async def test_a_pod_that_says_automount_false_gets_no_token(setup: Setup) -> None:
    container = await setup.run("quiet", automountServiceAccountToken=False)
    code, output = await setup.exec(container, "ls", MOUNT)
    assert code != 0 and "No such file or directory" in output
    pod = await setup.admin.get("pods", "quiet", NS)
    assert "volumes" not in pod["spec"]
