"""The roles and bindings every cluster starts with: Kubernetes' bootstrap policy (its default ClusterRoles, the
roles of the controllers minik runs, and their bindings), plus the few of minik's own identities.

The rules are Kubernetes 1.32's. Kubernetes also ships roles for controllers and features minik does not have
(volume attach, HPA, ...); only those of the controllers minik runs are here, so that
``kubectl get clusterrolebindings`` names no identity that does not exist. minik's additions are named
``system:minik:*`` (or ``minik:*`` for those a person would look for).

Each object carries ``rbac.authorization.kubernetes.io/autoupdate: "true"``: at every start, minik.apiserver.auth.rbac.
reconcile adds what is missing from them, and leaves alone an object whose annotation an admin set to "false".
"""

from __future__ import annotations

from typing import Any

from minik.api.kinds.rbac import RBAC_GROUP

Obj = dict[str, Any]

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAPPING = "kubernetes.io/bootstrapping"
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
SERVICE_ACCOUNTS = "system:serviceaccounts"
NODES = "system:nodes"
SCHEDULER = "system:kube-scheduler"
CONTROLLER_MANAGER = "system:kube-controller-manager"
KUBE_PROXY = "system:kube-proxy"
#: the in-process node component when it runs simulated nodes: one kubelet for every node name
NODE_SIMULATOR = "system:minik:node-simulator"
#: the bootstrap-token groups of `minik token create --role view|node`
VIEW_TOKENS = "system:bootstrappers:minik:view"
JOIN_TOKENS = "system:bootstrappers:minik:node"
#: where a joining node exchanges its token for a credential (minik.joinserver)
JOIN_PATH = "/minik/v1/nodecredentials"

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "patch", "update")
EVENT_WRITE = ("create", "patch", "update")


def rule(verbs: tuple[str, ...] | list[str], groups: tuple[str, ...], resources: tuple[str, ...],
         names: tuple[str, ...] = ()) -> Obj:
    out: Obj = {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}
    if names:
        out["resourceNames"] = list(names)
    return out


def urls(verbs: tuple[str, ...], paths: tuple[str, ...]) -> Obj:
    return {"verbs": list(verbs), "nonResourceURLs": list(paths)}


def events() -> Obj:
    return rule(EVENT_WRITE, ("", "events.k8s.io"), ("events",))


def _meta(name: str, namespace: str | None = None, labels: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "labels": {BOOTSTRAPPING: "rbac-defaults", **(labels or {})},
                 "annotations": {AUTOUPDATE: "true"}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def cluster_role(name: str, rules: list[Obj], labels: dict[str, str] | None = None,
                 aggregate_from: str | None = None) -> Obj:
    role: Obj = {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": _meta(name, labels=labels),
                 "rules": rules}
    if aggregate_from is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO + aggregate_from: "true"}}]}
        role["rules"] = []
    return role


def role(name: str, namespace: str, rules: list[Obj]) -> Obj:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "Role", "metadata": _meta(name, namespace), "rules": rules}


def user(name: str) -> Obj:
    return {"kind": "User", "apiGroup": RBAC_GROUP, "name": name}


def group(name: str) -> Obj:
    return {"kind": "Group", "apiGroup": RBAC_GROUP, "name": name}


def service_account(namespace: str, name: str) -> Obj:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def cluster_binding(name: str, role_name: str, subjects: list[Obj]) -> Obj:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding", "metadata": _meta(name),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role_name}, "subjects": subjects}


def binding(name: str, namespace: str, role_name: str, subjects: list[Obj], role_kind: str = "Role") -> Obj:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "RoleBinding", "metadata": _meta(name, namespace),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind, "name": role_name}, "subjects": subjects}


