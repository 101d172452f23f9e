"""RBAC's escalation prevention, as Kubernetes' rbac registry does it: nobody grants what they do not hold.

- A Role or ClusterRole may be created or updated only by someone who holds every permission it grants (in the
  role's namespace, or cluster-wide for a ClusterRole), or who may ``escalate`` roles. An aggregationRule can
  gather anything, so setting one needs every permission there is.
- A RoleBinding or ClusterRoleBinding may be created or updated only by someone who holds every permission of
  the role it refers to, or who may ``bind`` that role.
- Members of ``system:masters`` are never stopped (the API server itself writes with that group).

Checked as a validating admission step, so a refused write stores nothing; the refusal is a 403 worded as
Kubernetes words it.
"""

from __future__ import annotations

from typing import Any

from minik.api.errors import StatusError, forbidden
from minik.apiserver.admission.base import Attributes
from minik.apiserver.auth.rbac import policy
from minik.apiserver.auth.rbac.authorizer import RbacIndex
from minik.apiserver.auth.rbac.rules import Rule, compile_rules, describe, uncovered
from minik.apiserver.authorization import MASTERS, Authorizer, AuthzAttributes, Decision
from minik.apiserver.request import User

Obj = dict[str, Any]

#: every permission there is, which setting an aggregationRule requires
FULL_AUTHORITY = compile_rules([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                                {"verbs": ["*"], "nonResourceURLs": ["*"]}])


def _compact(rules: list[Rule]) -> list[Rule]:
    """Broken-down rules merged back where only their verbs differ (what Kubernetes prints)."""
    merged: dict[tuple[frozenset[str], ...], set[str]] = {}
    for rule in rules:
        merged.setdefault((rule.groups, rule.resources, rule.names, rule.urls), set()).update(rule.verbs)
    return [Rule(frozenset(verbs), *key) for key, verbs in merged.items()]


def _go_strings(values: tuple[str, ...]) -> str:
    return "[" + " ".join(f'"{v}"' for v in values) + "]"


class RbacEscalation:
    name = "RBACEscalation"

    def __init__(self, index: RbacIndex, authorizer: Authorizer) -> None:
        self.index = index
        self.authorizer = authorizer

    async def validate(self, attrs: Attributes) -> None:
        if attrs.resource.group != policy.RBAC_GROUP or attrs.operation not in ("CREATE", "UPDATE") \
                or attrs.subresource is not None or not isinstance(attrs.obj, dict) or MASTERS in attrs.user.groups:
            return
        plural = attrs.resource.plural
        namespace = attrs.namespace or ""
        if plural in ("roles", "clusterroles"):
            if await self._may(attrs.user, AuthzAttributes("escalate", policy.RBAC_GROUP, plural,
                                                           namespace=namespace, name=attrs.name)):
                return
            self._confirm(attrs, compile_rules(attrs.obj.get("rules")), namespace)
            old_rule = (attrs.old or {}).get("aggregationRule")
            if plural == "clusterroles" and attrs.obj.get("aggregationRule") and \
                    attrs.obj.get("aggregationRule") != old_rule:
                if uncovered(self.index.rules_for(attrs.user, ""), FULL_AUTHORITY):
                    raise self._forbidden(attrs, "must have cluster-admin privileges to use the aggregationRule")
        elif plural in ("rolebindings", "clusterrolebindings"):
            ref = attrs.obj.get("roleRef")
            if not isinstance(ref, dict):
                return  # validation reports it
            kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
            role_plural = "roles" if kind == "Role" else "clusterroles"
            role_namespace = namespace if kind == "Role" else ""
            if await self._may(attrs.user, AuthzAttributes("bind", policy.RBAC_GROUP, role_plural,
                                                           namespace=namespace, name=name)):
                return
            self._confirm(attrs, self.index.role_rules(kind, name, role_namespace), namespace)

    async def _may(self, user: User, question: AuthzAttributes) -> bool:
        decision, _ = await self.authorizer.authorize(user, question)
        return decision is Decision.ALLOW

    def _confirm(self, attrs: Attributes, requested: tuple[Rule, ...], namespace: str) -> None:
        missing = uncovered(self.index.rules_for(attrs.user, namespace), requested)
        if missing:
            user = attrs.user
            lines = "\n".join(describe(rule) for rule in _compact(missing))
            raise self._forbidden(attrs, f'user "{user.name}" (groups={_go_strings(user.groups)}) is attempting to '
                                         f"grant RBAC permissions not currently held:\n{lines}")

    @staticmethod
    def _forbidden(attrs: Attributes, reason: str) -> StatusError:
        what = attrs.resource.group_resource
        return forbidden(f'{what} "{attrs.name}" is forbidden: {reason}', attrs.resource.plural,
                         attrs.resource.group, attrs.name)
