"""Real kubectl with the general-purpose kinds of the API: PodTemplates, events.k8s.io Events, RuntimeClasses,
APIServices and CertificateSigningRequests (get with Kubernetes' columns, and the commands kubectl has for
them)."""

from __future__ import annotations

TEMPLATE = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "web"},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}


async def test_pod_templates_list_with_containers_images_and_pod_labels(kubectl) -> None:
    await kubectl("apply", "-f", kubectl.manifest("template.yaml", TEMPLATE))
    listed = await kubectl("get", "podtemplates")
    assert listed.rows == [["NAME", "CONTAINERS", "IMAGES", "POD LABELS"], ["web", "app", "nginx:1.27", "app=web"]]


def _event(name: str) -> dict:
    return {"metadata": {"name": name}, "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default",
                                                           "apiVersion": "v1"},
            "reason": "Pulled", "message": "pulled the image", "type": "Normal", "count": 1,
            "firstTimestamp": "2025-01-01T00:00:00Z", "lastTimestamp": "2025-01-01T00:00:00Z",
            "source": {"component": "kubelet", "host": "node-1"}}


async def test_kubectl_events_and_the_events_k8s_io_view_show_the_same_event(http, kubectl) -> None:
    status, _ = await http.post("/api/v1/namespaces/default/events", _event("pulled"))
    assert status == 201
    shown = await kubectl("events")
    assert shown.rows[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert shown.rows[1][1:] == ["Normal", "Pulled", "Pod/web", "pulled the image"]  # kubectl prints these itself
    for_pod = await kubectl("events", "--for", "pod/web")
    assert [row[2] for row in for_pod.rows[1:]] == ["Pulled"]
    viewed = await kubectl("get", "events.v1.events.k8s.io")
    assert viewed.rows[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert viewed.rows[1][1:] == ["Normal", "Pulled", "pod/web", "pulled the image"]
    as_yaml = await kubectl("get", "events.events.k8s.io", "pulled", "-o", "jsonpath={.apiVersion} {.note}")
    assert as_yaml.out == "events.k8s.io/v1 pulled the image"


async def test_runtime_classes_list_with_their_handler(kubectl) -> None:
    await kubectl("apply", "-f", kubectl.manifest("rc.yaml", {
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"}, "handler": "runsc"}))
    listed = await kubectl("get", "runtimeclasses")
    assert listed.rows[0] == ["NAME", "HANDLER", "AGE"] and listed.rows[1][:2] == ["gvisor", "runsc"]
    refused = await kubectl("run", "x", "--image=busybox", "--overrides", '{"spec":{"runtimeClassName":"kata"}}',
                            ok=False)
    assert 'pods "x" is forbidden: pod rejected: RuntimeClass "kata" not found' in refused.err


async def test_apiservices_list_the_served_groups_as_local_and_available(kubectl) -> None:
    listed = await kubectl("get", "apiservices")
    assert listed.rows[0] == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    rows = {row[0]: row[1:3] for row in listed.rows[1:]}
    assert rows["v1."] == ["Local", "True"] and rows["v1.apps"] == ["Local", "True"]
    assert rows["v1.node.k8s.io"] == ["Local", "True"]


def _csr_manifest(name: str) -> dict:
    import base64

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    built = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])).sign(key, hashes.SHA256())
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"request": base64.b64encode(built.public_bytes(serialization.Encoding.PEM)).decode(),
                     "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"],
                     "expirationSeconds": 86400}}


async def test_kubectl_certificate_approve_and_deny_and_the_csr_columns(kubectl) -> None:
    await kubectl("create", "-f", kubectl.manifest("alice.yaml", _csr_manifest("alice")))
    await kubectl("create", "-f", kubectl.manifest("bob.yaml", _csr_manifest("bob")))
    listed = await kubectl("get", "csr")
    assert listed.rows[0] == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
    assert [row[0] for row in listed.rows[1:]] == ["alice", "bob"]
    assert listed.rows[1][2:] == ["kubernetes.io/kube-apiserver-client", "kubernetes-admin", "24h", "Pending"]
    approved = await kubectl("certificate", "approve", "alice")
    assert "certificatesigningrequest.certificates.k8s.io/alice approved" in approved.out
    denied = await kubectl("certificate", "deny", "bob")
    assert "certificatesigningrequest.certificates.k8s.io/bob denied" in denied.out
    listed = await kubectl("get", "csr")
    assert [(row[0], row[-1]) for row in listed.rows[1:]] == [("alice", "Approved"), ("bob", "Denied")]


async def test_kubectl_explain_knows_the_new_kinds(kubectl) -> None:
    quota = await kubectl("explain", "resourcequota.spec.hard")
    assert "hard is the set of desired hard limits" in quota.out
    csr = await kubectl("explain", "csr.spec.signerName")
    assert "signerName indicates the requested signer" in csr.out
    apiservice = await kubectl("explain", "apiservice.spec.groupPriorityMinimum")
    assert "GroupPriorityMinimum is the priority this group should have at least" in apiservice.out
    event = await kubectl("explain", "events.note", "--api-version=events.k8s.io/v1")
    assert "note is a human-readable description of the status of this operation" in event.out
