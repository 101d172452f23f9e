"""What an authorizer is asked and how the answers of several combine, as in Kubernetes' authorizer package.

A request is described by ``AuthzAttributes`` (a resource request: verb, API group, resource, subresource,
namespace, name; or a non-resource request: verb and path). Each authorizer answers ALLOW, DENY or NO_OPINION
with a reason; ``AuthorizerChain`` asks them in order and takes the first answer that is not NO_OPINION
(kube-apiserver's ``--authorization-mode=Node,RBAC`` behind the privileged group ``system:masters``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from minik.apiserver.request import User
from minik.apiserver.requestinfo import RequestInfo

#: the group whose members may do anything, checked before every other authorizer (kube-apiserver's
#: privileged-group authorizer: the API server's own loopback identity and the admin's certificate)
MASTERS = "system:masters"


class Decision(enum.Enum):
    ALLOW = "allow"
    DENY = "deny"
    NO_OPINION = "no-opinion"


@dataclass(frozen=True, slots=True)
class AuthzAttributes:
    """One question for the authorizers (Kubernetes' authorizer.Attributes, without the user)."""

    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    #: a non-resource request (``/version``, ``/healthz``): its path, and resource_request False
    path: str = ""
    resource_request: bool = True

    @classmethod
    def for_request(cls, info: RequestInfo) -> AuthzAttributes:
        namespace = info.namespace or ""
        if info.resource.plural == "namespaces" and info.resource.group == "" and info.name:
            namespace = info.name  # a namespace is itself the namespace of requests for it, as in Kubernetes
        return cls(info.verb, info.resource.group, info.resource.plural, info.subresource or "", namespace,
                   info.name or "")

    @classmethod
    def for_path(cls, method: str, path: str) -> AuthzAttributes:
        verb = {"HEAD": "get"}.get(method, method.lower())
        return cls(verb, path=path, resource_request=False)


class Authorizer(Protocol):
    async def authorize(self, user: User, attrs: AuthzAttributes) -> tuple[Decision, str]:
        """ALLOW, DENY or NO_OPINION, with a reason for the refusal message (may be empty)."""
        ...


class PrivilegedGroups:
    """Members of ``system:masters`` may do anything; everyone else is left to the next authorizer."""

    async def authorize(self, user: User, attrs: AuthzAttributes) -> tuple[Decision, str]:
        return (Decision.ALLOW if MASTERS in user.groups else Decision.NO_OPINION), ""


class AuthorizerChain:
    """Asks each authorizer in turn: the first ALLOW or DENY decides; when all have no opinion the request is
    denied, with their reasons joined."""

    def __init__(self, authorizers: Sequence[Authorizer]) -> None:
        self.authorizers = list(authorizers)

    async def authorize(self, user: User, attrs: AuthzAttributes) -> tuple[Decision, str]:
        reasons: list[str] = []
        for authorizer in self.authorizers:
            decision, reason = await authorizer.authorize(user, attrs)
            if decision is not Decision.NO_OPINION:
                return decision, reason
            if reason:
                reasons.append(reason)
        return Decision.NO_OPINION, ", ".join(reasons)

    async def allowed(self, user: User, attrs: AuthzAttributes) -> bool:
        return (await self.authorize(user, attrs))[0] is Decision.ALLOW
