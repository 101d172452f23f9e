#!/usr/bin/env python3
"""A validating admission webhook in one file, for trying webhooks on a local cluster.

It makes a throw-away CA and a certificate for 127.0.0.1, writes the ValidatingWebhookConfiguration that points
the API server at it (with that CA as caBundle) to the path given with --config, then serves AdmissionReview v1
on https://127.0.0.1:PORT/validate until stopped. It refuses ConfigMaps that hold a key named "password" (such
data belongs in a Secret), in namespaces labelled ``webhook-demo: "on"``.

    python3 manifests/extend/webhook.py --config /tmp/webhook.yaml &
    kubectl apply -f /tmp/webhook.yaml

Needs only the standard library and ``cryptography`` (installed with minik).
"""

from __future__ import annotations

import argparse
import base64
import datetime
import ipaddress
import json
import os
import ssl
import tempfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CONFIG = """apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: no-passwords-in-configmaps
webhooks:
  - name: no-passwords.example.minik.dev
    clientConfig:
      url: https://127.0.0.1:{port}/validate
      caBundle: {ca}
    rules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [configmaps]
    namespaceSelector:
      matchLabels:
        webhook-demo: "on"
    failurePolicy: Ignore
    sideEffects: None
    admissionReviewVersions: [v1]
    timeoutSeconds: 5
"""


def _certificates(directory: str) -> tuple[str, str, bytes]:
    """A CA and a serving certificate for 127.0.0.1 signed by it: (cert file, key file, CA PEM)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook-demo-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now)
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
    with open(cert_path, "wb") as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
        out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    return cert_path, key_path, ca.public_bytes(serialization.Encoding.PEM)


def review(request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one AdmissionReview request."""
    data = (request.get("object") or {}).get("data") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": "password" not in data}
    if not response["allowed"]:
        response["status"] = {"code": 403, "message": 'a ConfigMap may not hold a "password": use a Secret'}
    return response


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        request = json.loads(body).get("request") or {}
        answer = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                             "response": review(request)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8443)
    parser.add_argument("--config", required=True, help="where to write the ValidatingWebhookConfiguration")
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="webhook-demo-")
    cert, key, ca = _certificates(directory)
    with open(args.config, "w") as out:
        out.write(CONFIG.format(port=args.port, ca=base64.b64encode(ca).decode()))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"webhook on https://127.0.0.1:{args.port}/validate; configuration in {args.config}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
