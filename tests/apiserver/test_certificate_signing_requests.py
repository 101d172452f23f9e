"""CertificateSigningRequests through a real API server (no controllers): validation, the requestor stamped from
the authenticated user, and the approval, status and main-resource write paths each changing only their part;
the admission checks (approve and sign on signers, no system:masters from the kube-apiserver-client signer)."""

from __future__ import annotations

import base64

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from minik.apiserver.request import User

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
CLIENT = "kubernetes.io/kube-apiserver-client"


def pem_request(common_name: str, *orgs: str) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    names += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in orgs]
    request = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names)).sign(key, hashes.SHA256())
    return base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode()


def self_signed() -> str:
    import datetime

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "someone")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


def csr(name: str, request: str, signer: str = CLIENT, usages: tuple[str, ...] = ("client auth",),
        **spec: object) -> dict:
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"request": request, "signerName": signer, "usages": list(usages), **spec}}


def approved(obj: dict, type_: str = "Approved") -> dict:
    obj.setdefault("status", {})["conditions"] = [{"type": type_, "status": "True", "reason": "Test",
                                                   "message": "by the test"}]
    return obj


async def test_a_request_is_stamped_with_its_requestor_whatever_the_body_says(http) -> None:
    status, created = await http.post(CSRS, csr("alice", pem_request("alice"), username="mallory",
                                                groups=["system:masters"]))
    assert status == 201, created
    spec = created["spec"]
    assert spec["username"] == "kubernetes-admin"  # the admin kubeconfig's user, not the body's
    assert "system:masters" in spec["groups"] and "system:authenticated" in spec["groups"]
    assert "status" not in created or created["status"] == {}


async def test_invalid_requests_are_refused_with_kubernetes_causes(http) -> None:
    bad = csr("bad", base64.b64encode(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").decode(),
              signer="nodomain", usages=("client auth", "flying"), expirationSeconds=60)
    status, body = await http.post(CSRS, bad)
    assert status == 422, body
    causes = {(c["field"], c["message"]) for c in body["details"]["causes"]}
    assert ("spec.request", 'Invalid value: "<request data>": PEM block type must be CERTIFICATE REQUEST') in causes
    assert ("spec.signerName", 'Invalid value: "nodomain": must be a fully qualified domain and path of the form '
                               "'example.com/signer-name'") in causes
    assert any(field == "spec.usages[1]" and message.startswith('Unsupported value: "flying"')
               for field, message in causes)
    assert ("spec.expirationSeconds", "Invalid value: 60: may not specify a duration less than 600 seconds "
                                      "(10 minutes)") in causes
    status, body = await http.post(CSRS, csr("nousage", pem_request("x"), usages=()))
    assert status == 422 and body["details"]["causes"][0]["message"] == "Required value: usages must be provided"


async def test_approval_changes_only_conditions_and_status_writes_keep_the_approval(http) -> None:
    _, created = await http.post(CSRS, csr("alice", pem_request("alice")))
    body = approved(created)
    body["spec"]["signerName"] = "example.com/other"
    body["status"]["certificate"] = "bm90IHRoaXM="
    status, result = await http.put(f"{CSRS}/alice/approval", body)
    assert status == 200, result
    assert result["spec"]["signerName"] == CLIENT and "certificate" not in result["status"]
    [condition] = result["status"]["conditions"]
    assert condition["type"] == "Approved" and condition["lastUpdateTime"] and condition["lastTransitionTime"]
    status, result = await http.put(f"{CSRS}/alice/status", approved(result, "Failed"))
    assert status == 200, result
    assert [c["type"] for c in result["status"]["conditions"]] == ["Approved", "Failed"]
    both = {**result, "status": {"conditions": [*result["status"]["conditions"],
                                                {"type": "Denied", "status": "True"}]}}
    status, body = await http.put(f"{CSRS}/alice/approval", both)
    assert status == 422 and "Approved and Denied conditions are mutually exclusive" in body["message"]
    result["spec"]["usages"] = ["digital signature", "client auth"]
    status, after = await http.put(f"{CSRS}/alice", result)
    assert status == 200 and after["spec"]["usages"] == ["client auth"]


async def test_approving_and_signing_need_the_verbs_on_the_signer(cluster, http) -> None:
    _, created = await http.post(CSRS, csr("alice", pem_request("alice")))
    await http.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "metadata": {"name": "csr-writer"}, "rules": [
            {"apiGroups": ["certificates.k8s.io"], "verbs": ["get", "update"],
             "resources": ["certificatesigningrequests/approval", "certificatesigningrequests/status"]}]})
    await http.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "metadata": {"name": "csr-writer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "csr-writer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]})
    bob = cluster.in_process_client(User("bob"))
    from minik.api.errors import StatusError

    try:
        await bob.update("certificatesigningrequests.certificates.k8s.io", approved(created), subresource="approval")
        raise AssertionError("bob approved without the approve verb")
    except StatusError as exc:
        assert exc.code == 403
        assert exc.message == ('certificatesigningrequests.certificates.k8s.io "alice" is forbidden: user not '
                               f'permitted to approve requests with signerName "{CLIENT}"')
    await http.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "metadata": {"name": "approver"}, "rules": [{"apiGroups": ["certificates.k8s.io"], "verbs": ["approve"],
                                                      "resources": ["signers"],
                                                      "resourceNames": ["kubernetes.io/*"]}]})
    await http.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "metadata": {"name": "approver"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "approver"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]})
    done = await bob.update("certificatesigningrequests.certificates.k8s.io", approved(created),
                            subresource="approval")
    done["status"]["certificate"] = self_signed()
    try:
        await bob.update_status("certificatesigningrequests.certificates.k8s.io", done)
        raise AssertionError("bob signed without the sign verb")
    except StatusError as exc:
        assert exc.code == 403 and "user not permitted to sign requests with signerName" in exc.message


async def test_the_client_signer_may_not_be_asked_for_system_masters(http) -> None:
    status, body = await http.post(CSRS, csr("root", pem_request("root", "system:masters")))
    assert status == 403
    assert body["message"] == ('certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of '
                               'kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed')


async def test_no_one_but_an_admin_may_ask_for_the_certificate_of_a_node_the_cluster_runs_itself() -> None:
    from minik.api.errors import StatusError
    from minik.api.resources import REGISTRY
    from minik.apiserver.admission import Attributes
    from minik.apiserver.admission.certificates import ReservedNodeNames

    plugin = ReservedNodeNames(frozenset({"laptop"}))
    resource = REGISTRY.get("certificates.k8s.io", "v1", "certificatesigningrequests")
    assert resource is not None

    def attrs(common_name: str, user: User) -> Attributes:
        body = csr("x", pem_request(common_name, "system:nodes"), signer="kubernetes.io/kube-apiserver-client-kubelet")
        return Attributes("CREATE", resource, None, None, "x", body, None, user)

    bootstrap = User("system:bootstrap:abcdef", ("system:bootstrappers:minik:node",))
    try:
        await plugin.validate(attrs("system:node:laptop", bootstrap))
        raise AssertionError("a bootstrap token asked for the local node's certificate")
    except StatusError as exc:
        assert exc.code == 403 and 'node "laptop" is one this cluster runs itself' in exc.message
    await plugin.validate(attrs("system:node:worker-1", bootstrap))
    await plugin.validate(attrs("system:node:laptop", User("admin", ("system:masters",))))
