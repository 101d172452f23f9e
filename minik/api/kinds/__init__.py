"""Per-kind strategies: defaults, validation and field selectors for every resource minik serves.

One module per API group (core, apps, batch, cluster, rbac, reviews, admissionregistration, apiextensions;
customresources serves what CRDs declare); the pod spec rules every workload template shares live
in podspec (defaults, QoS) and podvalidation. ``minik.api.resources`` puts them into the registry.
"""

from minik.api.kinds.admissionpolicy import ValidatingAdmissionPolicyBindingStrategy, ValidatingAdmissionPolicyStrategy
from minik.api.kinds.admissionregistration import (
                                                   MutatingWebhookConfigurationStrategy,
                                                   ValidatingWebhookConfigurationStrategy,
)
from minik.api.kinds.apiextensions import CustomResourceDefinitionStrategy
from minik.api.kinds.apps import DaemonSetStrategy, DeploymentStrategy, ReplicaSetStrategy, StatefulSetStrategy
from minik.api.kinds.batch import CronJobStrategy, JobStrategy
from minik.api.kinds.cluster import LeaseStrategy, PriorityClassStrategy
from minik.api.kinds.core import (
                                  ConfigMapStrategy,
                                  EndpointsStrategy,
                                  EventStrategy,
                                  NamespaceStrategy,
                                  NodeStrategy,
                                  PodStrategy,
                                  ReplicationControllerStrategy,
                                  SecretStrategy,
                                  ServiceAccountStrategy,
                                  ServiceStrategy,
)
from minik.api.kinds.rbac import ClusterRoleBindingStrategy, ClusterRoleStrategy, RoleBindingStrategy, RoleStrategy
from minik.api.kinds.reviews import ClusterReviewStrategy, NamespacedReviewStrategy

__all__ = [
    "ClusterReviewStrategy", "ClusterRoleBindingStrategy", "ClusterRoleStrategy", "ConfigMapStrategy", "CronJobStrategy",
    "CustomResourceDefinitionStrategy", "DaemonSetStrategy",
    "DeploymentStrategy", "EndpointsStrategy", "EventStrategy", "JobStrategy", "LeaseStrategy",
    "MutatingWebhookConfigurationStrategy", "NamespaceStrategy", "NamespacedReviewStrategy",
    "NodeStrategy", "PodStrategy", "PriorityClassStrategy", "ReplicaSetStrategy", "ReplicationControllerStrategy",
    "RoleBindingStrategy", "RoleStrategy", "SecretStrategy", "ServiceAccountStrategy", "ServiceStrategy",
    "StatefulSetStrategy", "ValidatingAdmissionPolicyBindingStrategy", "ValidatingAdmissionPolicyStrategy",
    "ValidatingWebhookConfigurationStrategy",
]

# issue 20's general-purpose kinds (kept apart, so that other branches' additions above merge cleanly)
from minik.api.kinds.apiregistration import APIServiceStrategy  # noqa: E402
from minik.api.kinds.certificates import CertificateSigningRequestStrategy  # noqa: E402
from minik.api.kinds.controllerrevision import ControllerRevisionStrategy  # noqa: E402
from minik.api.kinds.events import EventsV1Strategy, SharedStorageType  # noqa: E402
from minik.api.kinds.limitrange import LimitRangeStrategy  # noqa: E402
from minik.api.kinds.node import RuntimeClassStrategy  # noqa: E402
from minik.api.kinds.podtemplate import PodTemplateStrategy  # noqa: E402
from minik.api.kinds.resourcequota import ResourceQuotaStrategy  # noqa: E402

__all__ += ["APIServiceStrategy", "CertificateSigningRequestStrategy", "EventsV1Strategy", "SharedStorageType", "LimitRangeStrategy", "PodTemplateStrategy", "ResourceQuotaStrategy", "RuntimeClassStrategy"]
__all__ += ["ControllerRevisionStrategy"]

# issue 21's storage kinds
from minik.api.kinds.storage import (  # noqa: E402
    PersistentVolumeClaimStrategy,
    PersistentVolumeStrategy,
    StorageClassStrategy,
)

__all__ += ["PersistentVolumeClaimStrategy", "PersistentVolumeStrategy", "StorageClassStrategy"]

# issue 21: disruption budgets
from minik.api.kinds.policy import PodDisruptionBudgetStrategy  # noqa: E402

__all__ += ["PodDisruptionBudgetStrategy"]
