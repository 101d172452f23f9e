"""The certificate controllers of Kubernetes' kube-controller-manager, for the signers minik's cluster CA stands
behind:

- csrsigning: an approved CertificateSigningRequest for ``kubernetes.io/kube-apiserver-client`` or
  ``kubernetes.io/kube-apiserver-client-kubelet`` gets its certificate, signed by the cluster CA (so the API server
  accepts it as a client certificate), valid for spec.expirationSeconds or a year; one the signer cannot honour
  gets the Failed condition (SignerValidationFailure) with Kubernetes' reason.
- csrapproving: a request for a kubelet client certificate (``system:node:NAME`` in ``system:nodes``) is approved
  when its requestor may create ``certificatesigningrequests/selfnodeclient`` (a node renewing its own) or
  ``certificatesigningrequests/nodeclient`` (a bootstrap identity), as a SubjectAccessReview finds.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.kinds.certificates import (
    APPROVED,
    DENIED,
    FAILED,
    KUBE_APISERVER_CLIENT,
    KUBE_APISERVER_CLIENT_KUBELET,
    condition_of,
    decode_request,
)
from minik.api.timestamps import now_rfc3339
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder

if TYPE_CHECKING:
    from cryptography import x509

CSRS = "certificatesigningrequests.certificates.k8s.io"
#: kube-controller-manager's --cluster-signing-duration
DEFAULT_DURATION_SECONDS = 365 * 24 * 3600

_KUBELET_USAGES = ({"digital signature", "key encipherment", "client auth"}, {"digital signature", "client auth"})


def kubelet_client_problem(request: x509.CertificateSigningRequest, usages: set[str]) -> str:
    """Why a request is not one for a kubelet client certificate (Kubernetes' ValidateKubeletClientCSR); empty
    when it is."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    orgs = [a.value for a in request.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    if orgs != ["system:nodes"]:
        return "subject organization is not system:nodes"
    try:
        names = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        names = None
    if names is not None:
        for kind, word in ((x509.DNSName, "DNS"), (x509.RFC822Name, "Email"), (x509.IPAddress, "IP"),
                           (x509.UniformResourceIdentifier, "URI")):
            if names.get_values_for_type(kind):
                return f"{word} subjectAltNames are not allowed"
    if not common_name(request).startswith("system:node:"):
        return "subject common name does not begin with system:node:"
    if usages not in _KUBELET_USAGES:
        return "usages did not match [client auth digital signature key encipherment]"
    return ""


def client_usage_problem(usages: list[Any]) -> str:
    """Why usages do not make a client certificate (Kubernetes' validAPIServerClientUsages); empty when they do."""
    for usage in usages:
        if usage not in ("digital signature", "key encipherment", "client auth"):
            return f"invalid usage for client certificate: {usage}"
    if "client auth" not in usages:
        return "missing required usage for client certificate: client auth"
    return ""


def common_name(request: x509.CertificateSigningRequest) -> str:
    from cryptography.x509.oid import NameOID

    names = request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


def _spec(csr: Obj) -> Obj:
    spec = csr.get("spec")
    return spec if isinstance(spec, dict) else {}


def _settled(csr: Obj) -> bool:
    return bool((csr.get("status") or {}).get("certificate")) or condition_of(csr, FAILED) is not None


class CSRSigningController(Controller):
    name = "csrsigning"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 1, clock: Clock | None = None,
                 recorder: Recorder | None = None, *, signing: tuple[Path, Path] | None = None,
                 duration_seconds: int = DEFAULT_DURATION_SECONDS) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.signing = signing
        self.duration_seconds = duration_seconds
        self._ca: Any = None
        self.csrs = factory.informer(CSRS)
        self.csrs.add_handlers(self.enqueue, lambda _old, new: self.enqueue(new))

    def _authority(self) -> Any:
        if self._ca is None and self.signing is not None:
            from minik.pki.ca import CertificateAuthority, load_cert, load_key

            cert, key = self.signing
            self._ca = CertificateAuthority(load_cert(cert.read_bytes()), load_key(key.read_bytes()))
        return self._ca

    async def sync(self, key: str) -> None:
        csr = self.csrs.get(key)
        if csr is None or condition_of(csr, APPROVED) is None or condition_of(csr, DENIED) is not None or \
                _settled(csr):
            return
        spec = _spec(csr)
        signer = spec.get("signerName")
        if signer not in (KUBE_APISERVER_CLIENT, KUBE_APISERVER_CLIENT_KUBELET):
            return
        authority = self._authority()
        if authority is None:
            self.log.info("no cluster signing key: approved request left unsigned", csr=key)
            return
        name = csr["metadata"]["name"]
        try:
            request = decode_request(csr)
        except ValueError as exc:
            await self._fail(csr, f'unable to parse csr "{name}": {exc}')
            return
        usages = [str(u) for u in spec.get("usages") or []]
        problem = kubelet_client_problem(request, set(usages)) if signer == KUBE_APISERVER_CLIENT_KUBELET else \
            client_usage_problem(usages)
        if problem:
            await self._fail(csr, problem)
            return
        seconds = spec.get("expirationSeconds")
        duration = min(int(seconds), self.duration_seconds) if isinstance(seconds, int) else self.duration_seconds
        certificate = authority.sign_csr(request, usages, duration)
        updated = copy.deepcopy(csr)
        updated.setdefault("status", {})["certificate"] = base64.b64encode(certificate).decode()
        await self.client.update_status(CSRS, updated)
        self.log.info("signed certificate", csr=name, signer=signer, subject=common_name(request))

    async def _fail(self, csr: Obj, message: str) -> None:
        updated = copy.deepcopy(csr)
        conditions = updated.setdefault("status", {}).setdefault("conditions", [])
        now = now_rfc3339()
        conditions.append({"type": FAILED, "status": "True", "reason": "SignerValidationFailure", "message": message,
                           "lastUpdateTime": now, "lastTransitionTime": now})
        await self.client.update_status(CSRS, updated)
        self.log.info("refused to sign", csr=csr["metadata"]["name"], reason=message)