# -- the user-facing roles, aggregated ----------------------------------------------------------------------------
def _aggregate_to_view() -> list[Obj]:
    return [
        rule(READ, ("",), ("configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status",
                           "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
                           "services", "services/status")),
        rule(READ, ("",), ("bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
                           "replicationcontrollers/status", "resourcequotas", "resourcequotas/status")),
        rule(READ, ("",), ("namespaces",)),
        rule(READ, ("discovery.k8s.io",), ("endpointslices",)),
        rule(READ, ("apps",), ("controllerrevisions", "daemonsets", "daemonsets/status", "deployments",
                               "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
                               "replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status")),
        rule(READ, ("autoscaling",), ("horizontalpodautoscalers", "horizontalpodautoscalers/status")),
        rule(READ, ("batch",), ("cronjobs", "cronjobs/status", "jobs", "jobs/status")),
        rule(READ, ("extensions",), ("daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                                     "deployments/status", "ingresses", "ingresses/status", "networkpolicies",
                                     "replicasets", "replicasets/scale", "replicasets/status",
                                     "replicationcontrollers/scale")),
        rule(READ, ("policy",), ("poddisruptionbudgets", "poddisruptionbudgets/status")),
        rule(READ, ("networking.k8s.io",), ("ingresses", "ingresses/status", "networkpolicies")),
    ]


def _aggregate_to_edit() -> list[Obj]:
    return [
        rule(READ, ("",), ("pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets",
                           "services/proxy")),
        rule(("impersonate",), ("",), ("serviceaccounts",)),
        rule(WRITE, ("",), ("pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy")),
        rule(("create",), ("",), ("pods/eviction",)),
        rule(WRITE, ("",), ("configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
                            "replicationcontrollers/scale", "secrets", "serviceaccounts", "services",
                            "services/proxy")),
        rule(("create",), ("",), ("serviceaccounts/token",)),
        rule(WRITE, ("apps",), ("daemonsets", "deployments", "deployments/rollback", "deployments/scale",
                                "replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale")),
        rule(WRITE, ("autoscaling",), ("horizontalpodautoscalers",)),
        rule(WRITE, ("batch",), ("cronjobs", "jobs")),
        rule(WRITE, ("extensions",), ("daemonsets", "deployments", "deployments/rollback", "deployments/scale",
                                      "ingresses", "networkpolicies", "replicasets", "replicasets/scale",
                                      "replicationcontrollers/scale")),
        rule(WRITE, ("policy",), ("poddisruptionbudgets",)),
        rule(WRITE, ("networking.k8s.io",), ("ingresses", "networkpolicies")),
        rule((*READ, *WRITE), ("coordination.k8s.io",), ("leases",)),
    ]


def _aggregate_to_admin() -> list[Obj]:
    return [rule(("create",), ("authorization.k8s.io",), ("localsubjectaccessreviews",)),
            rule((*READ, *WRITE), (RBAC_GROUP,), ("rolebindings", "roles"))]


# -- components -----------------------------------------------------------------------------------------------------
def node_rules() -> list[Obj]:
    """What a kubelet may do beyond the Node authorizer's graph (Kubernetes' system:node ClusterRole; the Node
    authorizer uses these rules itself, and NodeRestriction narrows the writes to the node's own objects)."""
    return [
        rule(("create",), ("authentication.k8s.io",), ("tokenreviews",)),
        rule(("create",), ("authorization.k8s.io",), ("localsubjectaccessreviews", "subjectaccessreviews")),
        rule(READ, ("",), ("services",)),
        rule(("create", "get", "list", "watch"), ("",), ("nodes",)),
        rule(("patch", "update"), ("",), ("nodes/status",)),
        rule(("patch", "update"), ("",), ("nodes",)),
        rule(EVENT_WRITE, ("",), ("events",)),
        rule(READ, ("",), ("pods",)),
        rule(("create", "delete"), ("",), ("pods",)),
        rule(("patch", "update"), ("",), ("pods/status",)),
        rule(("create",), ("",), ("pods/eviction",)),
        rule(READ, ("",), ("configmaps", "secrets")),
        rule(("get",), ("",), ("persistentvolumeclaims", "persistentvolumes")),
        rule(("get",), ("",), ("endpoints",)),
        rule(("create", "get", "list", "watch"), ("certificates.k8s.io",), ("certificatesigningrequests",)),
        rule(("create", "delete", "get", "patch", "update"), ("coordination.k8s.io",), ("leases",)),
        rule(("get",), ("storage.k8s.io",), ("volumeattachments",)),
        rule(("create",), ("",), ("serviceaccounts/token",)),
        rule(("get", "patch", "update"), ("",), ("persistentvolumeclaims/status",)),
        rule(READ, ("storage.k8s.io",), ("csidrivers",)),
        rule(("create", "delete", "get", "patch", "update"), ("storage.k8s.io",), ("csinodes",)),
        rule(READ, ("node.k8s.io",), ("runtimeclasses",)),
    ]


