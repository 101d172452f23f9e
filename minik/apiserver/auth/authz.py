"""The cluster's authorization, as kube-apiserver's ``--authorization-mode=Node,RBAC``: the privileged group
``system:masters`` first, then the Node authorizer (minik.apiserver.auth.nodeauthz), then RBAC (minik.apiserver.auth.rbac).

Who is who, and what they may do, is RBAC's bootstrap policy (minik.apiserver.auth.rbac.policy), visible with
``kubectl get clusterroles,clusterrolebindings``:

- **admin** (``system:masters``): the kubeconfig `minik up` writes, and the API server's own writes.
- **people** with a client certificate (`minik kubeconfig --user NAME --group GROUP`) or a view token
  (`minik token create --role view`, group ``system:bootstrappers:minik:view``, bound to ``view``): what their
  bindings grant.
- **nodes** (``system:node:NAME`` in ``system:nodes``): the Node authorizer, with NodeRestriction admission.
- **the scheduler** (``system:kube-scheduler``), **the proxy** (``system:kube-proxy``): their ClusterRoles, as
  Kubernetes ships them (plus what the proxy needs to publish the cluster DNS).
- **the controllers**: each runs as its own service account in kube-system, bound to its
  ``system:controller:NAME`` ClusterRole; the controller manager's shared informers run as
  ``system:kube-controller-manager``.
- **join tokens** (group ``system:bootstrappers:minik:node``): may only exchange themselves for a node credential.
- **anonymous**: ``kube-public/cluster-info`` (kubeadm's role for it) and the health and version endpoints; the
  server answers 401 to anything else it is denied.
"""

from __future__ import annotations

from minik.apiserver.auth.nodeauthz import NodeAuthorizer
from minik.apiserver.auth.rbac import policy
from minik.apiserver.auth.rbac.authorizer import RbacAuthorizer
from minik.apiserver.authorization import MASTERS, AuthorizerChain, PrivilegedGroups
from minik.apiserver.request import User
from minik.store import Store

__all__ = ["ClusterAuthorizer", "CONTROLLER_MANAGER", "KUBE_PROXY", "MASTERS", "NODE_SIMULATOR", "SCHEDULER",
           "is_admin"]

SCHEDULER = policy.SCHEDULER
CONTROLLER_MANAGER = policy.CONTROLLER_MANAGER
KUBE_PROXY = policy.KUBE_PROXY
NODE_SIMULATOR = policy.NODE_SIMULATOR


def is_admin(user: User) -> bool:
    return MASTERS in user.groups


class ClusterAuthorizer(AuthorizerChain):
    """system:masters, then Node, then RBAC; started with the server (its indexes follow the store) and stopped
    before the store closes."""

    def __init__(self, store: Store) -> None:
        self.node = NodeAuthorizer(store)
        self.rbac = RbacAuthorizer(store)
        super().__init__([PrivilegedGroups(), self.node, self.rbac])

    def start(self) -> None:
        self.node.start()
        self.rbac.start()

    async def stop(self) -> None:
        await self.rbac.stop()
        await self.node.stop()
