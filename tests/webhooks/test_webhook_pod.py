"""A webhook served by a real pod behind a Service, on Docker: the pod runs an HTTPS AdmissionReview server (the
standard library's, on this host's Python image) with a certificate for ``hook.default.svc`` from a Secret; the
endpoints controller puts the pod in the Service's Endpoints once its readiness probe passes; the API server
reaches it at the pod's IP and the Service's targetPort. Needs a Docker engine (scripts/test provides one);
never skipped."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path

import aiodocker

from minik.api.errors import StatusError
from minik.client import Client
from minik.controllers.manager import ControllerSettings
from minik.kubelet.runtimes.images import PYTHON_KUBERNETES_IMAGE
from minik.kubelet.runtimes.pythonimage import ensure_python_image
from minik.pki.ca import CertificateAuthority
from tests.kubelet.docker_helpers import NODE, docker_cluster

SERVER = """
import base64, json, ssl
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Review(BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        patch = [{"op": "add", "path": "/metadata/annotations", "value": {"served-by": self.server.server_name}}]
        body = json.dumps({"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": {
            "uid": request["uid"], "allowed": True, "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(patch).encode()).decode()}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

server = ThreadingHTTPServer(("0.0.0.0", 8443), Review)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("/tls/tls.crt", "/tls/tls.key")
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"""


async def test_a_webhook_served_by_a_pod_behind_a_service_mutates_objects(tmp_path: Path) -> None:
    ca = CertificateAuthority.create("webhook-test-ca")
    issued = ca.issue("hook", names=("hook.default.svc",), server=True)
    async with aiodocker.Docker() as docker:
        await ensure_python_image(docker)
    controllers = ControllerSettings(enabled=["root-ca-cert-publisher", "endpoints"])
    async with docker_cluster(tmp_path / "c", controllers=controllers) as node:
        client = node.client
        await client.create("secrets", {"metadata": {"name": "hook-tls"}, "type": "kubernetes.io/tls", "data": {
            "tls.crt": base64.b64encode(issued.cert_pem).decode(),
            "tls.key": base64.b64encode(issued.key_pem).decode()}}, "default")
        await client.create("services", {"metadata": {"name": "hook"}, "spec": {
            "selector": {"app": "hook"}, "ports": [{"name": "https", "port": 443, "targetPort": 8443}]}}, "default")
        await client.create("pods", {"metadata": {"name": "hook", "labels": {"app": "hook"}}, "spec": {
            "nodeName": NODE, "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "server", "image": PYTHON_KUBERNETES_IMAGE, "imagePullPolicy": "Never",
                            "command": ["python3", "-c", SERVER], "ports": [{"containerPort": 8443}],
                            "readinessProbe": {"tcpSocket": {"port": 8443}, "periodSeconds": 1},
                            "volumeMounts": [{"name": "tls", "mountPath": "/tls"}]}],
            "volumes": [{"name": "tls", "secret": {"secretName": "hook-tls"}}]}}, "default")
        deadline = time.monotonic() + 60
        while not await _ready_endpoint(client):  # the pod is ready and in the Endpoints
            assert time.monotonic() < deadline, "the webhook pod never became a ready endpoint"
            await asyncio.sleep(0.1)
        await client.create("mutatingwebhookconfigurations", {"metadata": {"name": "pod-hook"}, "webhooks": [{
            "name": "annotate.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": "default", "name": "hook", "path": "/annotate"},
                             "caBundle": base64.b64encode(ca.cert_pem).decode()},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}]}]})
        created = await client.create("configmaps", {"metadata": {"name": "mutated"}}, "default")
        assert created["metadata"]["annotations"]["served-by"]  # the pod's own host name


async def _ready_endpoint(client: Client) -> bool:
    try:
        endpoints = await client.get("endpoints", "hook", "default")
    except StatusError:
        return False
    return any(subset.get("addresses") for subset in endpoints.get("subsets") or [])
