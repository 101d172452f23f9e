"""The admission steps of CertificateSigningRequests, as Kubernetes has them:

- the requestor's identity: on create, spec.username, uid, groups and extra are the requesting user's, whatever
  the body says (Kubernetes' strategy sets them; minik's strategies see no user, so this step does);
- CertificateApproval: approving or denying (the ``approval`` subresource) needs the ``approve`` verb on the
  ``signers`` resource of certificates.k8s.io named by the request's signerName (or ``DOMAIN/*``);
- CertificateSigning: writing a certificate (the ``status`` subresource) needs the ``sign`` verb likewise;
- CertificateSubjectRestriction: the kube-apiserver-client signer may not be asked for the system:masters group.
"""

from __future__ import annotations

from typing import Any

from minik.api.errors import StatusError, forbidden
from minik.api.kinds.certificates import KUBE_APISERVER_CLIENT, KUBE_APISERVER_CLIENT_KUBELET, decode_request
from minik.api.kinds.common import dict_at
from minik.apiserver.admission.base import Attributes
from minik.apiserver.authorization import Authorizer, AuthzAttributes, Decision
from minik.apiserver.request import User

Obj = dict[str, Any]

GROUP = "certificates.k8s.io"
MASTERS = "system:masters"
NODE_PREFIX = "system:node:"


def _is_csr(attrs: Attributes) -> bool:
    return attrs.resource.group == GROUP and attrs.resource.plural == "certificatesigningrequests"


def _forbidden(attrs: Attributes, reason: str) -> StatusError:
    return forbidden(f'certificatesigningrequests.{GROUP} "{attrs.name}" is forbidden: {reason}',
                     "certificatesigningrequests", GROUP, attrs.name)


class CertificateSigningRequestIdentity:
    """Stamps the requesting user into a new CertificateSigningRequest."""

    name = "CertificateSigningRequestIdentity"

    async def admit(self, attrs: Attributes) -> None:
        if not _is_csr(attrs) or attrs.operation != "CREATE" or attrs.subresource or attrs.obj is None:
            return
        spec = attrs.obj.get("spec")
        if not isinstance(spec, dict):
            return
        user = attrs.user
        for key in ("username", "uid", "groups", "extra"):
            spec.pop(key, None)
        spec["username"] = user.name
        if user.uid:
            spec["uid"] = user.uid
        if user.groups:
            spec["groups"] = list(user.groups)
        if user.extra:
            spec["extra"] = {key: list(values) for key, values in user.extra}


async def allowed_for_signer(authorizer: Authorizer, user: User, verb: str, signer: str) -> bool:
    """Whether ``user`` may ``verb`` (approve, sign) for ``signer``: on its name, or on ``DOMAIN/*``."""
    names = [signer]
    if "/" in signer:
        names.append(signer.split("/", 1)[0] + "/*")
    for name in names:
        decision, _ = await authorizer.authorize(user, AuthzAttributes(verb, GROUP, "signers", name=name))
        if decision is Decision.ALLOW:
            return True
    return False


class CertificateApproval:
    name = "CertificateApproval"

    def __init__(self, authorizer: Authorizer) -> None:
        self._authorizer = authorizer

    async def validate(self, attrs: Attributes) -> None:
        if not _is_csr(attrs) or attrs.subresource != "approval" or attrs.operation != "UPDATE":
            return
        signer = str(dict_at(attrs.obj or {}, "spec").get("signerName") or "")
        if not await allowed_for_signer(self._authorizer, attrs.user, "approve", signer):
            raise _forbidden(attrs, f'user not permitted to approve requests with signerName "{signer}"')


class CertificateSigning:
    name = "CertificateSigning"

    def __init__(self, authorizer: Authorizer) -> None:
        self._authorizer = authorizer

    async def validate(self, attrs: Attributes) -> None:
        if not _is_csr(attrs) or attrs.subresource != "status" or attrs.operation != "UPDATE":
            return
        certificate = dict_at(attrs.obj or {}, "status").get("certificate")
        if certificate == dict_at(attrs.old or {}, "status").get("certificate"):
            return
        signer = str(dict_at(attrs.obj or {}, "spec").get("signerName") or "")
        if not await allowed_for_signer(self._authorizer, attrs.user, "sign", signer):
            raise _forbidden(attrs, f'user not permitted to sign requests with signerName "{signer}"')


class CertificateSubjectRestriction:
    name = "CertificateSubjectRestriction"

    async def validate(self, attrs: Attributes) -> None:
        if not _is_csr(attrs) or attrs.operation != "CREATE" or attrs.subresource or attrs.obj is None:
            return
        if dict_at(attrs.obj, "spec").get("signerName") != KUBE_APISERVER_CLIENT:
            return
        from cryptography.x509.oid import NameOID

        try:
            request = decode_request(attrs.obj)
        except ValueError:
            return  # validation has refused it already
        groups = [a.value for a in request.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        if MASTERS in groups:
            raise _forbidden(attrs, f"use of {KUBE_APISERVER_CLIENT} signer with {MASTERS} group is not allowed")


class ReservedNodeNames:
    """minik's own step: no one but an admin may ask for a kubelet client certificate of a node the cluster runs
    itself (the local node of `minik up`, its simulated nodes), which the join endpoint refuses too; a bootstrap
    token would otherwise get that node's identity through the auto-approver."""

    name = "ReservedNodeNames"

    def __init__(self, own_nodes: frozenset[str]) -> None:
        self._own = own_nodes

    async def validate(self, attrs: Attributes) -> None:
        if not self._own or not _is_csr(attrs) or attrs.operation != "CREATE" or attrs.subresource or \
                attrs.obj is None or MASTERS in attrs.user.groups:
            return
        if dict_at(attrs.obj, "spec").get("signerName") != KUBE_APISERVER_CLIENT_KUBELET:
            return
        from cryptography.x509.oid import NameOID

        try:
            request = decode_request(attrs.obj)
        except ValueError:
            return
        names = [str(a.value) for a in request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
        node = names[0].removeprefix(NODE_PREFIX) if names and names[0].startswith(NODE_PREFIX) else ""
        if node in self._own:
            raise _forbidden(attrs, f'node "{node}" is one this cluster runs itself: no certificate may be asked '
                                    f"for it")