def _scheduler_rules() -> list[Obj]:
    return [
        events(),
        rule(("create",), ("coordination.k8s.io",), ("leases",)),
        rule(("get", "update"), ("coordination.k8s.io",), ("leases",), ("kube-scheduler",)),
        rule(READ, ("",), ("nodes",)),
        rule(("delete", "get", "list", "watch"), ("",), ("pods",)),
        rule(("create",), ("",), ("bindings", "pods/binding")),
        rule(("patch", "update"), ("",), ("pods/status",)),
        rule(READ, ("",), ("replicationcontrollers", "services")),
        rule(READ, ("apps", "extensions"), ("replicasets",)),
        rule(READ, ("apps",), ("statefulsets",)),
        rule(READ, ("policy",), ("poddisruptionbudgets",)),
        rule(READ, ("",), ("persistentvolumeclaims", "persistentvolumes")),
        rule(("create",), ("authentication.k8s.io",), ("tokenreviews",)),
        rule(("create",), ("authorization.k8s.io",), ("subjectaccessreviews",)),
        rule(READ, ("storage.k8s.io",), ("csinodes",)),
        rule(READ, ("",), ("namespaces",)),
        rule(READ, ("storage.k8s.io",), ("csidrivers",)),
        rule(READ, ("storage.k8s.io",), ("csistoragecapacities",)),
    ]


def _controller_manager_rules() -> list[Obj]:
    return [
        events(),
        rule(("create",), ("coordination.k8s.io",), ("leases",)),
        rule(("get", "update"), ("coordination.k8s.io",), ("leases",), ("kube-controller-manager",)),
        rule(("create",), ("",), ("secrets", "serviceaccounts")),
        rule(("delete",), ("",), ("secrets",)),
        rule(("get",), ("",), ("configmaps", "namespaces", "secrets", "serviceaccounts")),
        rule(("update",), ("",), ("secrets", "serviceaccounts")),
        rule(("create",), ("authentication.k8s.io",), ("tokenreviews",)),
        rule(("create",), ("authorization.k8s.io",), ("subjectaccessreviews",)),
        rule(("list", "watch"), ("*",), ("*",)),
        rule(("create",), ("",), ("serviceaccounts/token",)),
    ]


CERTIFICATES = "certificates.k8s.io"
KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
KUBE_APISERVER_CLIENT_KUBELET = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
LEGACY_UNKNOWN = "kubernetes.io/legacy-unknown"


def _certificate_controller_rules() -> list[Obj]:
    """Kubernetes' certificate-controller role, which csrsigning and csrapproving share."""
    return [
        rule(("delete", "get", "list", "watch"), (CERTIFICATES,), ("certificatesigningrequests",)),
        rule(("update",), (CERTIFICATES,), ("certificatesigningrequests/approval",
                                            "certificatesigningrequests/status")),
        rule(("approve",), (CERTIFICATES,), ("signers",), (KUBE_APISERVER_CLIENT_KUBELET,)),
        rule(("sign",), (CERTIFICATES,), ("signers",), (LEGACY_UNKNOWN, KUBE_APISERVER_CLIENT,
                                                         KUBE_APISERVER_CLIENT_KUBELET, KUBELET_SERVING)),
        rule(("create",), ("authorization.k8s.io",), ("subjectaccessreviews",)),
        events()]


