"""The apiregistration.k8s.io group: APIService, which says who serves a group-version. Kubernetes' aggregator
lists every group-version the API server serves itself as a *local* APIService (``v1.``, ``v1.apps``: named
VERSION.GROUP, no service); an APIService with a service asks for a group-version to be proxied to it, which
minik does not do (minik.apiserver.apiservices keeps the local ones)."""

from __future__ import annotations

from typing import Any

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj, dict_at, expect_object
from minik.api.strategy import Strategy
from minik.api.timestamps import now_rfc3339

__all__ = ["APIServiceStrategy", "local_status"]

AVAILABLE = "Available"


def local_status() -> Obj:
    """A local APIService's status: always available."""
    return {"conditions": [{"type": AVAILABLE, "status": "True", "lastTransitionTime": now_rfc3339(),
                            "reason": "Local", "message": "Local APIServices are always available"}]}


def _int_field(spec: Obj, field: str) -> Any:
    value = spec.get(field)
    return value if v.is_int(value) else 0


class APIServiceStrategy(Strategy):
    namespace_scoped = False
    has_status = True
    name_rule = "path"

    def initial_status(self, obj: Obj) -> Obj | None:
        return local_status() if dict_at(obj, "spec").get("service") is None else None

    def default(self, obj: Obj) -> None:
        service = dict_at(obj, "spec").get("service")
        if isinstance(service, dict) and service.get("port") is None:
            service["port"] = 443

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if spec is not None and not isinstance(spec, dict):
            return causes + expect_object(spec, "spec")
        spec = spec or {}
        group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
        name = dict_at(obj, "metadata").get("name")
        required = f"{version}.{group}"
        if isinstance(name, str) and name and not v.is_valid_path_segment_name(name) and name != required:
            causes.append(v.invalid("metadata.name", name, f'must be `spec.version+"."+spec.group`: "{required}"'))
        if not group and version != "v1":
            causes.append(v.required("spec.group", "only v1 may have an empty group and it better be legacy kube"))
        if group:
            causes += [v.invalid("spec.group", group, m) for m in v.is_dns1123_subdomain(group)]
        causes += [v.invalid("spec.version", version, m) for m in v.is_dns1035_label(version)]
        minimum = _int_field(spec, "groupPriorityMinimum")
        if not 0 < minimum <= 20000:
            causes.append(v.invalid("spec.groupPriorityMinimum", minimum, "must be positive and less than 20000"))
        priority = _int_field(spec, "versionPriority")
        if not 0 < priority <= 1000:
            causes.append(v.invalid("spec.versionPriority", priority, "must be positive and less than 1000"))
        service = spec.get("service")
        ca_bundle = spec.get("caBundle") or ""
        if service is None:
            if ca_bundle:
                causes.append(v.invalid("spec.caBundle", f"{len(str(ca_bundle)) * 3 // 4} bytes",
                                        "local APIServices may not have a caBundle"))
            if spec.get("insecureSkipTLSVerify") is True:
                causes.append(v.invalid("spec.insecureSkipTLSVerify", True,
                                        "local APIServices may not have insecureSkipTLSVerify"))
            return causes
        if not isinstance(service, dict):
            return causes + expect_object(service, "spec.service")
        if not service.get("namespace"):
            causes.append(v.required("spec.service.namespace"))
        if not service.get("name"):
            causes.append(v.required("spec.service.name"))
        if problems := v.is_valid_port_num(service.get("port")):
            causes.append(v.invalid("spec.service.port", service.get("port"),
                                    "port is not valid: " + ", ".join(problems)))
        if spec.get("insecureSkipTLSVerify") is True and ca_bundle:
            causes.append(v.invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"))
        return causes
