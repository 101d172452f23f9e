"""The review APIs: questions about identities and permissions that are answered, not stored, as Kubernetes'
authentication.k8s.io and authorization.k8s.io groups answer them.

- TokenReview: who is this bearer token? (a webhook or proxy checking tokens it was handed)
- SelfSubjectReview: who am I? (`kubectl auth whoami`)
- SubjectAccessReview, LocalSubjectAccessReview: may this user do this? (in a namespace, for the local kind)
- SelfSubjectAccessReview: may I? (`kubectl auth can-i VERB RESOURCE`)
- SelfSubjectRulesReview: what may I do in this namespace? (`kubectl auth can-i --list`)

Each is a POST of the object with its ``spec``; the answer is the same object with its ``status`` filled in, 201.
Asking is authorized like any create (the bootstrap policy lets everyone ask about themselves).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from minik.api.errors import Cause, bad_request, invalid
from minik.api.kinds.common import dict_at
from minik.apiserver import codec
from minik.apiserver.auth.authn import TokenAuthenticator
from minik.apiserver.auth.nodeauthz import NodeAuthorizer, node_of
from minik.apiserver.auth.rbac.authorizer import RbacAuthorizer
from minik.apiserver.authorization import AuthorizerChain, AuthzAttributes, Decision
from minik.apiserver.request import ApiRequest, ApiResponse, User
from minik.apiserver.requestinfo import RequestInfo

if TYPE_CHECKING:
    from minik.apiserver.server import ApiServer

Obj = dict[str, Any]

AUTHENTICATION = "authentication.k8s.io"
AUTHORIZATION = "authorization.k8s.io"

#: (group, plural) -> kind of every review
KINDS = {(AUTHENTICATION, "tokenreviews"): "TokenReview", (AUTHENTICATION, "selfsubjectreviews"): "SelfSubjectReview",
         (AUTHORIZATION, "subjectaccessreviews"): "SubjectAccessReview",
         (AUTHORIZATION, "selfsubjectaccessreviews"): "SelfSubjectAccessReview",
         (AUTHORIZATION, "localsubjectaccessreviews"): "LocalSubjectAccessReview",
         (AUTHORIZATION, "selfsubjectrulesreviews"): "SelfSubjectRulesReview"}


def user_info(user: User) -> Obj:
    """A user as the reviews print one (authentication.k8s.io/v1 UserInfo)."""
    info: Obj = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        info["uid"] = user.uid
    if user.extra:
        info["extra"] = {key: list(values) for key, values in user.extra}
    return info


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


class Reviews:
    """The handlers of the six review kinds, sharing the cluster's authenticator and authorizers."""

    def __init__(self, authenticator: TokenAuthenticator, authorizer: AuthorizerChain, rbac: RbacAuthorizer,
                 node: NodeAuthorizer) -> None:
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.rbac = rbac
        self.node = node

    def route(self, api: ApiServer) -> None:
        """Serve the creates of every review kind (the API server refuses their other verbs)."""
        for group, plural in KINDS:
            api.route(group, plural, None, "create", self.handle)

    async def handle(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        group, plural = info.resource.group, info.resource.plural
        kind = KINDS[(group, plural)]
        body = codec.decode_object(request.body, request.headers.get("Content-Type"))
        if body.get("kind") not in (None, kind):
            raise bad_request(f"expected a {kind}, not {body.get('kind')}")
        spec = dict_at(body, "spec")
        if plural == "tokenreviews":
            status = await self._token(spec)
        elif plural == "selfsubjectreviews":
            status = {"userInfo": user_info(user)}
        elif plural == "selfsubjectrulesreviews":
            status = self._rules(user, str(spec.get("namespace") or ""))
        else:
            subject = user if plural == "selfsubjectaccessreviews" else self._subject(kind, spec)
            status = await self._access(kind, subject, spec, info.namespace)
        meta = dict_at(body, "metadata")
        answer = {"kind": kind, "apiVersion": f"{group}/v1", "metadata": {**meta, "creationTimestamp": None},
                  "spec": spec, "status": status}
        return ApiResponse(201, orjson.dumps(answer))

    async def _token(self, spec: Obj) -> Obj:
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            raise invalid("TokenReview", AUTHENTICATION, "", [Cause("spec.token", "FieldValueRequired",
                                                                   "Required value")])
        wanted = _strings(spec.get("audiences"))
        accepted = self.authenticator.audiences
        if wanted and not set(wanted) & set(accepted):
            return {"authenticated": False, "user": {}, "error": "token audiences are invalid for the target "
                                                                 "audiences"}
        user = await self.authenticator.authenticate_bearer(token)
        if user is None:
            return {"authenticated": False, "user": {}, "error": "the token is not valid"}
        return {"authenticated": True, "user": user_info(user),
                "audiences": [a for a in wanted if a in accepted] if wanted else list(accepted)}

    @staticmethod
    def _subject(kind: str, spec: Obj) -> User:
        name, groups = spec.get("user"), _strings(spec.get("groups"))
        if not name and not groups:
            raise invalid(kind, AUTHORIZATION, "", [Cause("spec.user", "FieldValueInvalid",
                                                          'Invalid value: "": at least one of user or group must '
                                                          "be specified")])
        extra = dict_at(spec, "extra")
        return User(str(name or ""), groups, str(spec.get("uid") or ""),
                    tuple(sorted((str(k), _strings(v)) for k, v in extra.items())))

    async def _access(self, kind: str, subject: User, spec: Obj, namespace: str | None) -> Obj:
        given = [spec.get(k) for k in ("resourceAttributes", "nonResourceAttributes")]
        if sum(v is not None for v in given) != 1 or not any(isinstance(v, dict) for v in given):
            raise invalid(kind, AUTHORIZATION, "", [Cause("spec.resourceAttributes", "FieldValueInvalid",
                                                          "Invalid value: exactly one of nonResourceAttributes or "
                                                          "resourceAttributes must be specified")])
        resource, non_resource = dict_at(spec, "resourceAttributes"), dict_at(spec, "nonResourceAttributes")
        if kind == "LocalSubjectAccessReview":
            if not resource:
                raise invalid(kind, AUTHORIZATION, "", [Cause("spec.nonResourceAttributes", "FieldValueInvalid",
                                                              "Invalid value: disallowed on this kind of request")])
            if (resource.get("namespace") or "") != namespace:
                raise invalid(kind, AUTHORIZATION, "", [Cause("spec.resourceAttributes.namespace",
                                                              "FieldValueInvalid",
                                                              f'Invalid value: "{resource.get("namespace") or ""}": '
                                                              "must match metadata.namespace")])
        if resource:
            attrs = AuthzAttributes(str(resource.get("verb") or ""), str(resource.get("group") or ""),
                                    str(resource.get("resource") or ""), str(resource.get("subresource") or ""),
                                    str(resource.get("namespace") or ""), str(resource.get("name") or ""))
        else:
            attrs = AuthzAttributes(str(non_resource.get("verb") or ""), path=str(non_resource.get("path") or ""),
                                    resource_request=False)
        decision, reason = await self.authorizer.authorize(subject, attrs)
        status: Obj = {"allowed": decision is Decision.ALLOW}
        if decision is Decision.DENY:
            status["denied"] = True
        if decision is Decision.ALLOW and not reason:
            reason = self.rbac.allowed_by(subject, attrs)
        if reason:
            status["reason"] = reason
        return status

    def _rules(self, user: User, namespace: str) -> Obj:
        resource_rules: list[Obj] = []
        non_resource_rules: list[Obj] = []
        rules = list(self.rbac.index.rules_for(user, namespace))
        incomplete = False
        if node_of(user) is not None:
            rules += self.node.rules
            incomplete = True  # what a node may read through its pods is not a list of rules
        for rule in rules:
            out = rule.to_json()
            if rule.urls:
                non_resource_rules.append({"verbs": out["verbs"], "nonResourceURLs": out["nonResourceURLs"]})
            else:
                resource_rules.append(out)
        return {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": incomplete}
