"""The table of every resource minik serves, as Kubernetes' discovery describes them."""

from __future__ import annotations

from minik.api import kinds
from minik.api.registry import Registry, ResourceType

_ALL = ("all",)
_STATUS = ("status",)
_SCALABLE = ("status", "scale")
_ASK = ("create",)

REGISTRY = Registry([
    # core/v1
    ResourceType("", "v1", "Namespace", "namespaces", "namespace", False, kinds.NamespaceStrategy(),
                 short_names=("ns",), subresources=("status", "finalize")),
    ResourceType("", "v1", "Node", "nodes", "node", False, kinds.NodeStrategy(),
                 short_names=("no",), subresources=_STATUS),
    ResourceType("", "v1", "Pod", "pods", "pod", True, kinds.PodStrategy(),
                 short_names=("po",), categories=_ALL,
                 subresources=("status", "binding", "log", "exec", "eviction", "portforward", "proxy", "attach",
                               "ephemeralcontainers")),
    ResourceType("", "v1", "Service", "services", "service", True, kinds.ServiceStrategy(),
                 short_names=("svc",), categories=_ALL, subresources=("status", "proxy")),
    ResourceType("", "v1", "Endpoints", "endpoints", "endpoints", True, kinds.EndpointsStrategy(),
                 short_names=("ep",)),
    ResourceType("", "v1", "Event", "events", "event", True, kinds.EventStrategy(),
                 short_names=("ev",)),
    ResourceType("", "v1", "ConfigMap", "configmaps", "configmap", True, kinds.ConfigMapStrategy(),
                 short_names=("cm",)),
    ResourceType("", "v1", "Secret", "secrets", "secret", True, kinds.SecretStrategy()),
    ResourceType("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True,
                 kinds.ServiceAccountStrategy(), short_names=("sa",), subresources=("token",)),
    ResourceType("", "v1", "ReplicationController", "replicationcontrollers", "replicationcontroller", True,
                 kinds.ReplicationControllerStrategy(), short_names=("rc",), categories=_ALL,
                 subresources=_SCALABLE),
    # apps/v1
    ResourceType("apps", "v1", "Deployment", "deployments", "deployment", True, kinds.DeploymentStrategy(),
                 short_names=("deploy",), categories=_ALL, subresources=_SCALABLE),
    ResourceType("apps", "v1", "ReplicaSet", "replicasets", "replicaset", True, kinds.ReplicaSetStrategy(),
                 short_names=("rs",), categories=_ALL, subresources=_SCALABLE),
    ResourceType("apps", "v1", "DaemonSet", "daemonsets", "daemonset", True, kinds.DaemonSetStrategy(),
                 short_names=("ds",), categories=_ALL, subresources=_STATUS),
    ResourceType("apps", "v1", "StatefulSet", "statefulsets", "statefulset", True, kinds.StatefulSetStrategy(),
                 short_names=("sts",), categories=_ALL, subresources=_SCALABLE),
    # batch/v1
    ResourceType("batch", "v1", "Job", "jobs", "job", True, kinds.JobStrategy(),
                 categories=_ALL, subresources=_STATUS),
    ResourceType("batch", "v1", "CronJob", "cronjobs", "cronjob", True, kinds.CronJobStrategy(),
                 short_names=("cj",), categories=_ALL, subresources=_STATUS),
    # coordination.k8s.io/v1 and scheduling.k8s.io/v1
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True, kinds.LeaseStrategy()),
    ResourceType("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", "priorityclass", False,
                 kinds.PriorityClassStrategy(), short_names=("pc",)),
    # rbac.authorization.k8s.io/v1
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings",
                 "clusterrolebinding", False, kinds.ClusterRoleBindingStrategy()),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", False,
                 kinds.ClusterRoleStrategy()),
    ResourceType("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", True,
                 kinds.RoleBindingStrategy()),
    ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", True, kinds.RoleStrategy()),
    # admissionregistration.k8s.io/v1: the webhooks admission calls (minik.apiserver.admission.webhook)
    ResourceType("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration",
                 "mutatingwebhookconfigurations", "mutatingwebhookconfiguration", False,
                 kinds.MutatingWebhookConfigurationStrategy(), categories=("api-extensions",)),
    ResourceType("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
                 "validatingwebhookconfigurations", "validatingwebhookconfiguration", False,
                 kinds.ValidatingWebhookConfigurationStrategy(), categories=("api-extensions",)),
    ResourceType("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies",
                 "validatingadmissionpolicy", False, kinds.ValidatingAdmissionPolicyStrategy(),
                 categories=("api-extensions",), subresources=_STATUS),
    ResourceType("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding",
                 "validatingadmissionpolicybindings", "validatingadmissionpolicybinding", False,
                 kinds.ValidatingAdmissionPolicyBindingStrategy(), categories=("api-extensions",)),
    # apiextensions.k8s.io/v1: the kinds CustomResourceDefinitions add are served beside these (minik.apiserver.crds)
    ResourceType("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
                 "customresourcedefinition", False, kinds.CustomResourceDefinitionStrategy(),
                 short_names=("crd", "crds"), categories=("api-extensions",), subresources=_STATUS),
    # authentication.k8s.io/v1 and authorization.k8s.io/v1: questions answered, never stored (minik.apiserver.auth.reviews)
    ResourceType("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", "selfsubjectreview",
                 False, kinds.ClusterReviewStrategy(), verbs=_ASK),
    ResourceType("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", "tokenreview", False,
                 kinds.ClusterReviewStrategy(), verbs=_ASK),
    ResourceType("authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews",
                 "localsubjectaccessreview", True, kinds.NamespacedReviewStrategy(), verbs=_ASK),
    ResourceType("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews",
                 "selfsubjectaccessreview", False, kinds.ClusterReviewStrategy(), verbs=_ASK),
    ResourceType("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews",
                 "selfsubjectrulesreview", False, kinds.ClusterReviewStrategy(), verbs=_ASK),
    ResourceType("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", "subjectaccessreview",
                 False, kinds.ClusterReviewStrategy(), verbs=_ASK),
    # -- issue 20's general-purpose kinds (appended: other branches add entries above)
    ResourceType("", "v1", "LimitRange", "limitranges", "limitrange", True, kinds.LimitRangeStrategy(),
                 short_names=("limits",)),
    ResourceType("", "v1", "ResourceQuota", "resourcequotas", "resourcequota", True, kinds.ResourceQuotaStrategy(),
                 short_names=("quota",), subresources=_STATUS),
    ResourceType("", "v1", "PodTemplate", "podtemplates", "podtemplate", True, kinds.PodTemplateStrategy()),
    # events.k8s.io/v1: the core/v1 events, converted (served by minik.apiserver.eventsview)
    kinds.SharedStorageType("events.k8s.io", "v1", "Event", "events", "event", True, kinds.EventsV1Strategy(),
                            short_names=("ev",), storage_group="", storage_plural="events"),
    # node.k8s.io/v1
    ResourceType("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", "runtimeclass", False,
                 kinds.RuntimeClassStrategy()),
    # apiregistration.k8s.io/v1: the local APIServices follow the registry (minik.apiserver.apiservices)
    ResourceType("apiregistration.k8s.io", "v1", "APIService", "apiservices", "apiservice", False,
                 kinds.APIServiceStrategy(), categories=("api-extensions",), subresources=_STATUS),
    # certificates.k8s.io/v1 (signed and auto-approved by minik.controllers.certificates)
    ResourceType("certificates.k8s.io", "v1", "CertificateSigningRequest", "certificatesigningrequests",
                 "certificatesigningrequest", False, kinds.CertificateSigningRequestStrategy(), short_names=("csr",),
                 subresources=("status", "approval")),
    # policy/v1: disruption budgets (status kept by minik.controllers.disruption, spent by pods/eviction)
    ResourceType("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", "poddisruptionbudget", True,
                 kinds.PodDisruptionBudgetStrategy(), short_names=("pdb",), subresources=_STATUS),
    # apps/v1 ControllerRevision: the StatefulSet controller's history (minik.controllers.statefulset)
    ResourceType("apps", "v1", "ControllerRevision", "controllerrevisions", "controllerrevision", True,
                 kinds.ControllerRevisionStrategy()),
    # issue 21's storage: core/v1 volumes and claims, storage.k8s.io/v1 classes (bound by minik.controllers.volume*)
    ResourceType("", "v1", "PersistentVolume", "persistentvolumes", "persistentvolume", False,
                 kinds.PersistentVolumeStrategy(), short_names=("pv",), subresources=_STATUS),
    ResourceType("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", "persistentvolumeclaim", True,
                 kinds.PersistentVolumeClaimStrategy(), short_names=("pvc",), subresources=_STATUS),
    ResourceType("storage.k8s.io", "v1", "StorageClass", "storageclasses", "storageclass", False,
                 kinds.StorageClassStrategy(), short_names=("sc",)),
])
