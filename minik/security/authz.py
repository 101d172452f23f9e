"""Authorization: which user may do which verb on which resource (the ``Authorizer`` protocol of the pipeline).

Roles, by identity (Kubernetes' names where Kubernetes has them):

- **admin**: the group ``system:masters`` (the kubeconfig `minik up` writes; the API server's own writes):
  everything.
- **view**: tokens of ``minik token create --role view`` (group ``system:bootstrappers:minik:view``): get, list
  and watch everything except Secrets, as Kubernetes' ``view`` ClusterRole.
- **node**: ``system:node:NAME`` in ``system:nodes`` (what a join hands a node): Kubernetes' node authorizer. It
  reads nodes, pods, services, endpoints and namespaces, and the ConfigMaps and Secrets only of pods bound to
  it; writes its own Node and its own Lease in kube-node-lease, the status of (and deletes, evicts) pods bound
  to it, creates mirror pods and events. What the written objects may hold is NodeRestriction admission's part
  (``minik.apiserver.admission.node_restriction``).
- **join**: node-role bootstrap tokens (group ``system:bootstrappers:minik:node``) may only exchange themselves
  for a node credential (``joinserver``).
- **scheduler** (``system:kube-scheduler``, the in-process scheduler): reads all but Secrets; binds and evicts
  pods, deletes them (preemption), writes pod status, events and leases, as Kubernetes' ClusterRole of the name.
- **controllers** (``system:kube-controller-manager``): every verb on every resource. Kubernetes splits this
  among per-controller service accounts; minik has no service accounts, and its controller manager runs inside
  the server's own process and hosts the garbage collector and namespace controller, which must delete
  anything.
- **proxy** (``system:kube-proxy``): reads all but Secrets, writes events (Kubernetes' system:node-proxier), and
  creates Services in kube-system: it publishes the cluster DNS as the ``kube-dns`` Service.
- **node simulator** (``system:minik:node-simulator``, the in-process node component when ``--fake-nodes`` is
  given, since one kubelet then serves every simulated node): the node role for any node name.
- **anonymous** (no credentials): only ``kube-public/cluster-info`` (as kubeadm's cluster-info reader role);
  the server answers 401 to anything else, and serves /healthz, /livez, /readyz and /version to everyone.
"""

from __future__ import annotations

from typing import Any

from minik.api.podrefs import references
from minik.apiserver.request import User
from minik.apiserver.requestinfo import RequestInfo
from minik.security import tokens
from minik.security.authn import is_anonymous
from minik.store import Store

Obj = dict[str, Any]

MASTERS = "system:masters"
SCHEDULER = "system:kube-scheduler"
CONTROLLER_MANAGER = "system:kube-controller-manager"
NODE_SIMULATOR = "system:minik:node-simulator"
KUBE_PROXY = "system:kube-proxy"
VIEW_GROUP = tokens.ROLE_GROUPS["view"]
JOIN_GROUP = tokens.ROLE_GROUPS["node"]

READ = frozenset({"get", "list", "watch"})
WRITE_EVENTS = frozenset({"create", "update", "patch"})
LEASE_NAMESPACE = "kube-node-lease"
CLUSTER_INFO = ("kube-public", "cluster-info")

#: what a node may read without a relationship (group, plural)
_NODE_READABLE = {("", "nodes"), ("", "pods"), ("", "services"), ("", "endpoints"), ("", "namespaces")}


def node_name(user: User) -> str | None:
    """The node a user is (``system:node:NAME`` in ``system:nodes``), "*" for the node simulator, else None."""
    if user.name == NODE_SIMULATOR:
        return "*"
    if tokens.NODES in user.groups and user.name.startswith(tokens.NODE_USER_PREFIX):
        return user.name[len(tokens.NODE_USER_PREFIX):] or None
    return None


def is_admin(user: User) -> bool:
    return MASTERS in user.groups