#: controller name (as `minik controllers` and kube-controller-manager --controllers take it) -> the service
#: account it runs as in kube-system, and that account's ClusterRole's rules (system:controller:ACCOUNT)
def controller_roles() -> dict[str, tuple[str, list[Obj]]]:
    return {
        "replicaset": ("replicaset-controller", [
            rule(("get", "list", "update", "watch"), ("apps", "extensions"), ("replicasets",)),
            rule(("update",), ("apps", "extensions"), ("replicasets/status", "replicasets/finalizers")),
            rule(("create", "delete", "list", "patch", "watch"), ("",), ("pods",)), events()]),
        "replicationcontroller": ("replication-controller", [
            rule(("get", "list", "update", "watch"), ("",), ("replicationcontrollers",)),
            rule(("update",), ("",), ("replicationcontrollers/status", "replicationcontrollers/finalizers")),
            rule(("create", "delete", "list", "patch", "watch"), ("",), ("pods",)), events()]),
        "deployment": ("deployment-controller", [
            # minik's controller patches the revision annotation where Kubernetes' updates: patch is added
            rule(("get", "list", "patch", "update", "watch"), ("apps", "extensions"), ("deployments",)),
            rule(("update",), ("apps", "extensions"), ("deployments/status", "deployments/finalizers")),
            rule(("create", "delete", "get", "list", "patch", "update", "watch"), ("apps", "extensions"),
                 ("replicasets",)),
            rule(("get", "list", "update", "watch"), ("",), ("pods",)), events()]),
        "daemonset": ("daemon-set-controller", [
            rule(READ, ("apps", "extensions"), ("daemonsets",)),
            rule(("update",), ("apps", "extensions"), ("daemonsets/status", "daemonsets/finalizers")),
            rule(("list", "watch"), ("",), ("nodes",)),
            rule(("create", "delete", "list", "patch", "watch"), ("",), ("pods",)),
            rule(("create",), ("",), ("pods/binding",)),
            rule(("create", "delete", "get", "list", "patch", "update", "watch"), ("apps",),
                 ("controllerrevisions",)), events()]),
        "statefulset": ("statefulset-controller", [
            rule(("list", "watch"), ("",), ("pods",)),
            rule(("list", "watch"), ("apps",), ("statefulsets",)),
            rule(("update",), ("apps",), ("statefulsets/status", "statefulsets/finalizers")),
            rule(("create", "delete", "get", "patch", "update"), ("",), ("pods",)),
            rule(("create", "delete", "get", "list", "patch", "update", "watch"), ("apps",),
                 ("controllerrevisions",)),
            rule(("create", "get"), ("",), ("persistentvolumeclaims",)),
            # the retention policy (StatefulSetAutoDeletePVC) re-owns and deletes claims
            rule(("delete", "update"), ("",), ("persistentvolumeclaims",)), events()]),
        "job": ("job-controller", [
            rule(("get", "list", "patch", "update", "watch"), ("batch",), ("jobs",)),
            rule(("update",), ("batch",), ("jobs/status", "jobs/finalizers")),
            rule(("create", "delete", "list", "patch", "watch"), ("",), ("pods",)), events()]),
        "cronjob": ("cronjob-controller", [
            rule(("get", "list", "update", "watch"), ("batch",), ("cronjobs",)),
            rule(("create", "delete", "get", "list", "patch", "update", "watch"), ("batch",), ("jobs",)),
            rule(("update",), ("batch",), ("cronjobs/status", "cronjobs/finalizers")),
            rule(("delete", "list", "watch"), ("",), ("pods",)), events()]),
        "ttl-after-finished": ("ttl-after-finished-controller", [
            rule(("delete", "get", "list", "watch"), ("batch",), ("jobs",)), events()]),
        "garbage-collector": ("generic-garbage-collector", [
            rule(("delete", "get", "list", "patch", "update", "watch"), ("*",), ("*",)), events()]),
        "namespace": ("namespace-controller", [
            rule(("delete", "get", "list", "watch"), ("",), ("namespaces",)),
            rule(("update",), ("",), ("namespaces/finalize", "namespaces/status")),
            rule(("delete", "deletecollection", "get", "list", "watch"), ("*",), ("*",))]),
        "node-lifecycle": ("node-controller", [
            rule(("delete", "get", "list", "patch", "update", "watch"), ("",), ("nodes",)),
            rule(("patch", "update"), ("",), ("nodes/status", "pods/status")),
            rule(("delete", "get", "list", "watch"), ("",), ("pods",)), events()]),
        "taint-eviction": ("taint-eviction-controller", [
            rule(("delete", "get", "list", "watch"), ("",), ("pods",)),
            rule(("patch", "update"), ("",), ("pods/status",)), events()]),
        "pod-garbage-collector": ("pod-garbage-collector", [
            rule(("delete", "list", "watch"), ("",), ("pods",)),
            rule(READ, ("",), ("nodes",)),
            rule(("patch",), ("",), ("pods/status",))]),
        "endpoints": ("endpoint-controller", [
            rule(READ, ("",), ("pods", "services")),
            rule(("create", "delete", "get", "list", "update", "watch"), ("",), ("endpoints",)),
            rule(("create",), ("",), ("endpoints/restricted",)), events()]),
        "serviceaccount": ("service-account-controller", [
            rule(("create",), ("",), ("serviceaccounts",)), events()]),
        # it reads namespaces and its ConfigMaps through the shared informers (the manager's identity) and writes
        # only these
        "root-ca-cert-publisher": ("root-ca-cert-publisher", [
            rule(("create", "update"), ("",), ("configmaps",)), events()]),
        "clusterrole-aggregation": ("clusterrole-aggregation-controller", [
            rule(("escalate", "get", "list", "patch", "update", "watch"), (RBAC_GROUP,), ("clusterroles",))]),
        "resourcequota": ("resourcequota-controller", [
            # it counts anything a quota can name, so it reads everything
            rule(("list", "watch"), ("*",), ("*",)),
            rule(("update",), ("",), ("resourcequotas/status",)), events()]),
        "csrsigning": ("certificate-controller", _certificate_controller_rules()),
        "csrapproving": ("certificate-controller", _certificate_controller_rules()),
        # minik's own: Kubernetes expires Events with etcd leases, minik with a controller
        "event-ttl": ("event-ttl-controller", [rule(("delete", "list", "watch"), ("",), ("events",))]),
        "disruption": ("disruption-controller", [
            rule(READ, ("extensions", "apps"), ("deployments",)),
            rule(READ, ("apps", "extensions"), ("replicasets",)),
            rule(READ, ("",), ("replicationcontrollers",)),
            rule(READ, ("policy",), ("poddisruptionbudgets",)),
            rule(READ, ("apps",), ("statefulsets",)),
            rule(("update",), ("policy",), ("poddisruptionbudgets/status",)),
            rule(("get",), ("*",), ("*/scale",)),
            rule(("patch", "update"), ("",), ("pods/status",)), events()]),
        # issue 21's storage (minik patches where Kubernetes updates: patch is added)
        "persistentvolume-binder": ("persistent-volume-binder", [
            rule(("create", "delete", "get", "list", "patch", "update", "watch"), ("",), ("persistentvolumes",)),
            rule(("patch", "update"), ("",), ("persistentvolumes/status", "persistentvolumeclaims/status")),
            rule(("get", "list", "patch", "update", "watch"), ("",), ("persistentvolumeclaims",)),
            rule(("list", "watch"), ("",), ("nodes",)),
            rule(("list", "watch"), ("storage.k8s.io",), ("storageclasses",)), events()]),
        "pvc-protection": ("pvc-protection-controller", [
            rule(("get", "list", "patch", "update", "watch"), ("",), ("persistentvolumeclaims",)),
            rule(("get", "list", "watch"), ("",), ("pods",)), events()]),
        "pv-protection": ("pv-protection-controller", [
            rule(("get", "list", "patch", "update", "watch"), ("",), ("persistentvolumes",)), events()]),
        "local-path-provisioner": ("local-path-provisioner", [
            rule(("create", "delete", "get", "list", "watch"), ("",), ("persistentvolumes",)),
            rule(("get", "list", "watch"), ("",), ("persistentvolumeclaims", "nodes")),
            rule(READ, ("storage.k8s.io",), ("storageclasses",)), events()]),
        "ephemeral-volume": ("ephemeral-volume-controller", [
            rule(("get", "list", "watch"), ("",), ("pods",)),
            rule(("update",), ("",), ("pods/finalizers",)),
            rule(("create", "get", "list", "watch"), ("",), ("persistentvolumeclaims",)), events()]),
    }


