"""The RBAC authorizer: Roles, ClusterRoles and their bindings, indexed by subject and kept current from the store.

What a user may do in a namespace is the union of the rules of every ClusterRoleBinding and of every
RoleBinding in that namespace whose subjects name the user, one of their groups, or (for service accounts,
``system:serviceaccount:NS:NAME``) their service account. The index maps each subject to the bindings that name
it, so finding a user's bindings costs a look-up per group, not a walk of every binding; the compiled rules of a
(user, namespace) pair are remembered until any RBAC object changes. A binding whose role does not exist grants
nothing (and is no error), as in Kubernetes.

The index follows the store (minik.store.follower): every RBAC write is in it before the write is acknowledged.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from minik.apiserver.auth.rbac.rules import Rule, compile_rules
from minik.apiserver.auth.serviceaccounts import parse_service_account_name, service_account_name
from minik.apiserver.authorization import AuthzAttributes, Decision
from minik.apiserver.request import User
from minik.store import Event, EventType, Record, Store
from minik.store.follower import Follower

Obj = dict[str, Any]

#: store prefixes of the four kinds (the registry's keys: /GROUP/PLURAL/)
ROLES = "/rbac.authorization.k8s.io/roles/"
CLUSTER_ROLES = "/rbac.authorization.k8s.io/clusterroles/"
ROLE_BINDINGS = "/rbac.authorization.k8s.io/rolebindings/"
CLUSTER_ROLE_BINDINGS = "/rbac.authorization.k8s.io/clusterrolebindings/"

#: a subject as the index keys it: ("User", name) or ("Group", name); a service account is the user it
#: authenticates as
SubjectKey = tuple[str, str]


def subject_keys(subjects: Any, namespace: str) -> list[SubjectKey]:
    """The index keys of a binding's subjects (a service account without a namespace is in the binding's)."""
    keys: list[SubjectKey] = []
    for subject in subjects if isinstance(subjects, list) else []:
        if not isinstance(subject, dict) or not isinstance(subject.get("name"), str):
            continue
        kind, name = subject.get("kind"), subject["name"]
        if kind in ("User", "Group"):
            keys.append((kind, name))
        elif kind == "ServiceAccount":
            keys.append(("User", service_account_name(str(subject.get("namespace") or namespace), name)))
    return keys


@dataclass(frozen=True, slots=True)
class Binding:
    """What the index keeps of a RoleBinding or ClusterRoleBinding."""

    key: str
    namespace: str  # "" for a ClusterRoleBinding
    name: str
    role_kind: str
    role_name: str
    subjects: tuple[SubjectKey, ...]

    @classmethod
    def parse(cls, key: str, obj: Obj) -> Binding | None:
        meta = obj.get("metadata") or {}
        ref = obj.get("roleRef")
        if not isinstance(ref, dict) or not isinstance(meta, dict):
            return None
        namespace = str(meta.get("namespace") or "")
        return cls(key, namespace, str(meta.get("name") or ""), str(ref.get("kind") or ""),
                   str(ref.get("name") or ""), tuple(subject_keys(obj.get("subjects"), namespace)))

    def describe(self) -> str:
        """How Kubernetes names a binding in reasons: ``RoleBinding "x" of Role "y" to User "z"``."""
        if self.namespace:
            return f'RoleBinding "{self.name}/{self.namespace}" of {self.role_kind} "{self.role_name}"'
        return f'ClusterRoleBinding "{self.name}" of {self.role_kind} "{self.role_name}"'


def user_keys(user: User) -> list[SubjectKey]:
    return [("User", user.name), *(("Group", group) for group in user.groups)]


class RbacIndex:
    """Roles, ClusterRoles and bindings as the index keeps them; fed by ``load`` and ``apply`` (Follower's
    callbacks), read by the authorizer, the escalation check and the access reviews."""

    #: (user, groups, namespace) rule sets remembered; the memo starts over when full
    MEMO_SIZE = 4096

    def __init__(self) -> None:
        self.roles: dict[tuple[str, str], tuple[Rule, ...]] = {}
        self.cluster_roles: dict[str, tuple[Rule, ...]] = {}
        self.bindings: dict[str, Binding] = {}
        #: (namespace or "" for cluster bindings, subject) -> binding keys
        self._by_subject: dict[tuple[str, SubjectKey], dict[str, None]] = {}
        self._memo: dict[tuple[str, tuple[str, ...], str], tuple[Rule, ...]] = {}
        #: bumped at every change (readers that remember answers compare it)
        self.generation = 0

    # -- feeding ---------------------------------------------------------------------------------------------
    def load(self, prefix: str, records: list[Record]) -> None:
        """Replace every object under ``prefix`` (one of the four kinds) by ``records``."""
        for key in self._keys_under(prefix):
            self._remove(key)
        for record in records:
            self._put(record.key, record.raw)
        self._changed()

    def apply(self, events: list[Event]) -> None:
        for event in events:
            if event.type is EventType.DELETED:
                self._remove(event.key)
            else:
                self._put(event.key, event.raw)
        self._changed()

    def _keys_under(self, prefix: str) -> list[str]:
        if prefix == ROLES:
            return [f"{ROLES}{namespace}/{name}" for namespace, name in self.roles]
        if prefix == CLUSTER_ROLES:
            return [CLUSTER_ROLES + name for name in self.cluster_roles]
        return [key for key in self.bindings if key.startswith(prefix)]

    def _changed(self) -> None:
        self._memo.clear()
        self.generation += 1

    def _put(self, key: str, raw: bytes) -> None:
        obj = orjson.loads(raw)
        meta = obj.get("metadata") or {}
        if key.startswith(ROLES):
            self.roles[(str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = compile_rules(
                obj.get("rules"))
        elif key.startswith(CLUSTER_ROLES):
            self.cluster_roles[str(meta.get("name") or "")] = compile_rules(obj.get("rules"))
        else:
            self._remove(key)
            binding = Binding.parse(key, obj)
            if binding is not None:
                self.bindings[key] = binding
                for subject in binding.subjects:
                    self._by_subject.setdefault((binding.namespace, subject), {})[key] = None

    def _remove(self, key: str) -> None:
        if key.startswith(ROLES):
            namespace, _, name = key[len(ROLES):].partition("/")
            self.roles.pop((namespace, name), None)
        elif key.startswith(CLUSTER_ROLES):
            self.cluster_roles.pop(key[len(CLUSTER_ROLES):], None)
        else:
            binding = self.bindings.pop(key, None)
            if binding is not None:
                for subject in binding.subjects:
                    keys = self._by_subject.get((binding.namespace, subject))
                    if keys is not None:
                        keys.pop(key, None)
                        if not keys:
                            del self._by_subject[(binding.namespace, subject)]

    # -- reading ---------------------------------------------------------------------------------------------
    def role_rules(self, kind: str, name: str, namespace: str) -> tuple[Rule, ...]:
        if kind == "ClusterRole":
            return self.cluster_roles.get(name, ())
        if kind == "Role":
            return self.roles.get((namespace, name), ())
        return ()

    def bindings_for(self, user: User, namespace: str) -> Iterator[Binding]:
        """The ClusterRoleBindings, then the RoleBindings of ``namespace`` (when given), that name ``user``."""
        scopes = ("", namespace) if namespace else ("",)
        seen: set[str] = set()
        for scope in scopes:
            for subject in user_keys(user):
                for key in self._by_subject.get((scope, subject), ()):
                    if key not in seen:
                        seen.add(key)
                        yield self.bindings[key]

    def rules_for(self, user: User, namespace: str) -> tuple[Rule, ...]:
        """Every rule that applies to ``user`` in ``namespace`` ("" : the cluster-wide rules only)."""
        memo_key = (user.name, user.groups, namespace)
        rules = self._memo.get(memo_key)
        if rules is None:
            collected: list[Rule] = []
            for binding in self.bindings_for(user, namespace):
                collected.extend(self.role_rules(binding.role_kind, binding.role_name, binding.namespace))
            rules = tuple(collected)
            if len(self._memo) >= self.MEMO_SIZE:
                self._memo.clear()
            self._memo[memo_key] = rules
        return rules


class RbacAuthorizer:
    """The authorizer: ALLOW when a rule bound to the user grants the request, else NO_OPINION (RBAC never
    denies outright, so that the authorizers after it may still allow)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.index = RbacIndex()
        self._followers = [Follower(store, prefix, functools.partial(self.index.load, prefix), self.index.apply)
                           for prefix in (CLUSTER_ROLES, ROLES, CLUSTER_ROLE_BINDINGS, ROLE_BINDINGS)]

    def start(self) -> None:
        for follower in self._followers:
            follower.start()

    async def stop(self) -> None:
        for follower in self._followers:
            await follower.stop()

    async def authorize(self, user: User, attrs: AuthzAttributes) -> tuple[Decision, str]:
        for rule in self.index.rules_for(user, attrs.namespace):
            if rule.allows(attrs):
                return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""

    def allowed_by(self, user: User, attrs: AuthzAttributes) -> str:
        """Why RBAC allows a request, as Kubernetes says it in a SubjectAccessReview: ``RBAC: allowed by
        RoleBinding "NAME/NS" of ClusterRole "view" to User "alice"``; "" when it does not."""
        keys = set(user_keys(user))
        for binding in self.index.bindings_for(user, attrs.namespace):
            rules = self.index.role_rules(binding.role_kind, binding.role_name, binding.namespace)
            if any(rule.allows(attrs) for rule in rules):
                kind, name = next(s for s in binding.subjects if s in keys)
                account = parse_service_account_name(name)
                subject = f'ServiceAccount "{account[1]}/{account[0]}"' if account else f'{kind} "{name}"'
                return f"RBAC: allowed by {binding.describe()} to {subject}"
        return ""
