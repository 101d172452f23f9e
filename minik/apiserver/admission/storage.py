"""The storage admission plugins, as Kubernetes' of the same names:

- DefaultStorageClass: a new claim that names no class (spec.storageClassName absent, not "") gets the default
  StorageClass, the newest when several are marked default.
- StorageObjectInUseProtection: every new claim gets the ``kubernetes.io/pvc-protection`` finalizer and every new
  volume ``kubernetes.io/pv-protection``, which the protection controllers (minik.controllers.volumeprotection)
  remove once no pod uses the claim, no claim is bound to the volume.
- PersistentVolumeClaimResize: a bound claim's request may grow only when its class allows volume expansion.
"""

from __future__ import annotations

from typing import Any

from minik.api.errors import forbidden
from minik.api.kinds.storage import is_default_class, storage_request
from minik.api.quantity import parse_quantity
from minik.apiserver.admission.base import Attributes, ObjectReader

Obj = dict[str, Any]

STORAGE_GROUP, STORAGE_VERSION = "storage.k8s.io", "v1"
PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"


def _is_core(attrs: Attributes, plural: str) -> bool:
    return attrs.resource.plural == plural and not attrs.resource.group and not attrs.subresource


async def default_class(reader: ObjectReader) -> Obj | None:
    """The default StorageClass: of those annotated default, the newest (then the first by name), as Kubernetes
    picks it since 1.28."""
    marked = [sc for sc in await reader.list(STORAGE_GROUP, STORAGE_VERSION, "storageclasses",
                                             containing=b"is-default-class") if is_default_class(sc)]
    if not marked:
        return None
    marked.sort(key=lambda sc: (str(sc["metadata"].get("creationTimestamp") or ""),
                                _reverse(str(sc["metadata"].get("name")))), reverse=True)
    return marked[0]


def _reverse(name: str) -> tuple[int, ...]:
    """A key that sorts names backwards, so that with reverse=True the first name wins a tie."""
    return tuple(-ord(c) for c in name)


class DefaultStorageClass:
    name = "DefaultStorageClass"

    def __init__(self, reader: ObjectReader) -> None:
        self._reader = reader

    async def admit(self, attrs: Attributes) -> None:
        if attrs.operation != "CREATE" or not _is_core(attrs, "persistentvolumeclaims"):
            return
        spec = (attrs.obj or {}).get("spec")
        if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
            return
        chosen = await default_class(self._reader)
        if chosen is not None:
            spec["storageClassName"] = chosen["metadata"]["name"]


class StorageObjectInUseProtection:
    name = "StorageObjectInUseProtection"

    async def admit(self, attrs: Attributes) -> None:
        if attrs.operation != "CREATE" or not isinstance(attrs.obj, dict):
            return
        if _is_core(attrs, "persistentvolumeclaims"):
            finalizer = PVC_PROTECTION
        elif _is_core(attrs, "persistentvolumes"):
            finalizer = PV_PROTECTION
        else:
            return
        meta = attrs.obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            return
        finalizers = meta.get("finalizers")
        if finalizers is None:
            finalizers = []
        if isinstance(finalizers, list) and finalizer not in finalizers:
            meta["finalizers"] = [*finalizers, finalizer]


class PersistentVolumeClaimResize:
    name = "PersistentVolumeClaimResize"

    def __init__(self, reader: ObjectReader) -> None:
        self._reader = reader

    async def validate(self, attrs: Attributes) -> None:
        if attrs.operation != "UPDATE" or not _is_core(attrs, "persistentvolumeclaims"):
            return
        new, old = attrs.obj or {}, attrs.old or {}
        if not _grows(storage_request(new), storage_request(old)) or \
                (old.get("status") or {}).get("phase") != "Bound":
            return
        class_name = (new.get("spec") or {}).get("storageClassName")
        sc = self._reader.get(STORAGE_GROUP, STORAGE_VERSION, "storageclasses", None, str(class_name)) \
            if class_name else None
        if sc is None or sc.get("allowVolumeExpansion") is not True:
            raise forbidden(f'persistentvolumeclaims "{attrs.name}" is forbidden: only dynamically provisioned pvc '
                            f'can be resized and the storageclass that provisions the pvc must support resize',
                            "persistentvolumeclaims", "", attrs.name)


def _grows(new: str | None, old: str | None) -> bool:
    if new is None or old is None:
        return False
    try:
        return parse_quantity(new) > parse_quantity(old)
    except ValueError:
        return False
