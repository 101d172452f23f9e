"""The certificates.k8s.io group: CertificateSigningRequest. A client asks for a certificate (spec.request, a PEM
CSR) from a signer (spec.signerName); someone with the right approves or denies it through the ``approval``
subresource; the signer writes the certificate into status through ``status``. The API server stamps who asked
(spec.username, uid, groups, extra: minik.apiserver.admission.certificates); the signer and the kubelet client
auto-approver are controllers (minik.controllers.certificates).

Each write path changes only its part, as Kubernetes' three strategies do: the main resource its metadata, the
approval subresource status.conditions, the status subresource the status (the Approved and Denied conditions
kept as they were).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING, Any

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj, dict_at, dicts_at
from minik.api.strategy import Strategy
from minik.api.timestamps import now_rfc3339

if TYPE_CHECKING:  # cryptography is imported when a request is first read: starting a cluster does without it
    from cryptography import x509

__all__ = ["CertificateSigningRequestStrategy", "KUBE_APISERVER_CLIENT", "KUBE_APISERVER_CLIENT_KUBELET",
           "KUBELET_SERVING", "LEGACY_UNKNOWN", "USAGES", "APPROVED", "DENIED", "FAILED", "decode_request",
           "condition_of"]

KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
KUBE_APISERVER_CLIENT_KUBELET = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
LEGACY_UNKNOWN = "kubernetes.io/legacy-unknown"
APPROVED, DENIED, FAILED = "Approved", "Denied", "Failed"
CONDITION_TYPES = (APPROVED, DENIED, FAILED)

USAGES = ("signing", "digital signature", "content commitment", "key encipherment", "key agreement",
          "data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth",
          "client auth", "code signing", "email protection", "s/mime", "ipsec end system", "ipsec tunnel",
          "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc")
MIN_EXPIRATION_SECONDS = 600

_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.S)


def _b64(value: Any) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        return None


def decode_request(csr: Obj) -> x509.CertificateSigningRequest:
    """The x509 request of a CSR object; ValueError with Kubernetes' message when it is not one."""
    from cryptography import x509

    pem = _b64(dict_at(csr, "spec").get("request")) or b""
    block = _PEM_BLOCK.search(pem)
    if block is None or block.group(1) != b"CERTIFICATE REQUEST":
        raise ValueError("PEM block type must be CERTIFICATE REQUEST")
    try:
        request = x509.load_pem_x509_csr(block.group(0))
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    if not request.is_signature_valid:
        raise ValueError("x509: ECDSA verification failure")
    return request


def condition_of(csr: Obj, type_: str) -> Obj | None:
    for condition in dicts_at(dict_at(csr, "status"), "conditions"):
        if condition.get("type") == type_:
            return condition
    return None


def _validate_signer_name(name: Any, path: str) -> Causes:
    if not name:
        return [v.required(path)]
    name = str(name)
    segments = name.split("/")
    if len(segments) != 2:
        return [v.invalid(path, name, "must be a fully qualified domain and path of the form "
                                      "'example.com/signer-name'")]
    domain, rest = segments
    causes: Causes = []
    if len(domain) > v.DNS1123_SUBDOMAIN_MAX:
        causes.append(v.too_long(path, v.DNS1123_SUBDOMAIN_MAX))
    labels = domain.split(".")
    for label in labels:
        problems = v.is_dns1123_label(label)
        if problems:
            causes += [v.invalid(path, domain, f'validating label "{label}": {m}') for m in problems]
            break
    if len(labels) < 2:
        causes.append(v.invalid(path, domain, "should be a domain with at least two segments separated by dots"))
    if not rest:
        causes.append(v.invalid(path, name, "validating path: must not be empty"))
    else:
        causes += [v.invalid(path, rest, f"validating path: {m}") for m in v.is_valid_path_segment_name(rest)]
    return causes


def _validate_usages(usages: Any) -> Causes:
    if not usages:
        return [v.required("spec.usages", "usages must be provided")]
    if not isinstance(usages, list):
        return [v.type_invalid("spec.usages", usages, "must be a list")]
    causes: Causes = []
    seen: set[Any] = set()
    for i, usage in enumerate(usages):
        at = v.index("spec.usages", i)
        if usage not in USAGES:
            causes.append(v.not_supported(at, usage, sorted(USAGES)))
        if usage in seen:
            causes.append(v.duplicate(at, usage))
        seen.add(usage)
    return causes


def _validate_conditions(status: Obj) -> Causes:
    causes: Causes = []
    seen: dict[str, int] = {}
    for i, condition in enumerate(dicts_at(status, "conditions")):
        at = v.index("status.conditions", i)
        kind = condition.get("type")
        if not kind:
            causes.append(v.required(v.child(at, "type")))
        if condition.get("status") not in ("True", "False", "Unknown"):
            causes.append(v.not_supported(v.child(at, "status"), condition.get("status") or "",
                                          ["False", "True", "Unknown"]))
        if kind in (APPROVED, DENIED) and condition.get("status") not in (None, "True"):
            causes.append(v.not_supported(v.child(at, "status"), condition.get("status"), ["True"]))
        if kind in CONDITION_TYPES:
            if kind in seen:
                causes.append(v.duplicate(v.child(at, "type"), kind))
            seen[str(kind)] = i
    if APPROVED in seen and DENIED in seen:
        causes.append(v.invalid("status.conditions", f"{APPROVED}, {DENIED}",
                                "Approved and Denied conditions are mutually exclusive"))
    return causes


