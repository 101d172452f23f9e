"""The default admission chain, in Kubernetes' order. Adding a plugin is a module beside this one and a line here.

Defaulting is not a plugin: as in Kubernetes, each kind's defaults are applied when the body is decoded, before
the chain runs (the kind's strategy, in minik.api.kinds), so every plugin sees a defaulted object."""

from __future__ import annotations

from collections.abc import Sequence

from minik.apiserver.admission.base import AdmissionPlugin, ObjectReader
from minik.apiserver.admission.certificates import CertificateSigningRequestIdentity, CertificateSubjectRestriction
from minik.apiserver.admission.default_tolerations import DefaultTolerationSeconds
from minik.apiserver.admission.limit_ranger import LimitRanger
from minik.apiserver.admission.namespace_lifecycle import NamespaceLifecycle
from minik.apiserver.admission.node_restriction import NodeRestriction
from minik.apiserver.admission.pod_security import PodSecurity
from minik.apiserver.admission.priority import Priority
from minik.apiserver.admission.resource_quota import ResourceQuotaAdmission
from minik.apiserver.admission.runtime_class import RuntimeClass
from minik.apiserver.admission.service_account import ServiceAccount
from minik.apiserver.admission.storage import (
    DefaultStorageClass,
    PersistentVolumeClaimResize,
    StorageObjectInUseProtection,
)


def default_plugins(reader: ObjectReader, cluster: Sequence[AdmissionPlugin] = ()) -> list[AdmissionPlugin]:
    """The chain in Kubernetes' order (defaulting runs in the kind's strategy before it). ``cluster``: the steps
    that need the cluster's authorizer or its admission configurations (RBAC escalation, certificate approval and
    signing, the webhooks and policies), which run after the built-in ones and before the quota."""
    return [NamespaceLifecycle(reader), LimitRanger(reader), NodeRestriction(), Priority(reader),
            DefaultTolerationSeconds(), ServiceAccount(reader), PodSecurity(reader),
            PersistentVolumeClaimResize(reader), RuntimeClass(reader),
            CertificateSigningRequestIdentity(), CertificateSubjectRestriction(),
            DefaultStorageClass(reader), StorageObjectInUseProtection(), *cluster,
            # last, as in Kubernetes: it charges what every other plugin let through, webhooks' changes included
            ResourceQuotaAdmission(reader)]