#: controllers that run as a service account whose role is a Role in kube-system (the token cleaner reads and
#: deletes bootstrap-token Secrets there only)
NAMESPACED_CONTROLLERS = {
    "tokencleaner": ("token-cleaner", "kube-system", [
        rule(("delete", "get", "list", "watch"), ("",), ("secrets",)), events()]),
}

CONTROLLER_ROLE_PREFIX = "system:controller:"


def _controller_accounts() -> dict[str, list[Obj]]:
    """Each controller service account with its role's rules, once (csrsigning and csrapproving share one)."""
    return {account: rules for account, rules in controller_roles().values()}


def _certificate_roles() -> list[Obj]:
    """Kubernetes' ClusterRoles for certificate requests: who may ask for a kubelet client certificate that the
    approver then approves, and who may approve for each signer."""
    prefix = "system:certificates.k8s.io:"
    roles = [
        cluster_role(f"{prefix}certificatesigningrequests:nodeclient", [
            rule(("create",), (CERTIFICATES,), ("certificatesigningrequests/nodeclient",))]),
        cluster_role(f"{prefix}certificatesigningrequests:selfnodeclient", [
            rule(("create",), (CERTIFICATES,), ("certificatesigningrequests/selfnodeclient",))]),
    ]
    for signer, name in ((KUBE_APISERVER_CLIENT, "kube-apiserver-client-approver"),
                         (KUBE_APISERVER_CLIENT_KUBELET, "kube-apiserver-client-kubelet-approver"),
                         (KUBELET_SERVING, "kubelet-serving-approver"), (LEGACY_UNKNOWN, "legacy-unknown-approver")):
        roles.append(cluster_role(prefix + name, [rule(("approve",), (CERTIFICATES,), ("signers",), (signer,))]))
    return roles


