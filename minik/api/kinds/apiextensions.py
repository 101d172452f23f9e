"""apiextensions.k8s.io/v1 CustomResourceDefinition: its strategy, and the helpers that read a CRD (versions,
conditions, accepted names) for whoever serves what it declares.

As Kubernetes' CRD registry does: a create clears the status and records the storage version in
``status.storedVersions``; spec changes bump the generation and add a new storage version to storedVersions; the
first DELETE marks the CRD Terminating and adds the ``customresourcecleanup.apiextensions.k8s.io`` finalizer, which
the API server removes once every custom resource of the CRD is gone. Validation is in ``crdvalidation``.
"""

from __future__ import annotations

from typing import Any

from minik.api.kinds import crdvalidation
from minik.api.kinds.common import Causes, Obj, dict_at, dicts_at
from minik.api.strategy import Strategy
from minik.api.timestamps import now_rfc3339

__all__ = ["CustomResourceDefinitionStrategy", "GROUP", "CLEANUP_FINALIZER", "NAMES_ACCEPTED", "ESTABLISHED",
           "TERMINATING", "find_condition", "condition_true", "set_condition", "versions", "storage_version",
           "accepted_names"]

GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
NAMES_ACCEPTED, ESTABLISHED, TERMINATING = "NamesAccepted", "Established", "Terminating"


# -- reading a CRD ------------------------------------------------------------------------------------------------
def versions(crd: Obj) -> list[Obj]:
    return dicts_at(dict_at(crd, "spec"), "versions")


def storage_version(crd: Obj) -> str | None:
    return next((str(v.get("name")) for v in versions(crd) if v.get("storage") is True), None)


def find_condition(crd: Obj, type_: str) -> Obj | None:
    return next((c for c in dicts_at(dict_at(crd, "status"), "conditions") if c.get("type") == type_), None)


def condition_true(crd: Obj, type_: str) -> bool:
    found = find_condition(crd, type_)
    return found is not None and found.get("status") == "True"


def set_condition(crd: Obj, type_: str, status: str, reason: str, message: str) -> None:
    """Set a condition of ``crd`` (in place), its lastTransitionTime moving only when its status changes."""
    crd_status = crd.get("status")
    if not isinstance(crd_status, dict):
        crd["status"] = crd_status = {}
    conditions = crd_status.get("conditions")
    if not isinstance(conditions, list):
        crd_status["conditions"] = conditions = []
    found = next((c for c in conditions if isinstance(c, dict) and c.get("type") == type_), None)
    if found is None:
        conditions.append({"type": type_, "status": status, "lastTransitionTime": now_rfc3339(), "reason": reason,
                           "message": message})
        return
    if found.get("status") != status or not found.get("lastTransitionTime"):
        found["lastTransitionTime"] = now_rfc3339()
    found.update({"status": status, "reason": reason, "message": message})


def remove_condition(crd: Obj, type_: str) -> None:
    status = crd.get("status")
    if isinstance(status, dict) and isinstance(status.get("conditions"), list):
        status["conditions"] = [c for c in status["conditions"] if not (isinstance(c, dict) and c.get("type") == type_)]


def accepted_names(crd: Obj) -> Obj:
    """status.acceptedNames, each name falling back to spec.names' while none is accepted yet."""
    spec_names = dict_at(dict_at(crd, "spec"), "names")
    accepted = dict_at(dict_at(crd, "status"), "acceptedNames")
    out: Obj = dict(spec_names)
    out.update({k: v for k, v in accepted.items() if v})
    return out


def _add_stored_version(crd: Obj) -> None:
    version = storage_version(crd)
    if version is None:
        return
    status = crd.get("status")
    if not isinstance(status, dict):
        crd["status"] = status = {}
    stored = status.get("storedVersions")
    if not isinstance(stored, list):
        status["storedVersions"] = stored = []
    if version not in stored:
        stored.append(version)


# -- the strategy -------------------------------------------------------------------------------------------------
class CustomResourceDefinitionStrategy(Strategy):
    has_status = True
    tracks_generation = True
    namespace_scoped = False

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {}
        _add_stored_version(obj)

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        super().prepare_for_update(obj, old)
        _add_stored_version(obj)

    def spec_of(self, obj: Obj) -> Any:
        return obj.get("spec")

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        names = spec.get("names")
        if isinstance(names, dict):
            kind = names.get("kind")
            if not names.get("singular") and isinstance(kind, str):
                names["singular"] = kind.lower()
            if not names.get("listKind") and isinstance(kind, str) and kind:
                names["listKind"] = kind + "List"
        if spec.get("conversion") is None:
            spec["conversion"] = {"strategy": "None"}
        conversion = spec.get("conversion")
        if isinstance(conversion, dict):
            service = dict_at(dict_at(dict_at(conversion, "webhook"), "clientConfig"), "service")
            if service and service.get("port") is None:
                service["port"] = 443
        _add_stored_version(obj)

    def validate(self, obj: Obj) -> Causes:
        return crdvalidation.validate_crd(obj, None)

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        return crdvalidation.validate_crd(obj, old)

    def validate_status_update(self, obj: Obj, old: Obj) -> Causes:
        return crdvalidation.validate_crd_status(obj, old)

    def prepare_for_delete(self, obj: Obj) -> bool:
        """The first DELETE holds the CRD with the cleanup finalizer and says it is Terminating; the API server
        deletes its custom resources and then removes the finalizer."""
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or meta.get("deletionTimestamp"):
            return False
        finalizers = meta.get("finalizers")
        if not isinstance(finalizers, list):
            meta["finalizers"] = finalizers = []
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
        set_condition(obj, TERMINATING, "True", "InstanceDeletionPending",
                      "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon")
        return False
