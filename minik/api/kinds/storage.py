"""Storage kinds: PersistentVolume and PersistentVolumeClaim (core/v1) and StorageClass (storage.k8s.io/v1).

Defaults and validation as Kubernetes' (pkg/apis/core/validation and pkg/apis/storage/validation): access modes,
capacity and requests as quantities, one volume source per PV, node affinity for local volumes, the spec of a claim
immutable once made except for its requested size (which may only grow once bound), its volumeName set once and
its storageClassName set once when it had none; a StorageClass's provisioner, parameters, reclaim policy and
binding mode fixed at creation. Binding (spec.claimRef, spec.volumeName, the phases) is the PV binder's
(minik.controllers.volumebinder); the finalizers come from the StorageObjectInUseProtection admission plugin.
"""

from __future__ import annotations

from typing import Any

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj, dict_at, ensure_dict, set_default
from minik.api.quantity import parse_quantity
from minik.api.strategy import Strategy
from minik.api.timestamps import now_rfc3339

__all__ = ["ACCESS_MODES", "DEFAULT_CLASS_ANNOTATIONS", "PersistentVolumeClaimStrategy", "PersistentVolumeStrategy",
           "StorageClassStrategy", "access_modes_string", "is_default_class", "storage_request"]

READ_WRITE_ONCE, READ_ONLY_MANY, READ_WRITE_MANY, READ_WRITE_ONCE_POD = (
    "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
ACCESS_MODES = (READ_WRITE_ONCE, READ_ONLY_MANY, READ_WRITE_MANY, READ_WRITE_ONCE_POD)
#: how kubectl abbreviates access modes, in the order it prints them
_ABBREVIATIONS = {READ_WRITE_ONCE: "RWO", READ_ONLY_MANY: "ROX", READ_WRITE_MANY: "RWX", READ_WRITE_ONCE_POD: "RWOP"}
VOLUME_MODES = ("Block", "Filesystem")
PV_RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
CLASS_RECLAIM_POLICIES = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
PV_PHASES = ("Pending", "Available", "Bound", "Released", "Failed")
PVC_PHASES = ("Pending", "Bound", "Lost")
#: the PV sources minik knows (any one of Kubernetes' is accepted; these are the ones it can mount)
_PV_SOURCES = ("hostPath", "local", "nfs", "csi", "iscsi", "fc", "rbd", "cephfs", "cinder", "glusterfs",
               "gcePersistentDisk", "awsElasticBlockStore", "azureDisk", "azureFile", "flexVolume", "flocker",
               "vsphereVolume", "quobyte", "portworxVolume", "scaleIO", "storageos", "photonPersistentDisk")
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")
_CLAIM_SPEC_IMMUTABLE = "spec is immutable after creation except resources.requests and volumeAttributesClassName " \
                        "for bound claims"


def access_modes_string(modes: Any) -> str:
    """kubectl's GetAccessModesAsString: ``RWO,ROX`` in a fixed order, whatever the order given."""
    given = set(modes) if isinstance(modes, list) else set()
    return ",".join(short for mode, short in _ABBREVIATIONS.items() if mode in given)


def is_default_class(storage_class: Obj) -> bool:
    annotations = dict_at(dict_at(storage_class, "metadata"), "annotations")
    return any(annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS)


def storage_request(claim: Obj) -> str | None:
    """spec.resources.requests.storage of a claim (None when absent)."""
    value = dict_at(dict_at(dict_at(claim, "spec"), "resources"), "requests").get("storage")
    return str(value) if value is not None else None


# -- shared rules ---------------------------------------------------------------------------------------------------
def _validate_access_modes(modes: Any, path: str, required_message: str) -> Causes:
    if not modes:
        return [v.required(path, required_message)]
    if not isinstance(modes, list):
        return [v.type_invalid(path, modes, "must be a list")]
    causes = [v.not_supported(path, mode, list(ACCESS_MODES)) for mode in modes if mode not in ACCESS_MODES]
    if READ_WRITE_ONCE_POD in modes and len(modes) > 1:
        causes.append(v.forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return causes


def _validate_storage_quantity(value: Any, path: str, *, positive: bool) -> Causes:
    try:
        amount = parse_quantity(str(value))
    except ValueError as exc:
        return [v.invalid(path, value, str(exc))]
    if positive and amount <= 0:
        return [v.invalid(path, str(value), "must be greater than zero")]
    if amount < 0:
        return [v.invalid(path, str(value), "must be greater than or equal to 0")]
    return []


def _validate_class_name(value: Any, path: str) -> Causes:
    if value is None or value == "":
        return []
    if not isinstance(value, str):
        return [v.type_invalid(path, value, "must be a string")]
    return [v.invalid(path, value, m) for m in v.is_dns1123_subdomain(value)]


def _validate_volume_mode(value: Any, path: str) -> Causes:
    return [] if value is None else v.validate_enum(value, path, VOLUME_MODES)


def _validate_node_affinity(affinity: Any, path: str) -> Causes:
    """A PV's spec.nodeAffinity: a required node selector with at least one term of valid requirements."""
    if not isinstance(affinity, dict):
        return [v.type_invalid(path, affinity, "must be an object")]
    required = affinity.get("required")
    at = v.child(path, "required")
    if not isinstance(required, dict):
        return [v.required(at, "must specify required node constraints")]
    terms = required.get("nodeSelectorTerms")
    terms_at = v.child(at, "nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return [v.required(terms_at, "must have at least one node selector term")]
    causes: Causes = []
    for i, term in enumerate(terms):
        for key in ("matchExpressions", "matchFields"):
            for j, requirement in enumerate(term.get(key) or [] if isinstance(term, dict) else []):
                req_at = v.index(v.child(v.index(terms_at, i), key), j)
                if not isinstance(requirement, dict) or not requirement.get("key"):
                    causes.append(v.required(v.child(req_at, "key"), ""))
                    continue
                causes += v.validate_enum(requirement.get("operator"), v.child(req_at, "operator"),
                                          ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
                values = requirement.get("values") or []
                if requirement.get("operator") in ("In", "NotIn") and not values:
                    causes.append(v.required(v.child(req_at, "values"),
                                             "must be specified when `operator` is 'In' or 'NotIn'"))
                elif requirement.get("operator") in ("Exists", "DoesNotExist") and values:
                    causes.append(v.forbidden(v.child(req_at, "values"),
                                              "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    return causes


def _validate_path(value: Any, path: str) -> Causes:
    if not value:
        return [v.required(path, "")]
    if not isinstance(value, str):
        return [v.type_invalid(path, value, "must be a string")]
    if ".." in value.split("/"):
        return [v.invalid(path, value, "must not contain '..'")]
    return []


# -- PersistentVolume -----------------------------------------------------------------------------------------------
class PersistentVolumeStrategy(Strategy):
    has_status = True
    namespace_scoped = False

    def initial_status(self, obj: Obj) -> Obj | None:
        """A new PV is Pending until the binder looks at it (Kubernetes' persistentvolume strategy)."""
        return {"phase": "Pending", "lastPhaseTransitionTime": now_rfc3339()}

    def default(self, obj: Obj) -> None:
        spec = ensure_dict(obj, "spec")
        if spec is None:
            return
        set_default(spec, "persistentVolumeReclaimPolicy", "Retain")
        set_default(spec, "volumeMode", "Filesystem")

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return causes + [v.required("spec", "")]
        causes += _validate_access_modes(spec.get("accessModes"), "spec.accessModes", "")
        capacity = spec.get("capacity")
        if not capacity:
            causes.append(v.required("spec.capacity", ""))
        elif not isinstance(capacity, dict) or "storage" not in capacity or len(capacity) > 1:
            causes.append(v.not_supported("spec.capacity", capacity, ["storage"]))
        else:
            causes += _validate_storage_quantity(capacity["storage"], "spec.capacity[storage]", positive=False)
        causes += v.validate_enum(spec.get("persistentVolumeReclaimPolicy"), "spec.persistentVolumeReclaimPolicy",
                                  PV_RECLAIM_POLICIES, required_=False)
        causes += _validate_class_name(spec.get("storageClassName"), "spec.storageClassName")
        causes += _validate_volume_mode(spec.get("volumeMode"), "spec.volumeMode")
        sources = [s for s in _PV_SOURCES if spec.get(s) is not None]
        if not sources:
            causes.append(v.required("spec", "must specify a volume type"))
        elif len(sources) > 1:
            causes.append(v.forbidden(v.child("spec", sources[1]), "may not specify more than 1 volume type"))
        if isinstance(spec.get("hostPath"), dict):
            causes += _validate_path(spec["hostPath"].get("path"), "spec.hostPath.path")
        if isinstance(spec.get("local"), dict):
            causes += _validate_path(spec["local"].get("path"), "spec.local.path")
            if spec.get("nodeAffinity") is None:
                causes.append(v.required("spec.nodeAffinity", "Local volume requires node affinity"))
        if spec.get("nodeAffinity") is not None:
            causes += _validate_node_affinity(spec["nodeAffinity"], "spec.nodeAffinity")
        claim = spec.get("claimRef")
        if claim is not None:
            if not isinstance(claim, dict):
                causes.append(v.type_invalid("spec.claimRef", claim, "must be an object"))
            elif not claim.get("name"):
                causes.append(v.required("spec.claimRef.name", ""))
        status = obj.get("status")
        if isinstance(status, dict) and status.get("phase") is not None:
            causes += v.validate_enum(status.get("phase"), "status.phase", PV_PHASES)
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        causes = super().validate_update(obj, old)
        spec, old_spec = dict_at(obj, "spec"), dict_at(old, "spec")
        if {s: spec.get(s) for s in _PV_SOURCES} != {s: old_spec.get(s) for s in _PV_SOURCES}:
            causes.append(v.forbidden("spec.persistentvolumesource",
                                      "spec.persistentvolumesource is immutable after creation"))
        causes += v.validate_immutable(spec.get("volumeMode"), old_spec.get("volumeMode"), "spec.volumeMode")
        if old_spec.get("nodeAffinity") is not None:
            causes += v.validate_immutable(spec.get("nodeAffinity"), old_spec.get("nodeAffinity"),
                                           "spec.nodeAffinity")
        return causes

    def field_set(self, obj: Obj) -> dict[str, str]:
        return {"metadata.name": dict_at(obj, "metadata").get("name", "")}


# -- PersistentVolumeClaim ------------------------------------------------------------------------------------------
class PersistentVolumeClaimStrategy(Strategy):
    has_status = True

    def initial_status(self, obj: Obj) -> Obj | None:
        return {"phase": "Pending"}

    def default(self, obj: Obj) -> None:
        spec = ensure_dict(obj, "spec")
        if spec is not None:
            set_default(spec, "volumeMode", "Filesystem")

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return causes + [v.required("spec", "")]
        return causes + validate_claim_spec(spec, "spec") + _validate_claim_status(obj.get("status"))

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        causes = super().validate_update(obj, old)
        spec, old_spec = dict(dict_at(obj, "spec")), dict(dict_at(old, "spec"))
        if not old_spec.get("volumeName"):  # set once, by the binder
            old_spec["volumeName"] = spec.get("volumeName")
        if old_spec.get("storageClassName") is None:  # set once, when a default class appears
            old_spec["storageClassName"] = spec.get("storageClassName")
        old_spec.pop("volumeAttributesClassName", None)
        spec.pop("volumeAttributesClassName", None)
        bound = dict_at(obj, "status").get("phase") == "Bound"
        new_size, old_size = storage_request(obj), storage_request(old)
        if bound and new_size is not None:
            spec["resources"] = _with_request(spec.get("resources"), old_size)
        if {k: val for k, val in spec.items() if val is not None} != \
                {k: val for k, val in old_spec.items() if val is not None}:
            causes.append(v.forbidden("spec", _CLAIM_SPEC_IMMUTABLE))
        elif bound and new_size is not None and old_size is not None and _smaller(new_size, old_size):
            causes.append(v.forbidden("spec.resources.requests.storage", "field can not be less than previous value"))
        return causes

    def validate_status_update(self, obj: Obj, old: Obj) -> Causes:
        return v.validate_object_meta_update(obj.get("metadata"), old.get("metadata")) + \
            _validate_claim_status(obj.get("status"))

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["spec.volumeName"] = str(dict_at(obj, "spec").get("volumeName") or "")
        return fields


def _with_request(resources: Any, size: str | None) -> Obj:
    out = dict(resources) if isinstance(resources, dict) else {}
    requests = dict(dict_at(out, "requests"))
    if size is None:
        requests.pop("storage", None)
    else:
        requests["storage"] = size
    out["requests"] = requests
    return out


def _smaller(new: str, old: str) -> bool:
    try:
        return parse_quantity(new) < parse_quantity(old)
    except ValueError:
        return False


def validate_claim_spec(spec: Obj, path: str) -> Causes:
    """A PersistentVolumeClaimSpec (a claim's, or a StatefulSet's volumeClaimTemplates')."""
    causes = _validate_access_modes(spec.get("accessModes"), v.child(path, "accessModes"),
                                    "at least 1 access mode is required")
    if spec.get("selector") is not None:
        causes += v.validate_label_selector(spec["selector"], v.child(path, "selector"))
    resources = spec.get("resources")
    requests = dict_at(resources, "requests")
    at = v.index(v.child(path, "resources"), "storage")
    if "storage" not in requests:
        causes.append(v.required(at, ""))
    else:
        causes += _validate_storage_quantity(requests["storage"], at, positive=True)
    limits = dict_at(resources, "limits")
    if "storage" in limits:
        causes += _validate_storage_quantity(limits["storage"], v.index(v.child(path, "resources", "limits"),
                                                                        "storage"), positive=False)
    causes += _validate_class_name(spec.get("storageClassName"), v.child(path, "storageClassName"))
    causes += _validate_volume_mode(spec.get("volumeMode"), v.child(path, "volumeMode"))
    return causes


def _validate_claim_status(status: Any) -> Causes:
    if not isinstance(status, dict):
        return []
    causes: Causes = []
    if status.get("phase") is not None:
        causes += v.validate_enum(status.get("phase"), "status.phase", PVC_PHASES)
    if status.get("accessModes"):
        causes += _validate_access_modes(status["accessModes"], "status.accessModes", "")
    capacity = dict_at(status, "capacity")
    if "storage" in capacity:
        causes += _validate_storage_quantity(capacity["storage"], "status.capacity[storage]", positive=False)
    return causes


# -- StorageClass ---------------------------------------------------------------------------------------------------
#: Kubernetes' limits on a class's parameters
_MAX_PARAMETERS = 512
_MAX_PARAMETERS_SIZE = 256 * 1024


class StorageClassStrategy(Strategy):
    namespace_scoped = False

    def default(self, obj: Obj) -> None:
        set_default(obj, "reclaimPolicy", "Delete")
        set_default(obj, "volumeBindingMode", "Immediate")

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        provisioner = obj.get("provisioner")
        if not provisioner:
            causes.append(v.required("provisioner", ""))
        elif not isinstance(provisioner, str):
            causes.append(v.type_invalid("provisioner", provisioner, "must be a string"))
        else:
            causes += [v.invalid("provisioner", provisioner, m) for m in v.is_qualified_name(provisioner.lower())]
        parameters = obj.get("parameters")
        if parameters is not None:
            if not isinstance(parameters, dict):
                causes.append(v.type_invalid("parameters", parameters, "must be an object"))
            else:
                if len(parameters) > _MAX_PARAMETERS:
                    causes.append(v.too_long("parameters", _MAX_PARAMETERS))
                if sum(len(k) + len(str(val)) for k, val in parameters.items()) > _MAX_PARAMETERS_SIZE:
                    causes.append(v.too_long("parameters", _MAX_PARAMETERS_SIZE))
                if any(not k for k in parameters):
                    causes.append(v.invalid("parameters", parameters, "key cannot be empty"))
        causes += v.validate_enum(obj.get("reclaimPolicy"), "reclaimPolicy", CLASS_RECLAIM_POLICIES,
                                  required_=False)
        causes += v.validate_enum(obj.get("volumeBindingMode"), "volumeBindingMode", BINDING_MODES)
        allow = obj.get("allowVolumeExpansion")
        if allow is not None and not isinstance(allow, bool):
            causes.append(v.type_invalid("allowVolumeExpansion", allow, "must be a boolean"))
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        causes = super().validate_update(obj, old)
        if (obj.get("parameters") or {}) != (old.get("parameters") or {}):
            causes.append(v.forbidden("parameters", "updates to parameters are forbidden."))
        if obj.get("provisioner") != old.get("provisioner"):
            causes.append(v.forbidden("provisioner", "updates to provisioner are forbidden."))
        if obj.get("reclaimPolicy") != old.get("reclaimPolicy"):
            causes.append(v.forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
        causes += v.validate_immutable(obj.get("volumeBindingMode"), old.get("volumeBindingMode"),
                                       "volumeBindingMode")
        return causes
