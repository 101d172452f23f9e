"""`kubectl port-forward` and `kubectl proxy` with real kubectl 1.32 on real Docker: a Deployment of one busybox
httpd behind a Service, reached through port-forward to the pod, the deployment and the service (kubectl's SPDY
session tunneled in a WebSocket, and its SPDY fallback), several connections at once, and through the pods/proxy
and services/proxy paths with every method."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.stream import portforward

from minik.api import spdy
from minik.api.errors import StatusError
from minik.client import Client
from tests.access import admin_headers, admin_kubeconfig, admin_session
from tests.e2e.kubectl_helpers import Kubectl
from tests.kubelet.docker_helpers import NODE, DockerNode, docker_cluster

NS = "default"
#: the pod serves its name at /, files f1 (1000 lines), f2 and f3, a CGI that answers its method and body, and one
#: that answers the request's headers (busybox passes them as HTTP_* variables)
HTTPD = ("mkdir -p /www/cgi-bin && hostname > /www/index.html && for i in 1 2 3; do seq 1 $((i*1000)) > /www/f$i;"
         " done && printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\n"
         "echo \"$REQUEST_METHOD $QUERY_STRING $(head -c ${CONTENT_LENGTH:-0})\"\\n' > /www/cgi-bin/echo && "
         "printf '#!/bin/sh\necho Content-Type: text/plain\necho\nenv | grep ^HTTP_ | sort\n' > /www/cgi-bin/env && "
         "chmod +x /www/cgi-bin/echo /www/cgi-bin/env && exec httpd -f -p 8080 -h /www")


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[DockerNode]:
    async with docker_cluster(tmp_path / "cluster", disabled=frozenset({"proxy"})) as node:
        yield node


@pytest.fixture
def kubectl(node: DockerNode, tmp_path: Path) -> Kubectl:
    return Kubectl(node.cluster, tmp_path / "kubectl")


@pytest.fixture
async def web(node: DockerNode) -> str:
    """The web Deployment (one replica) and Service (port 80 to the pod's 8080); the pod's name once it is a ready
    endpoint."""
    client = node.client
    container = {"name": "httpd", "image": "busybox:latest", "imagePullPolicy": "IfNotPresent",
                 "command": ["sh", "-c", HTTPD], "ports": [{"name": "http", "containerPort": 8080}],
                 "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}
    await client.create("deployments", {"metadata": {"name": "web"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [container], "terminationGracePeriodSeconds": 1}}}}, NS)
    await client.create("services", {"metadata": {"name": "web"}, "spec": {
        "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}}, NS)
    return await ready_endpoint(client)


async def ready_endpoint(client: Client, timeout: float = 60.0) -> str:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        with contextlib.suppress(StatusError):
            endpoints = await client.get("endpoints", "web", NS)
            names = [a["targetRef"]["name"] for s in endpoints.get("subsets") or [] for a in s.get("addresses") or []]
            if names:
                return str(names[0])
        await asyncio.sleep(0.2)
    raise AssertionError("the web service has no ready endpoint")


@contextlib.asynccontextmanager
async def port_forward(kubectl: Kubectl, target: str, remote: str, env: dict[str, str] | None = None,
                       namespace: str = NS) -> AsyncIterator[int]:
    """`kubectl port-forward TARGET :REMOTE` running; the local port it listens on."""
    if env:
        kubectl.env = {**kubectl.env, **env}
    process = await kubectl.start("port-forward", "-n", namespace, "--address", "127.0.0.1", target, f":{remote}")
    try:
        assert process.stdout is not None and process.stderr is not None
        async with asyncio.timeout(30):
            line = (await process.stdout.readline()).decode()
        found = re.search(r"Forwarding from 127\.0\.0\.1:(\d+)", line)
        if found is None:
            raise AssertionError(f"kubectl port-forward said {line!r}: {(await process.stderr.read()).decode()}")
        yield int(found.group(1))
        assert process.returncode is None, (await process.stderr.read()).decode()
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


async def http(port: int, path: str = "/", method: str = "GET", body: bytes = b"") -> tuple[int, bytes]:
    """One HTTP/1.0 exchange on a new connection: status and body."""
    async with asyncio.timeout(15):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(f"{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n\r\n"
                         .encode() + body)
            answer = await reader.read()
        finally:
            writer.close()
    head, content = re.split(rb"\r?\n\r?\n", answer, maxsplit=1)  # a CGI's own headers end in bare newlines
    return int(head.split()[1]), content


def lines(count: int) -> bytes:
    return "".join(f"{i}\n" for i in range(1, count + 1)).encode()


async def test_kubectl_port_forward_to_a_pod_reaches_its_server(kubectl: Kubectl, web: str) -> None:
    async with port_forward(kubectl, f"pod/{web}", "8080") as port:
        assert await http(port) == (200, f"{web}\n".encode())
        assert await http(port, "/f3") == (200, lines(3000))
        assert await http(port, "/cgi-bin/echo?x=1", "POST", b"hello") == (200, b"POST x=1 hello\n")


async def test_kubectl_port_forward_to_a_deployment_and_a_service_picks_their_pod(kubectl: Kubectl,
                                                                                  web: str) -> None:
    async with port_forward(kubectl, "deploy/web", "8080") as port:
        assert await http(port) == (200, f"{web}\n".encode())
    async with port_forward(kubectl, "svc/web", "80") as port:  # the service's port 80 is the pod's 8080
        assert await http(port) == (200, f"{web}\n".encode())


async def test_concurrent_forwarded_connections_stay_independent(kubectl: Kubectl, web: str) -> None:
    async with port_forward(kubectl, f"pod/{web}", "8080") as port:
        opened = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        # requests sent out of order on open connections, one connection dropped unanswered: each answer is its own
        for index in (2, 0):
            opened[index][1].write(f"GET /f{index + 1} HTTP/1.0\r\n\r\n".encode())
        opened[1][1].close()
        answers = await asyncio.gather(*(opened[i][0].read() for i in (0, 2)))
        assert [a.partition(b"\r\n\r\n")[2] for a in answers] == [lines(1000), lines(3000)]
        for _, writer in opened:
            writer.close()
        many = await asyncio.gather(*(http(port, f"/f{1 + i % 3}") for i in range(12)))
        assert [body for _, body in many] == [lines(1000 * (1 + i % 3)) for i in range(12)]


async def test_kubectl_port_forward_falls_back_to_spdy(kubectl: Kubectl, web: str) -> None:
    async with port_forward(kubectl, f"pod/{web}", "8080", {"KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"}) as port:
        assert await http(port) == (200, f"{web}\n".encode())
        results = await asyncio.gather(*(http(port, "/f2") for _ in range(4)))
        assert results == [(200, lines(2000))] * 4


async def test_a_port_nobody_listens_on_is_reported_by_kubectl(kubectl: Kubectl, web: str) -> None:
    process = await kubectl.start("port-forward", "--address", "127.0.0.1", f"pod/{web}", ":9999")
    try:
        assert process.stdout is not None and process.stderr is not None
        line = (await process.stdout.readline()).decode()
        port = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))  # type: ignore[union-attr]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.0\r\n\r\n")
        with contextlib.suppress(ConnectionError):
            assert await reader.read() == b""  # nothing answers
        writer.close()
        async with asyncio.timeout(20):
            err = (await process.stderr.read()).decode()
        assert "failed to connect to" in err and ":9999" in err and "connection refused" in err, err
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


@contextlib.asynccontextmanager
async def kubectl_proxy(kubectl: Kubectl) -> AsyncIterator[int]:
    process = await kubectl.start("proxy", "--port=0")
    try:
        assert process.stdout is not None
        async with asyncio.timeout(30):
            line = (await process.stdout.readline()).decode()
        found = re.search(r"127\.0\.0\.1:(\d+)", line)
        assert found is not None, line
        yield int(found.group(1))
    finally:
        process.terminate()
        await process.wait()


async def test_kubectl_proxy_reaches_a_pod_and_a_service_with_every_method(kubectl: Kubectl, web: str) -> None:
    async with kubectl_proxy(kubectl) as port:
        base = f"/api/v1/namespaces/{NS}"
        assert await http(port, f"{base}/services/web:80/proxy/") == (200, f"{web}\n".encode())
        assert await http(port, f"{base}/services/http:web:80/proxy/f1") == (200, lines(1000))
        assert await http(port, f"{base}/pods/{web}/proxy/") == (200, f"{web}\n".encode())  # its declared port
        assert await http(port, f"{base}/pods/{web}:8080/proxy/cgi-bin/echo?a=b", "POST", b"payload") == \
            (200, b"POST a=b payload\n")
        for method in ("PUT", "DELETE"):  # (busybox gives a CGI the body of a POST only)
            assert await http(port, f"{base}/services/web/proxy/cgi-bin/echo?m", method) == (200, f"{method} m \n"
                                                                                             .encode())
        status, _ = await http(port, f"{base}/services/web:81/proxy/")
        assert status == 503


async def test_the_proxy_paths_answer_as_kubernetes_does(node: DockerNode, kubectl: Kubectl, web: str) -> None:
    base = f"/api/v1/namespaces/{NS}"
    result = await kubectl("get", "--raw", f"{base}/pods/{web}:8080/proxy/f2")
    assert result.out.encode() == lines(2000)
    missing = await kubectl("get", "--raw", f"{base}/services/nothing/proxy/", ok=False)
    assert 'services "nothing" not found' in missing.err
    bad = await kubectl("get", "--raw", f"{base}/pods/a:b:c:d/proxy/", ok=False)
    assert "invalid pod request" in bad.err
    async with kubectl_proxy(kubectl) as port:
        async with asyncio.timeout(10):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"GET {base}/pods/{web}:8080/proxy?x=1 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
            head = (await reader.read()).partition(b"\r\n\r\n")[0].decode()
            writer.close()
        assert head.split()[1] == "301" and f"Location: {base}/pods/{web}:8080/proxy/?x=1" in head


def _python_client_exchange(kubeconfig: Path, pod: str) -> tuple[bytes, str | None]:
    """What the official Python client's port-forward (v4.channel.k8s.io) reads from port 8080, and the error
    reported for a port nothing listens on."""
    core = k8s.CoreV1Api(k8s_config.new_client_from_config(str(kubeconfig)))
    forward = portforward(core.connect_get_namespaced_pod_portforward, pod, NS, ports="8080,9999")
    sock = forward.socket(8080)
    sock.settimeout(15)
    sock.sendall(b"GET /f1 HTTP/1.0\r\n\r\n")
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    sock.close()
    refused = forward.socket(9999)
    refused.settimeout(15)
    refused.recv(1)
    error = forward.error(9999)
    forward.close()
    return answer, error


async def test_the_python_clients_port_forward_reaches_the_pod(node: DockerNode, web: str, tmp_path: Path) -> None:
    config = admin_kubeconfig(node.cluster, tmp_path / "python-kubeconfig")
    answer, error = await asyncio.to_thread(_python_client_exchange, config, web)
    assert answer.startswith(b"HTTP/1.") and answer.endswith(lines(1000))
    assert error is not None and ":9999" in error and "connection refused" in error


async def test_a_spdy_upgrade_carries_each_connection_as_a_pair_of_streams(node: DockerNode, web: str) -> None:
    """The SPDY/3.1 upgrade (kubectl's fallback) spoken frame by frame: SYN_REPLY to each stream, the pod's answer
    on the data stream, then FIN on both, and a PING answered with itself."""
    cluster = node.cluster
    host, port = cluster.url.removeprefix("https://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port), ssl=cluster.client_ssl_context())
    encoder, decoder = spdy.Encoder(), spdy.Decoder()
    try:
        writer.write(f"POST /api/v1/namespaces/{NS}/pods/{web}/portforward HTTP/1.1\r\nHost: {host}\r\n"
                     f"Authorization: {admin_headers(cluster)['Authorization']}\r\nConnection: Upgrade\r\n"
                     "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n".encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        assert head.startswith("HTTP/1.1 101") and "X-Stream-Protocol-Version: portforward.k8s.io" in head, head
        headers = {"streamtype": ["error"], "port": ["8080"], "requestid": ["0"]}
        writer.write(encoder.syn_stream(1, headers) + spdy.data(1, b"", spdy.FLAG_FIN) +
                     encoder.syn_stream(3, {**headers, "streamtype": ["data"]}) + spdy.ping(1) +
                     spdy.data(3, b"GET /f1 HTTP/1.0\r\n\r\n", spdy.FLAG_FIN))
        frames: list[spdy.Frame] = []
        async with asyncio.timeout(15):
            while not (any(f.kind == 0 and f.stream_id == 1 and f.fin for f in frames) and
                       any(f.kind == 0 and f.stream_id == 3 and f.fin for f in frames)):
                frames += decoder.feed(await reader.read(65536))
    finally:
        writer.close()
    assert [(f.kind, f.stream_id) for f in frames if f.kind == spdy.SYN_REPLY] == [(spdy.SYN_REPLY, 1),
                                                                                   (spdy.SYN_REPLY, 3)]
    assert any(f.kind == spdy.PING and f.value == 1 for f in frames)
    assert b"".join(f.data for f in frames if f.kind == 0 and f.stream_id == 1) == b""  # no error
    answer = b"".join(f.data for f in frames if f.kind == 0 and f.stream_id == 3)
    assert answer.startswith(b"HTTP/1.") and answer.endswith(lines(1000))


async def test_port_forward_to_a_mirror_pod_reaches_its_component(node: DockerNode, kubectl: Kubectl) -> None:
    """The API server's own pod, as a host-network pod is reached in Kubernetes: its port on the node."""
    port = node.cluster.url.rsplit(":", 1)[1]
    async with port_forward(kubectl, f"pod/kube-apiserver-{NODE}", port, namespace="kube-system") as local:
        async with asyncio.timeout(10):
            reader, writer = await asyncio.open_connection("127.0.0.1", local, ssl=node.cluster.client_ssl_context(),
                                                           server_hostname="localhost")
            writer.write(b"GET /livez HTTP/1.0\r\nHost: localhost\r\n\r\n")
            answer = await reader.read()
            writer.close()
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok")


async def test_the_proxy_passes_the_callers_headers_but_not_its_credentials(node: DockerNode, web: str) -> None:
    async with admin_session(node.cluster) as session:
        async with session.get(f"/api/v1/namespaces/{NS}/services/web/proxy/cgi-bin/env",
                               headers={"X-Custom": "kept"}) as response:
            assert response.status == 200
            seen = (await response.text()).split()
    assert "HTTP_X_CUSTOM=kept" in seen
    assert not [line for line in seen if line.startswith(("HTTP_AUTHORIZATION", "HTTP_IMPERSONATE"))], seen