def cluster_roles() -> list[Obj]:
    roles = [
        cluster_role("cluster-admin", [rule(("*",), ("*",), ("*",)), urls(("*",), ("*",))]),
        cluster_role("admin", [], aggregate_from="admin"),
        cluster_role("edit", [], labels={AGGREGATE_TO + "admin": "true"}, aggregate_from="edit"),
        cluster_role("view", [], labels={AGGREGATE_TO + "edit": "true"}, aggregate_from="view"),
        cluster_role("system:aggregate-to-admin", _aggregate_to_admin(), labels={AGGREGATE_TO + "admin": "true"}),
        cluster_role("system:aggregate-to-edit", _aggregate_to_edit(), labels={AGGREGATE_TO + "edit": "true"}),
        cluster_role("system:aggregate-to-view", _aggregate_to_view(), labels={AGGREGATE_TO + "view": "true"}),
        cluster_role("system:auth-delegator", [rule(("create",), ("authentication.k8s.io",), ("tokenreviews",)),
                                               rule(("create",), ("authorization.k8s.io",),
                                                    ("subjectaccessreviews",))]),
        cluster_role("system:basic-user", [
            rule(("create",), ("authorization.k8s.io",), ("selfsubjectaccessreviews", "selfsubjectrulesreviews")),
            rule(("create",), ("authentication.k8s.io",), ("selfsubjectreviews",))]),
        cluster_role("system:discovery", [urls(("get",), (
            "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz",
            "/version", "/version/"))]),
        cluster_role("system:public-info-viewer", [urls(("get",), ("/healthz", "/livez", "/readyz", "/version",
                                                                   "/version/"))]),
        cluster_role("system:monitoring", [urls(("get",), ("/healthz", "/healthz/*", "/livez", "/livez/*",
                                                           "/metrics", "/metrics/slis", "/readyz", "/readyz/*"))]),
        cluster_role("system:service-account-issuer-discovery", [
            urls(("get",), ("/.well-known/openid-configuration", "/openid/v1/jwks"))]),
        cluster_role("system:kube-scheduler", _scheduler_rules()),
        cluster_role("system:volume-scheduler", [
            rule(("get", "list", "patch", "update", "watch"), ("",), ("persistentvolumes",)),
            rule(READ, ("storage.k8s.io",), ("storageclasses",)),
            rule(("get", "list", "patch", "update", "watch"), ("",), ("persistentvolumeclaims",))]),
        cluster_role("system:kube-controller-manager", _controller_manager_rules()),
        cluster_role("system:kube-dns", [rule(("list", "watch"), ("",), ("endpoints", "services"))]),
        cluster_role("system:node", node_rules()),
        cluster_role("system:node-proxier", [
            rule(("list", "watch"), ("",), ("endpoints", "services")),
            rule(READ, ("",), ("nodes",)),
            events(),
            rule(("list", "watch"), ("discovery.k8s.io",), ("endpointslices",))]),
        cluster_role("system:node-bootstrapper", [
            rule(("create", "get", "list", "watch"), ("certificates.k8s.io",), ("certificatesigningrequests",))]),
        cluster_role("system:kubelet-api-admin", [
            rule(READ, ("",), ("nodes",)), rule(("proxy",), ("",), ("nodes",)),
            rule(("*",), ("",), ("nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"))]),
        # minik: a joining machine may exchange its bootstrap token for a node credential, nothing else
        cluster_role("system:minik:node-joiner", [urls(("post",), (JOIN_PATH,))]),
    ]
    roles += _certificate_roles()
    for account, rules in _controller_accounts().items():
        roles.append(cluster_role(CONTROLLER_ROLE_PREFIX + account, rules))
    return roles


