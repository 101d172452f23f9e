"""Admission and the other replaceable stages of the request pipeline.

`base` holds the protocols and the chain; each admission plugin is a module of its own, and `plugins` says which
run by default and in what order (mutating steps of every plugin first, then every validating step)."""

from minik.apiserver.admission.base import Admission, AdmissionPlugin, Attributes, Authenticator, ObjectReader
from minik.apiserver.admission.namespace_lifecycle import IMMORTAL_NAMESPACES, NamespaceLifecycle
from minik.apiserver.admission.plugins import default_plugins

__all__ = ["Admission", "AdmissionPlugin", "Attributes", "Authenticator", "IMMORTAL_NAMESPACES", "NamespaceLifecycle",
           "ObjectReader", "default_plugins"]