def _validate_certificate(status: Obj) -> Causes:
    certificate = status.get("certificate")
    if not certificate:
        return []
    pem = _b64(certificate)
    if pem is None:
        return [v.invalid("status.certificate", "<certificate data>", "must be base64 encoded")]
    blocks = _PEM_BLOCK.findall(pem)
    if not blocks:
        return [v.invalid("status.certificate", "<certificate data>", "must contain at least one CERTIFICATE PEM "
                                                                      "block")]
    for kind, _body in blocks:
        if kind != b"CERTIFICATE":
            return [v.invalid("status.certificate", "<certificate data>",
                              f"only CERTIFICATE PEM blocks are allowed, found \"{kind.decode()}\"")]
    from cryptography import x509

    try:
        x509.load_pem_x509_certificates(pem)
    except ValueError as exc:
        return [v.invalid("status.certificate", "<certificate data>", str(exc))]
    return []


def _stamp_times(new: Obj, old: Obj) -> None:
    """Kubernetes' populateConditionTimestamps: a condition without times gets now, a condition whose status did
    not change keeps its lastTransitionTime."""
    now = now_rfc3339()
    for condition in dicts_at(dict_at(new, "status"), "conditions"):
        condition.setdefault("lastUpdateTime", now)
        if condition.get("lastUpdateTime") is None:
            condition["lastUpdateTime"] = now
        if not condition.get("lastTransitionTime"):
            before = condition_of(old, str(condition.get("type") or ""))
            if before is not None and before.get("status") == condition.get("status") and \
                    before.get("lastTransitionTime"):
                condition["lastTransitionTime"] = before["lastTransitionTime"]
            else:
                condition["lastTransitionTime"] = now


class CertificateSigningRequestStrategy(Strategy):
    namespace_scoped = False
    has_status = True

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        """A write to the main resource changes metadata only: spec is immutable, status has its subresources."""
        super().prepare_for_update(obj, old)
        if "spec" in old:
            obj["spec"] = old["spec"]

    def prepare_for_status_update(self, obj: Obj, old: Obj) -> None:
        """Status writes (the signer's) keep spec, and the Approved and Denied conditions as they were."""
        super().prepare_for_status_update(obj, old)
        status = obj.get("status")
        if isinstance(status, dict):
            kept = [c for c in dicts_at(dict_at(old, "status"), "conditions") if c.get("type") in (APPROVED, DENIED)]
            others = [c for c in dicts_at(status, "conditions") if c.get("type") not in (APPROVED, DENIED)]
            if kept or others:
                status["conditions"] = kept + others
            _stamp_times(obj, old)

    def prepare_for_subresource_update(self, subresource: str, obj: Obj, old: Obj) -> None:
        if subresource != "approval":
            super().prepare_for_subresource_update(subresource, obj, old)
            return
        self.prepare_for_approval(obj, old)

    def prepare_for_approval(self, obj: Obj, old: Obj) -> None:
        """Approval writes change status.conditions only."""
        conditions = dict_at(obj, "status").get("conditions")
        Strategy.prepare_for_status_update(self, obj, old)
        obj["status"] = dict(dict_at(old, "status"))
        if conditions is not None:
            obj["status"]["conditions"] = conditions
        elif "conditions" in obj["status"]:
            del obj["status"]["conditions"]
        _stamp_times(obj, old)

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return causes + [v.required("spec.request")]
        if not spec.get("request"):
            causes.append(v.required("spec.request"))
        else:
            try:
                decode_request(obj)
            except ValueError as exc:
                causes.append(v.invalid("spec.request", "<request data>", str(exc)))
        causes += _validate_signer_name(spec.get("signerName"), "spec.signerName")
        causes += _validate_usages(spec.get("usages"))
        seconds = spec.get("expirationSeconds")
        if seconds is not None and (not v.is_int(seconds) or seconds < MIN_EXPIRATION_SECONDS):
            causes.append(v.invalid("spec.expirationSeconds", seconds,
                                    "may not specify a duration less than 600 seconds (10 minutes)"))
        status = dict_at(obj, "status")
        return causes + _validate_conditions(status) + _validate_certificate(status)

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        causes = super().validate_update(obj, old)
        before = dict_at(old, "status").get("certificate")
        if before and dict_at(obj, "status").get("certificate") != before:
            causes.append(v.forbidden("status.certificate", "updates may not modify a certificate"))
        for kind in (APPROVED, DENIED):
            if condition_of(old, kind) is not None and condition_of(obj, kind) is None:
                causes.append(v.forbidden("status.conditions", f"updates may not remove a condition of type "
                                                               f"\"{kind}\""))
        return causes

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["spec.signerName"] = str(dict_at(obj, "spec").get("signerName") or "")
        return fields