#: (subresource the requestor needs "create" on, the approval's message), tried in this order
_RECOGNIZERS = (("selfnodeclient", "Auto approving self kubelet client certificate after SubjectAccessReview."),
                ("nodeclient", "Auto approving kubelet client certificate after SubjectAccessReview."))


class CSRApprovingController(Controller):
    name = "csrapproving"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 1, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.csrs = factory.informer(CSRS)
        self.csrs.add_handlers(self.enqueue, lambda _old, new: self.enqueue(new))

    async def sync(self, key: str) -> None:
        csr = self.csrs.get(key)
        if csr is None or _settled(csr) or condition_of(csr, APPROVED) is not None or \
                condition_of(csr, DENIED) is not None:
            return
        spec = _spec(csr)
        if spec.get("signerName") != KUBE_APISERVER_CLIENT_KUBELET:
            return
        try:
            request = decode_request(csr)
        except ValueError:
            return
        if kubelet_client_problem(request, {str(u) for u in spec.get("usages") or []}):
            return
        for subresource, message in _RECOGNIZERS:
            if subresource == "selfnodeclient" and spec.get("username") != common_name(request):
                continue
            if await self._allowed(spec, subresource):
                await self._approve(csr, message)
                return
        self.log.info("kubelet client certificate request not approved: its requestor may not create "
                      "certificatesigningrequests/nodeclient", csr=key, requestor=spec.get("username"))

    async def _allowed(self, spec: Obj, subresource: str) -> bool:
        review: Obj = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
            "user": spec.get("username") or "", "groups": list(spec.get("groups") or []),
            "resourceAttributes": {"group": "certificates.k8s.io", "resource": "certificatesigningrequests",
                                   "verb": "create", "subresource": subresource, "version": "*"}}}
        if spec.get("uid"):
            review["spec"]["uid"] = spec["uid"]
        if spec.get("extra"):
            review["spec"]["extra"] = spec["extra"]
        answer = await self.client.create("subjectaccessreviews.authorization.k8s.io", review)
        return bool((answer.get("status") or {}).get("allowed"))

    async def _approve(self, csr: Obj, message: str) -> None:
        updated = copy.deepcopy(csr)
        now = now_rfc3339()
        updated.setdefault("status", {}).setdefault("conditions", []).append({
            "type": APPROVED, "status": "True", "reason": "AutoApproved", "message": message,
            "lastUpdateTime": now, "lastTransitionTime": now})
        try:
            await self.client.update(CSRS, updated, subresource="approval")
        except StatusError as exc:
            if exc.code != 409:
                raise
            self.enqueue(csr)
            return
        self.log.info("approved kubelet client certificate", csr=csr["metadata"]["name"])
