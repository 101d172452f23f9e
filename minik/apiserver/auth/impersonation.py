"""Impersonation: a request with ``Impersonate-User`` (``kubectl --as``), ``Impersonate-Group`` (``--as-group``),
``Impersonate-Uid`` or ``Impersonate-Extra-KEY`` headers acts as that identity, when the requester may
``impersonate`` each part of it, as Kubernetes' impersonation filter decides:

- a user: ``impersonate`` on ``users`` named after it; a service account (``system:serviceaccount:NS:NAME``):
  ``impersonate`` on ``serviceaccounts`` NAME in NS;
- each group: ``impersonate`` on ``groups``; a uid: on ``uids`` (authentication.k8s.io); each extra value: on
  ``userextras/KEY`` (authentication.k8s.io).

The impersonated user gets ``system:authenticated`` (``system:unauthenticated`` for ``system:anonymous``), and a
service account its two groups. A refusal is a 403 naming what could not be impersonated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minik.api.errors import StatusError, bad_request, forbidden
from minik.apiserver.admission.base import Authenticator
from minik.apiserver.auth.serviceaccounts import GROUP as SERVICE_ACCOUNTS
from minik.apiserver.auth.serviceaccounts import parse_service_account_name
from minik.apiserver.authorization import Authorizer, AuthzAttributes, Decision
from minik.apiserver.request import ApiRequest, User

USER = "impersonate-user"
GROUP = "impersonate-group"
UID = "impersonate-uid"
EXTRA_PREFIX = "impersonate-extra-"
AUTHENTICATION = "authentication.k8s.io"


def _values(headers: Mapping[str, Any], name: str) -> list[str]:
    getall = getattr(headers, "getall", None)
    if getall is not None:
        return [str(v) for v in getall(name, [])]
    return [str(v) for k, v in headers.items() if k.lower() == name]


def _extras(headers: Mapping[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in headers.items():
        lowered = key.lower()
        if lowered.startswith(EXTRA_PREFIX) and len(lowered) > len(EXTRA_PREFIX):
            from urllib.parse import unquote

            out.setdefault(unquote(lowered[len(EXTRA_PREFIX):]), []).append(str(value))
    return out


class ImpersonatingAuthenticator:
    """Authenticates with ``inner``, then applies the impersonation headers, if any, as ``authorizer`` allows."""

    def __init__(self, inner: Authenticator, authorizer: Authorizer) -> None:
        self.inner = inner
        self.authorizer = authorizer

    async def authenticate(self, request: ApiRequest) -> User | None:
        user = await self.inner.authenticate(request)
        if user is None:
            return None
        headers = request.headers
        names, groups, uids, extras = (_values(headers, USER), _values(headers, GROUP), _values(headers, UID),
                                       _extras(headers))
        if not (names or groups or uids or extras):
            return user
        if len(names) != 1 or not names[0]:
            raise bad_request("requested impersonation of groups, a uid or extra attributes without impersonating "
                              "a user" if not names else "impersonation names one user, once")
        if len(uids) > 1:
            raise bad_request("impersonation names one uid, once")
        name = names[0]
        account = parse_service_account_name(name)
        if account is not None:
            await self._check(user, AuthzAttributes("impersonate", "", "serviceaccounts", namespace=account[0],
                                                    name=account[1]), name)
            wanted_groups = [SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{account[0]}"]
        else:
            await self._check(user, AuthzAttributes("impersonate", "", "users", name=name), name)
            wanted_groups = []
        for group in groups:
            await self._check(user, AuthzAttributes("impersonate", "", "groups", name=group), group)
        for uid in uids:
            await self._check(user, AuthzAttributes("impersonate", AUTHENTICATION, "uids", name=uid), uid)
        for key, values in extras.items():
            for value in values:
                await self._check(user, AuthzAttributes("impersonate", AUTHENTICATION, "userextras", key,
                                                        name=value), value)
        wanted_groups += [g for g in groups if g not in wanted_groups]
        marker = "system:unauthenticated" if name == "system:anonymous" else "system:authenticated"
        if marker not in wanted_groups:
            wanted_groups.append(marker)
        return User(name, tuple(wanted_groups), uids[0] if uids else "",
                    tuple(sorted((k, tuple(v)) for k, v in extras.items())))

    async def _check(self, user: User, attrs: AuthzAttributes, value: str) -> None:
        decision, reason = await self.authorizer.authorize(user, attrs)
        if decision is Decision.ALLOW:
            return
        what = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
        where = f' in the namespace "{attrs.namespace}"' if attrs.namespace else " at the cluster scope"
        resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
        message = (f'{what} "{value}" is forbidden: User "{user.name}" cannot impersonate resource "{resource}" in '
                   f'API group "{attrs.group}"{where}' + (f": {reason}" if reason else ""))
        error: StatusError = forbidden(message, attrs.resource, attrs.group, value)
        raise error
