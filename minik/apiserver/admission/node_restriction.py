"""NodeRestriction: what a node (``system:node:NAME``) may write, checked on the objects themselves, as
Kubernetes' plugin of the name. The authorizer lets a node create Nodes, Leases and pods and touch pods bound
to it; this plugin makes sure the Node and Lease are its own, a created pod is a mirror pod bound to it, a pod
status it writes belongs to a pod bound to it, and its Node keeps what only admins may set.

A node's Node: it may create and update it, never delete it (in Kubernetes the node's role has no ``delete`` on
nodes; refused here too, in the authorizer's words, so a node cannot drop its Node with the admin's taints and
cordon and register it afresh). Labels are checked on every write, creation included: a node may set only the
kubelet's own ``kubernetes.io``/``k8s.io`` labels (``KUBELET_LABELS``, and the ``kubelet.kubernetes.io`` and
``node.kubernetes.io`` domains), never ``node-restriction.kubernetes.io`` ones, and any label of its own domain
(``example.com/x``). An update, through the status subresource too, may change neither the taints nor the
ownerReferences (through a dangling owner the garbage collector would delete the Node: CVE-2025-5187).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from minik.api.errors import StatusError, forbidden
from minik.api.podrefs import references
from minik.apiserver.admission.base import Attributes
from minik.apiserver.request import User

Obj = dict[str, Any]

NODES = "system:nodes"
NODE_USER_PREFIX = "system:node:"
NODE_SIMULATOR = "system:minik:node-simulator"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
RESTRICTED_LABEL_DOMAIN = "node-restriction.kubernetes.io"

#: the kubernetes.io labels a kubelet may set on its own Node (kubelet's well-known labels)
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os", "beta.kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/region", "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone"})
KUBELET_LABEL_DOMAINS = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _node_of(user: User) -> str | None:
    if user.name == NODE_SIMULATOR:
        return "*"
    if NODES in user.groups and user.name.startswith(NODE_USER_PREFIX):
        return user.name[len(NODE_USER_PREFIX):]
    return None


def _domain(label: str) -> str:
    prefix, slash, _ = label.partition("/")
    return prefix if slash else ""


def _in_domain(domain: str, parent: str) -> bool:
    return domain == parent or domain.endswith("." + parent)


def _changed_labels(new: dict[str, str], old: dict[str, str]) -> set[str]:
    return {k for k in set(new) | set(old) if new.get(k) != old.get(k)}


def forbidden_labels(labels: Iterable[str]) -> list[str]:
    """The labels among ``labels`` that a node may not add, change nor remove on its own Node (Kubernetes'
    rule, the same on create and update), sorted."""
    out = []
    for label in labels:
        domain = _domain(label)
        if _in_domain(domain, RESTRICTED_LABEL_DOMAIN):
            out.append(label)
        elif (_in_domain(domain, "kubernetes.io") or _in_domain(domain, "k8s.io")) and label not in KUBELET_LABELS \
                and not any(_in_domain(domain, d) for d in KUBELET_LABEL_DOMAINS):
            out.append(label)
    return sorted(out)


def _labels(obj: Obj | None) -> dict[str, str]:
    labels = ((obj or {}).get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _taints(obj: Obj) -> list[Any]:
    return list((obj.get("spec") or {}).get("taints") or [])


def _owners(obj: Obj) -> list[Any]:
    return list((obj.get("metadata") or {}).get("ownerReferences") or [])


class NodeRestriction:
    name = "NodeRestriction"

    async def validate(self, attrs: Attributes) -> None:
        node = _node_of(attrs.user)
        if node is None:
            return
        group, plural = attrs.resource.group, attrs.resource.plural
        if (group, plural) == ("", "pods"):
            self._pod(node, attrs)
        elif (group, plural) == ("", "nodes"):
            self._node(node, attrs)
        elif (group, plural) == ("coordination.k8s.io", "leases"):
            if attrs.namespace != "kube-node-lease" or (node != "*" and attrs.name != node):
                raise self._forbidden(attrs, f'node "{node}" is not allowed to modify lease "{attrs.name}"'
                                      if attrs.namespace == "kube-node-lease" else
                                      "can only access leases in the kube-node-lease namespace")

    @staticmethod
    def _forbidden(attrs: Attributes, reason: str) -> StatusError:
        what = attrs.resource.group_resource
        head = f'{what} "{attrs.name}" is forbidden' if attrs.name else f"{what} is forbidden"
        return forbidden(f"{head}: {reason}", attrs.resource.plural, attrs.resource.group, attrs.name)

    def _pod(self, node: str, attrs: Attributes) -> None:
        def bound(obj: Obj | None) -> bool:
            return node == "*" or ((obj or {}).get("spec") or {}).get("nodeName") == node

        if attrs.subresource == "status":
            if not bound(attrs.old):
                raise self._forbidden(attrs, f'node "{node}" can only update pod status for pods with spec.nodeName '
                                      "set to itself")
            if _labels(attrs.obj) != _labels(attrs.old):
                raise self._forbidden(attrs, f'node "{node}" cannot update labels through pod status')
            return
        if attrs.subresource is not None:
            raise self._forbidden(attrs, f"unexpected pod subresource \"{attrs.subresource}\", only 'status' and "
                                  "'eviction' are allowed")
        if attrs.operation == "DELETE":
            if not bound(attrs.old):
                raise self._forbidden(attrs, f'node "{node}" can only delete pods with spec.nodeName set to itself')
            return
        if attrs.operation != "CREATE":
            raise self._forbidden(attrs, f'unexpected operation "{attrs.operation}", node "{node}" can only create '
                                  "and delete mirror pods")
        pod = attrs.obj or {}
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        if MIRROR_ANNOTATION not in annotations:
            raise self._forbidden(attrs, f'pod does not have "{MIRROR_ANNOTATION}" annotation, node "{node}" can '
                                  "only create mirror pods")
        if not bound(pod):
            raise self._forbidden(attrs, f'node "{node}" can only create pods with spec.nodeName set to itself')
        spec = pod.get("spec") or {}
        if spec.get("serviceAccountName") not in (None, ""):
            raise self._forbidden(attrs, f'node "{node}" can not create pods that reference a service account')
        kinds = {kind for kind, _ in references(pod)}
        for kind in ("secrets", "configmaps"):
            if kind in kinds:
                raise self._forbidden(attrs, f'node "{node}" can not create pods that reference {kind}')

    def _node(self, node: str, attrs: Attributes) -> None:
        if node != "*" and attrs.name != node:
            raise self._forbidden(attrs, f'node "{node}" is not allowed to modify node "{attrs.name}"')
        if attrs.operation == "DELETE":
            # what Kubernetes' authorizer answers (the node role has no delete on nodes): no reason is added
            raise self._forbidden(attrs, f'User "{attrs.user.name}" cannot delete resource "nodes" in API group "" '
                                  "at the cluster scope")
        if attrs.operation == "CREATE":
            bad = forbidden_labels(_labels(attrs.obj))
            if bad:
                raise self._forbidden(attrs, f'node "{node}" is not allowed to set the following labels: '
                                      f'{", ".join(bad)}')
        elif attrs.operation == "UPDATE":  # the main resource and status alike
            new, old = attrs.obj or {}, attrs.old or {}
            if _taints(new) != _taints(old):
                raise self._forbidden(attrs, f'node "{node}" is not allowed to modify taints')
            if _owners(new) != _owners(old):
                raise self._forbidden(attrs, f'node "{node}" is not allowed to modify ownerReferences')
            bad = forbidden_labels(_changed_labels(_labels(new), _labels(old)))
            if bad:
                raise self._forbidden(attrs, f'is not allowed to modify labels: {", ".join(bad)}')