def cluster_role_bindings() -> list[Obj]:
    bindings = [
        cluster_binding("cluster-admin", "cluster-admin", [group(MASTERS)]),
        cluster_binding("system:basic-user", "system:basic-user", [group(AUTHENTICATED)]),
        cluster_binding("system:discovery", "system:discovery", [group(AUTHENTICATED)]),
        cluster_binding("system:public-info-viewer", "system:public-info-viewer",
                        [group(AUTHENTICATED), group(UNAUTHENTICATED)]),
        cluster_binding("system:monitoring", "system:monitoring", [group("system:monitoring")]),
        cluster_binding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery",
                        [group(SERVICE_ACCOUNTS)]),
        cluster_binding("system:kube-scheduler", "system:kube-scheduler", [user(SCHEDULER)]),
        cluster_binding("system:volume-scheduler", "system:volume-scheduler", [user(SCHEDULER)]),
        cluster_binding("system:kube-controller-manager", "system:kube-controller-manager",
                        [user(CONTROLLER_MANAGER)]),
        cluster_binding("system:kube-dns", "system:kube-dns", [service_account("kube-system", "kube-dns")]),
        cluster_binding("system:node", "system:node", []),
        cluster_binding("system:node-proxier", "system:node-proxier", [user(KUBE_PROXY)]),
        # minik: who may read the cluster with a `minik token create --role view` token, and who may join
        cluster_binding("minik:view-tokens", "view", [group(VIEW_TOKENS)]),
        cluster_binding("system:minik:node-joiner", "system:minik:node-joiner", [group(JOIN_TOKENS)]),
        # as kubeadm binds them: a joining machine's bootstrap token may ask for its kubelet's client certificate,
        # which the csrapproving controller approves, and a node may renew its own
        cluster_binding("minik:kubelet-bootstrap", "system:node-bootstrapper", [group(JOIN_TOKENS)]),
        cluster_binding("minik:node-autoapprove-bootstrap",
                        "system:certificates.k8s.io:certificatesigningrequests:nodeclient", [group(JOIN_TOKENS)]),
        cluster_binding("minik:node-autoapprove-certificate-rotation",
                        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", [group(NODES)]),
    ]
    for account in _controller_accounts():
        name = CONTROLLER_ROLE_PREFIX + account
        bindings.append(cluster_binding(name, name, [service_account("kube-system", account)]))
    return bindings