class RoleAuthorizer:
    """The cluster's authorizer: None to allow, else the reason for the 403 (empty when there is nothing to add,
    as Kubernetes' RBAC denies)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def authorize(self, user: User, info: RequestInfo) -> str | None:
        if is_admin(user) or user.name == CONTROLLER_MANAGER:
            return None
        group, plural, verb = info.resource.group, info.resource.plural, info.verb
        if is_anonymous(user):
            if (group, plural, verb) == ("", "configmaps", "get") and (info.namespace, info.name) == CLUSTER_INFO:
                return None
            return ""
        node = node_name(user)
        if node is not None:
            return await self._node(node, info)
        if user.name == SCHEDULER:
            return self._scheduler(info)
        if user.name == KUBE_PROXY:  # Kubernetes' system:node-proxier: reads, and events
            if verb in READ and not (group == "" and plural == "secrets"):
                return None
            if (group, plural) in (("", "events"), ("events.k8s.io", "events")) and verb in WRITE_EVENTS:
                return None
            if (group, plural, verb, info.namespace) == ("", "services", "create", "kube-system"):
                return None  # the cluster DNS Service (kube-dns), which the proxy of `minik up` publishes
            return ""
        if VIEW_GROUP in user.groups and verb in READ and not (group == "" and plural == "secrets"):
            return None
        return ""

    @staticmethod
    def _scheduler(info: RequestInfo) -> str | None:
        group, plural, verb, sub = info.resource.group, info.resource.plural, info.verb, info.subresource
        if verb in READ and not (group == "" and plural == "secrets"):
            return None
        if (group, plural) == ("", "pods"):
            if (verb, sub) in (("create", "binding"), ("create", "eviction"), ("delete", None),
                               ("update", "status"), ("patch", "status")):
                return None
        if (group, plural) in (("", "events"), ("events.k8s.io", "events")) and verb in WRITE_EVENTS:
            return None
        if (group, plural) == ("coordination.k8s.io", "leases") and verb in ("create", "update", "patch"):
            return None
        return ""

    async def _node(self, node: str, info: RequestInfo) -> str | None:
        group, plural, verb, sub = info.resource.group, info.resource.plural, info.verb, info.subresource
        anyone = node == "*"
        if verb in READ and (group, plural) in _NODE_READABLE and sub in (None, "status"):
            return None
        if (group, plural) == ("", "nodes"):
            if verb == "create" or (verb in ("update", "patch", "delete") and (anyone or info.name == node)):
                return None  # the name of a created Node is NodeRestriction's to check
            return f"node '{node}' cannot modify node '{info.name}'" if info.name else ""
        if (group, plural) == ("coordination.k8s.io", "leases") and info.namespace == LEASE_NAMESPACE:
            if verb == "create" or (verb in ("get", "update", "patch", "delete") and (anyone or info.name == node)):
                return None
            return ""
        if (group, plural) in (("", "events"), ("events.k8s.io", "events")) and verb in WRITE_EVENTS:
            return None
        if (group, plural) == ("", "pods"):
            if verb == "create" and sub is None:
                return None  # only mirror pods bound to itself: NodeRestriction
            if (verb, sub) in (("update", "status"), ("patch", "status"), ("delete", None), ("create", "eviction")):
                pod = self._get("pods", info.namespace, info.name)
                if pod is not None and (anyone or (pod.get("spec") or {}).get("nodeName") == node):
                    return None
                return f"no relationship found between node '{node}' and this object"
            return ""
        if (group, plural) in (("", "configmaps"), ("", "secrets")) and verb == "get" and info.name:
            if await self._referenced(node, plural, info.namespace or "", info.name):
                return None
            return f"no relationship found between node '{node}' and this object"
        return ""

    def _get(self, plural: str, namespace: str | None, name: str | None) -> Obj | None:
        record = self.store.get(f"/core/{plural}/{namespace}/{name}")
        return record.object() if record is not None else None

    async def _referenced(self, node: str, plural: str, namespace: str, name: str) -> bool:
        """Whether a pod bound to ``node`` (any node for the simulator) in ``namespace`` references the object."""
        listed = await self.store.list(f"/core/pods/{namespace}/")
        for record in listed.items:
            pod = record.object()
            bound = (pod.get("spec") or {}).get("nodeName")
            if bound and (node == "*" or bound == node) and (plural, name) in set(references(pod)):
                return True
        return False
