"""The Node authorizer: what a kubelet (``system:node:NAME`` in ``system:nodes``) may read and write, as
Kubernetes' authorizer of the name decides it.

Secrets, ConfigMaps, PersistentVolumeClaims and service account tokens are reachable only through a pod bound to
the node: a node may get the Secret ``db-password`` in ``shop`` only while a pod on it refers to it, and may ask
for a token of the service account ``shop/default`` only while a pod on it runs as that account. ``NodeGraph``
keeps those relations, following the pods in the store (minik.store.follower): a pod's references are read once,
when it is first seen bound to a node (a pod's spec cannot change after that in the fields that refer to other
objects), and dropped when it is deleted. Everything else a node asks is decided by the rules of Kubernetes'
``system:node`` ClusterRole; NodeRestriction admission then narrows the writes to the node's own objects.

The node simulator (``system:minik:node-simulator``, the one kubelet of `minik up --fake-nodes N`) is every node
at once: it reaches what any bound pod refers to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from minik.api.podrefs import references
from minik.apiserver.auth.rbac import policy
from minik.apiserver.auth.rbac.rules import Rule, compile_rules
from minik.apiserver.authorization import AuthzAttributes, Decision
from minik.apiserver.request import User
from minik.store import Event, EventType, Record, Store
from minik.store.follower import Follower

Obj = dict[str, Any]

NODE_USER_PREFIX = "system:node:"
PODS = "/core/pods/"
ANY_NODE = "*"

#: what the graph relates: (plural, namespace, name)
Ref = tuple[str, str, str]


def node_of(user: User) -> str | None:
    """The node a user is (``*`` for the node simulator), or None for anyone else."""
    if user.name == policy.NODE_SIMULATOR:
        return ANY_NODE
    if policy.NODES in user.groups and user.name.startswith(NODE_USER_PREFIX):
        return user.name[len(NODE_USER_PREFIX):]
    return None


@dataclass(frozen=True, slots=True)
class _BoundPod:
    node: str
    refs: frozenset[Ref]


def pod_refs(pod: Obj) -> frozenset[Ref]:
    """Every object a pod lets its node read: its Secrets, ConfigMaps and claims, and its service account."""
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    refs = {(plural, namespace, name) for plural, name in references(pod) if name}
    account = (pod.get("spec") or {}).get("serviceAccountName")
    if isinstance(account, str) and account:
        refs.add(("serviceaccounts", namespace, account))
    return frozenset(refs)


class NodeGraph:
    """Which node runs which pod, and what each bound pod refers to."""

    def __init__(self) -> None:
        self._pods: dict[str, _BoundPod] = {}
        #: ref -> node -> how many of its pods refer to it
        self._reachable: dict[Ref, dict[str, int]] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def load(self, records: list[Record]) -> None:
        for key in list(self._pods):
            self._drop(key)
        for record in records:
            self._see(record.key, record.raw)

    def apply(self, events: list[Event]) -> None:
        for event in events:
            if event.type is EventType.DELETED:
                self._drop(event.key)
            else:
                self._see(event.key, event.raw)

    def _see(self, key: str, raw: bytes) -> None:
        if key in self._pods and b'"ephemeralContainers"' not in raw:
            return  # bound pods' references do not change (ephemeral containers may add some)
        if b'"nodeName"' not in raw:
            return  # not bound yet: most pod writes before scheduling are decided by this test alone
        pod = orjson.loads(raw)
        node = (pod.get("spec") or {}).get("nodeName")
        if not isinstance(node, str) or not node:
            return
        self._drop(key)
        bound = _BoundPod(node, pod_refs(pod))
        self._pods[key] = bound
        for ref in bound.refs:
            counts = self._reachable.setdefault(ref, {})
            counts[node] = counts.get(node, 0) + 1

    def _drop(self, key: str) -> None:
        bound = self._pods.pop(key, None)
        if bound is None:
            return
        for ref in bound.refs:
            counts = self._reachable.get(ref)
            if counts is None:
                continue
            left = counts.get(bound.node, 0) - 1
            if left > 0:
                counts[bound.node] = left
            else:
                counts.pop(bound.node, None)
                if not counts:
                    del self._reachable[ref]

    def reaches(self, node: str, ref: Ref) -> bool:
        """Whether a pod bound to ``node`` (any node, for ``*``) refers to ``ref``."""
        counts = self._reachable.get(ref)
        if not counts:
            return False
        return node == ANY_NODE or node in counts

    def pod_on(self, node: str, namespace: str, name: str) -> bool:
        bound = self._pods.get(f"{PODS}{namespace}/{name}")
        return bound is not None and (node == ANY_NODE or bound.node == node)


#: resources a node reaches only through its pods, and the verbs it may use on them (with a name)
_GRAPH_READS = {("", "secrets"), ("", "configmaps"), ("", "persistentvolumeclaims")}


class NodeAuthorizer:
    def __init__(self, store: Store) -> None:
        self.graph = NodeGraph()
        self.rules: tuple[Rule, ...] = compile_rules(policy.node_rules())
        self._follower = Follower(store, PODS, self.graph.load, self.graph.apply)

    def start(self) -> None:
        self._follower.start()

    async def stop(self) -> None:
        await self._follower.stop()

    async def authorize(self, user: User, attrs: AuthzAttributes) -> tuple[Decision, str]:
        node = node_of(user)
        if node is None:
            return Decision.NO_OPINION, ""
        if not node:
            return Decision.DENY, "unknown node for user"
        if attrs.resource_request:
            kind = (attrs.group, attrs.resource)
            if kind in _GRAPH_READS and not attrs.subresource:
                return self._graph_read(node, attrs)
            if kind == ("", "serviceaccounts") and attrs.subresource == "token":
                return self._token(node, attrs)
        if any(rule.allows(attrs) for rule in self.rules):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""

    def _graph_read(self, node: str, attrs: AuthzAttributes) -> tuple[Decision, str]:
        if attrs.verb not in ("get", "list", "watch") or not attrs.name:
            return Decision.DENY, "can only read individual resources of this type"
        if self.graph.reaches(node, (attrs.resource, attrs.namespace, attrs.name)):
            return Decision.ALLOW, ""
        return Decision.DENY, f"no relationship found between node '{node}' and this object"

    def _token(self, node: str, attrs: AuthzAttributes) -> tuple[Decision, str]:
        if attrs.verb != "create" or not attrs.name:
            return Decision.DENY, "can only create tokens for individual service accounts"
        if self.graph.reaches(node, ("serviceaccounts", attrs.namespace, attrs.name)):
            return Decision.ALLOW, ""
        return Decision.DENY, f"no relationship found between node '{node}' and this object"