def roles() -> list[Obj]:
    out = [
        role("extension-apiserver-authentication-reader", "kube-system", [
            rule(READ, ("",), ("configmaps",), ("extension-apiserver-authentication",))]),
        # kubeadm's: anyone may read kube-public/cluster-info, the CA a joining machine checks its pin against
        role("kubeadm:bootstrap-signer-clusterinfo", "kube-public", [
            rule(("get",), ("",), ("configmaps",), ("cluster-info",))]),
        # minik: the proxy of `minik up` publishes the cluster DNS as the kube-dns Service, and reads the
        # kubernetes Service to find the API server's cluster IP
        role("system:minik:kube-dns-publisher", "kube-system", [
            rule(("create", "get", "patch", "update"), ("",), ("services",))]),
        role("system:minik:kubernetes-service-reader", "default", [
            rule(("get",), ("",), ("services",), ("kubernetes",))]),
    ]
    for account, namespace, rules in NAMESPACED_CONTROLLERS.values():
        out.append(role(CONTROLLER_ROLE_PREFIX + account, namespace, rules))
    return out


def role_bindings() -> list[Obj]:
    out = [
        binding("kubeadm:bootstrap-signer-clusterinfo", "kube-public", "kubeadm:bootstrap-signer-clusterinfo",
                [user(ANONYMOUS)]),
        binding("system:minik:kube-dns-publisher", "kube-system", "system:minik:kube-dns-publisher",
                [user(KUBE_PROXY)]),
        binding("system:minik:kubernetes-service-reader", "default", "system:minik:kubernetes-service-reader",
                [user(KUBE_PROXY)]),
    ]
    for account, namespace, _rules in NAMESPACED_CONTROLLERS.values():
        name = CONTROLLER_ROLE_PREFIX + account
        out.append(binding(name, namespace, name, [service_account(namespace, account)]))
    return out


def service_accounts() -> list[Obj]:
    """The service accounts the controllers run as (kube-controller-manager makes them in Kubernetes)."""
    accounts = [("kube-system", account) for account in _controller_accounts()]
    accounts += [(namespace, account) for account, namespace, _rules in NAMESPACED_CONTROLLERS.values()]
    return [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}
            for namespace, name in accounts]


def controller_account(controller: str) -> tuple[str, str] | None:
    """The (namespace, service account) a controller runs as, or None for a controller minik does not know."""
    if controller in NAMESPACED_CONTROLLERS:
        account, namespace, _ = NAMESPACED_CONTROLLERS[controller]
        return namespace, account
    found = controller_roles().get(controller)
    return ("kube-system", found[0]) if found is not None else None
