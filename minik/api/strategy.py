"""Per-kind rules: what the server resets, defaults and validates, as Kubernetes' registry strategies do.

A ``Strategy`` is pure: it mutates or inspects plain dicts and returns validation causes; it never does I/O.
The API server calls, for a create: prepare_for_create -> default -> validate; for an update:
prepare_for_update -> default -> validate_update; for a write to the status subresource:
prepare_for_status_update -> validate_status_update.
"""

from __future__ import annotations

from typing import Any

import orjson

from minik.api import validation
from minik.api.errors import Cause

Obj = dict[str, Any]


class Strategy:
    """The base strategy: generic metadata rules; kinds override what they need."""

    #: the object has a ``status`` that only the status subresource may change
    has_status: bool = False
    #: metadata.generation is set on create and bumped when anything but metadata and status changes
    tracks_generation: bool = False
    #: how object names are validated: "subdomain" (DNS-1123 subdomain), "label" (DNS-1123 label),
    #: "dns1035" (RFC 1035 label: services), "path" (any name that is a valid path segment)
    name_rule: str = "subdomain"
    #: the kind lives in a namespace (False for nodes, namespaces, priority classes): metadata.namespace is
    #: required when True and forbidden when False
    namespace_scoped: bool = True

    def prepare_for_create(self, obj: Obj) -> None:
        """Reset what a client may not set on create (status, for kinds with a status subresource)."""
        if self.has_status:
            obj.pop("status", None)
            initial = self.initial_status(obj)
            if initial is not None:
                obj["status"] = initial

    def initial_status(self, obj: Obj) -> Obj | None:
        return None

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        """A write to the main resource keeps the old status."""
        if self.has_status:
            if "status" in old:
                obj["status"] = old["status"]
            else:
                obj.pop("status", None)

    def prepare_for_status_update(self, obj: Obj, old: Obj) -> None:
        """A write to the status subresource changes status only: everything else comes from the old object."""
        new_status = obj.get("status")
        for k in list(obj.keys()):
            if k not in ("apiVersion", "kind", "metadata"):
                del obj[k]
        for k, v in old.items():
            if k not in ("apiVersion", "kind", "metadata", "status"):
                obj[k] = v
        if new_status is not None:
            obj["status"] = new_status
        # labels, annotations and other metadata may not change through status either (except as Kubernetes
        # allows); keep the old ones
        meta = obj.setdefault("metadata", {})
        old_meta = old.get("metadata", {})
        for k in ("labels", "annotations", "finalizers", "ownerReferences"):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)

    def prepare_for_subresource_update(self, subresource: str, obj: Obj, old: Obj) -> None:
        """A write to a subresource, other than status and finalize, that writes the object itself (a
        CertificateSigningRequest's approval): by default, as a write to the main resource."""
        self.prepare_for_update(obj, old)

    def default(self, obj: Obj) -> None:
        """Fill in defaults in place."""

    def validate(self, obj: Obj) -> list[Cause]:
        """Validate a new object; return the causes of every problem found (empty when valid)."""
        return validation.validate_object_meta(obj.get("metadata", {}), self.name_rule,
                                               namespaced=self.namespace_scoped)

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        """Validate an update: the rules of create, plus metadata that may never change (name, uid, ...)."""
        return validation.validate_object_meta_update(obj.get("metadata"), old.get("metadata")) + \
            self.validate(obj)

    def validate_subresource_update(self, subresource: str, obj: Obj, old: Obj) -> list[Cause]:
        """Validate a write to a subresource other than status (after prepare_for_subresource_update): by default
        as any update."""
        return self.validate_update(obj, old)

    def validate_status_update(self, obj: Obj, old: Obj) -> list[Cause]:
        """Validate a write to the status subresource (after prepare_for_status_update, so everything but status
        and some metadata is the old object's). By default as any update; kinds whose status is written often
        (pods) validate only what such a write can change, as Kubernetes' status strategies do."""
        return self.validate_update(obj, old)

    def field_set(self, obj: Obj) -> dict[str, str]:
        """The fields a fieldSelector may name for this kind (metadata.name, metadata.namespace always)."""
        meta = obj.get("metadata", {})
        return {"metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", "")}

    #: a field of ``field_set`` by whose exact value watches are indexed: a watch whose field selector requires
    #: it gets only the events of objects that have that value before or after the write (Kubernetes' watch cache
    #: indexes pods by spec.nodeName so, for the kubelets' watches)
    trigger_field: str | None = None

    def trigger_value(self, raw: bytes) -> str:
        """The ``trigger_field``'s value of an object given as JSON, as ``field_set`` reads it."""
        return self.field_set(orjson.loads(raw)).get(self.trigger_field or "", "")

    #: a DELETE without a propagation policy orphans the object's dependents (Kubernetes' DefaultGarbageCollection
    #: Policy OrphanDependents, kept by core/v1 ReplicationControllers and batch/v1 Jobs for compatibility)
    orphans_dependents_by_default: bool = False

    #: DELETE answers with the deleted object rather than a Status (Kubernetes' ReturnDeletedObject)
    return_deleted_object: bool = False

    def deletion_grace_period(self, obj: Obj, requested: int | None) -> int | None:
        """Seconds the object lingers after a DELETE before it is removed (pods: while the kubelet stops them).
        None or 0 removes it at once (when no finalizers hold it)."""
        return None

    def prepare_for_delete(self, obj: Obj) -> bool:
        """Mark ``obj`` (a copy about to be written) for deletion the kind's own way; True when the kind holds it
        beyond its grace period and finalizers (a namespace while spec.finalizers remain)."""
        return False

    def holds_deletion(self, obj: Obj) -> bool:
        """Whether an object being deleted, whose metadata.finalizers are gone, must still be kept."""
        return False

    def prepare_for_finalize(self, obj: Obj, old: Obj) -> None:
        """A write to the finalize subresource (namespaces): by default, as a write to the main resource."""
        self.prepare_for_update(obj, old)

    def spec_of(self, obj: Obj) -> Obj:
        """The part of the object whose change bumps metadata.generation."""
        return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}
