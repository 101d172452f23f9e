"""The certificate controllers in a cluster as `minik up` runs it: a joining machine's bootstrap token asks for
its kubelet's client certificate, csrapproving approves it (the token may create certificatesigningrequests/
nodeclient), csrsigning signs it with the cluster CA, and the API server then authenticates the certificate as
the node. Requests the signer cannot honour fail with Kubernetes' reason."""

from __future__ import annotations

import base64
from pathlib import Path

import aiohttp
from controller_helpers import eventually
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from minik.api import tokens
from minik.apiserver.auth.credentials import client_ssl_context
from minik.apiserver.request import User
from minik.client import Client
from minik.cluster import Cluster

CSRS = "certificatesigningrequests.certificates.k8s.io"
KUBELET = "kubernetes.io/kube-apiserver-client-kubelet"


def request(key: ec.EllipticCurvePrivateKey, common_name: str, *orgs: str) -> str:
    names = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    names += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in orgs]
    built = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names)).sign(key, hashes.SHA256())
    return base64.b64encode(built.public_bytes(serialization.Encoding.PEM)).decode()


def csr(name: str, pem: str, signer: str = KUBELET, usages: tuple[str, ...] = ("digital signature", "client auth"),
        **spec: object) -> dict:
    return {"metadata": {"name": name}, "spec": {"request": pem, "signerName": signer, "usages": list(usages),
                                                 **spec}}


async def test_a_bootstrap_token_gets_a_kubelet_client_certificate_the_api_server_accepts(
        controlled: Cluster, api: Client, tmp_path: Path) -> None:
    token = tokens.new_bootstrap_token()
    await api.create("secrets", tokens.bootstrap_secret(token, "node", None), tokens.NAMESPACE)
    assert controlled.credentials is not None
    joiner = Client.http(controlled.url, token, ssl=client_ssl_context(controlled.credentials.ca_pem))
    key = ec.generate_private_key(ec.SECP256R1())
    try:
        created = await joiner.create(CSRS, csr("node-csr-worker-1", request(key, "system:node:worker-1",
                                                                              "system:nodes"),
                                                expirationSeconds=3600))
    finally:
        await joiner.close()
    assert created["spec"]["username"].startswith("system:bootstrap:")

    async def issued() -> dict:
        status = (await api.get(CSRS, "node-csr-worker-1")).get("status") or {}
        assert status.get("certificate"), status
        return status

    status = await eventually(issued)
    [condition] = status["conditions"]
    assert (condition["type"], condition["reason"], condition["message"]) == (
        "Approved", "AutoApproved", "Auto approving kubelet client certificate after SubjectAccessReview.")
    pem = base64.b64decode(status["certificate"])
    cert = x509.load_pem_x509_certificate(pem)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:worker-1"
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert 3600 <= lifetime.total_seconds() <= 3600 + 301

    (tmp_path / "node.crt").write_bytes(pem)
    (tmp_path / "node.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                           serialization.PrivateFormat.PKCS8,
                                                           serialization.NoEncryption()))
    context = client_ssl_context(controlled.credentials.ca_pem)
    context.load_cert_chain(tmp_path / "node.crt", tmp_path / "node.key")
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
        async with session.post(f"{controlled.url}/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}) as r:
            review = await r.json()
    info = review["status"]["userInfo"]
    assert info["username"] == "system:node:worker-1" and "system:nodes" in info["groups"]


async def test_requests_the_signer_cannot_honour_fail_and_others_wait_for_approval(controlled: Cluster,
                                                                                   api: Client) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    # carol may ask for certificates, but not have a kubelet's approved: hers waits for a person
    await api.create("clusterrolebindings.rbac.authorization.k8s.io", {
        "metadata": {"name": "carol-csr"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}]})
    carol = controlled.in_process_client(User("carol"))
    await carol.create(CSRS, csr("pending", request(key, "system:node:worker-2", "system:nodes")))
    await api.create(CSRS, csr("not-a-node", request(key, "alice", "devs")))
    obj = await api.get(CSRS, "not-a-node")
    await api.update(CSRS, approve(obj), subresource="approval")

    async def failed() -> dict:
        conditions = ((await api.get(CSRS, "not-a-node")).get("status") or {}).get("conditions") or []
        failure = [c for c in conditions if c["type"] == "Failed"]
        assert failure, conditions
        return failure[0]

    failure = await eventually(failed)
    assert (failure["reason"], failure["message"]) == ("SignerValidationFailure",
                                                       "subject organization is not system:nodes")
    pending = await api.get(CSRS, "pending")
    assert not (pending.get("status") or {}).get("conditions")
    await api.update(CSRS, approve(pending), subresource="approval")

    async def signed() -> bool:
        return bool(((await api.get(CSRS, "pending")).get("status") or {}).get("certificate"))

    await eventually(signed)


def approve(obj: dict) -> dict:
    return {**obj, "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "Test",
                                              "message": "approved by the test"}]}}
