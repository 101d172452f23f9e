"""NamespaceLifecycle: new objects only in namespaces that exist and are not terminating; the system namespaces
are never deleted."""

from __future__ import annotations

from minik.api.errors import StatusError, forbidden, not_found
from minik.apiserver.admission.base import Attributes, ObjectReader

IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")


class NamespaceLifecycle:
    """New objects only in namespaces that exist and are not terminating; the system namespaces stay.

    As Kubernetes' plugin, the namespace of a new object is checked in the mutating phase, where this plugin comes
    first: a pod in a namespace that does not exist is 404 NotFound for the namespace, before any other plugin
    (ServiceAccount, say) looks for what the pod refers to there."""

    name = "NamespaceLifecycle"

    def __init__(self, reader: ObjectReader) -> None:
        self._reader = reader

    async def validate(self, attrs: Attributes) -> None:
        if attrs.resource.plural == "namespaces" and not attrs.resource.group and attrs.operation == "DELETE" \
                and attrs.name in IMMORTAL_NAMESPACES:
            raise forbidden(f'namespaces "{attrs.name}" is forbidden: this namespace may not be deleted',
                            "namespaces", "", attrs.name)

    async def admit(self, attrs: Attributes) -> None:
        if attrs.operation != "CREATE" or not attrs.resource.namespaced or attrs.subresource:
            return
        namespace = self._reader.get("", "v1", "namespaces", None, attrs.namespace or "")
        if namespace is None:
            raise not_found("namespaces", "", attrs.namespace or "")
        if namespace.get("status", {}).get("phase") == "Terminating" or \
                namespace.get("metadata", {}).get("deletionTimestamp"):
            raise StatusError(403, "Forbidden", f"{attrs.resource.plural} \"{attrs.name}\" is forbidden: unable "
                              f"to create new content in namespace {attrs.namespace} because it is being "
                              f"terminated", {"name": attrs.name, "kind": attrs.resource.plural,
                                              "causes": [{"reason": "NamespaceTerminating", "message":
                                                          f"namespace {attrs.namespace} is being terminated",
                                                          "field": "metadata.namespace"}]})
