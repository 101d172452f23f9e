"""The default admission chain, in Kubernetes' order. Adding a plugin is a module beside this one and a line here."""

from __future__ import annotations

from minik.apiserver.admission.base import AdmissionPlugin, ObjectReader
from minik.apiserver.admission.default_tolerations import DefaultTolerationSeconds
from minik.apiserver.admission.namespace_lifecycle import NamespaceLifecycle
from minik.apiserver.admission.priority import Priority


def default_plugins(reader: ObjectReader) -> list[AdmissionPlugin]:
    return [NamespaceLifecycle(reader), Priority(reader), DefaultTolerationSeconds()]
