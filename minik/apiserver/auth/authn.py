"""Authentication by client certificate or bearer token (``Authorization: Bearer TOKEN``), as kube-apiserver's
x509 and token authenticators.

A client certificate the cluster CA signed (the TLS handshake verified it; minik.apiserver.x509) is the user it
names. Otherwise, in order: the static tokens the cluster was started with (the admin's, and one per in-process
component, kept in memory), bootstrap tokens (Secrets ``bootstrap-token-ID``), node credentials (Secrets
``node-credential-ID``), service account tokens (JWTs the cluster signed: minik.apiserver.auth.serviceaccounts). Every
secret is compared with ``hmac.compare_digest``, so the time a comparison takes says nothing about how much of a
guess was right; the token id, which is public, only picks the Secret.

No Authorization header: the anonymous user (only what ``authz`` lets anonymous do; the server answers 401 for
everything else). A header with a token that matches nothing, an expired or revoked token: None (401).
"""

from __future__ import annotations

import datetime
import hmac
from collections.abc import Mapping
from typing import Any

from minik.api import tokens
from minik.apiserver.admission.base import ObjectReader
from minik.apiserver.auth.serviceaccounts import ServiceAccountTokens, looks_like_jwt
from minik.apiserver.request import ApiRequest, User

AUTHENTICATED = "system:authenticated"
ANONYMOUS = User("system:anonymous", ("system:unauthenticated",))


def is_anonymous(user: User) -> bool:
    return user.name == ANONYMOUS.name


def bearer_token(headers: Mapping[str, Any]) -> str | None:
    """The token of an ``Authorization: Bearer`` header ("" for another scheme or an empty token), None when
    there is no header."""
    value = headers.get("Authorization")
    if value is None:
        value = headers.get("authorization")
    if value is None:
        return None
    scheme, _, token = str(value).strip().partition(" ")
    if scheme.lower() != "bearer":
        return ""
    return token.strip()


class StaticTokens:
    """Tokens known from start-up (kube-apiserver's --token-auth-file, in memory): token -> user."""

    def __init__(self) -> None:
        self._entries: list[tuple[bytes, User]] = []

    def add(self, token: str, user: User) -> None:
        if len(token) < 32:
            raise ValueError("a static token must be at least 32 characters")
        self._entries.append((token.encode(), user))

    def remove(self, token: str) -> None:
        self._entries = [(t, u) for t, u in self._entries if not hmac.compare_digest(t, token.encode())]

    def find(self, token: str) -> User | None:
        given = token.encode()
        found: User | None = None
        for known, user in self._entries:  # every entry is compared: no early exit on a match
            if hmac.compare_digest(known, given) and found is None:
                found = user
        return found


def _with_authenticated(name: str, groups: tuple[str, ...]) -> User:
    return User(name, tuple(dict.fromkeys((*groups, AUTHENTICATED))))


class TokenAuthenticator:
    """The cluster's authenticator (the ``Authenticator`` protocol of the request pipeline)."""

    def __init__(self, reader: ObjectReader, static: StaticTokens | None = None,
                 service_accounts: ServiceAccountTokens | None = None) -> None:
        self.reader = reader
        self.static = static or StaticTokens()
        self.service_accounts = service_accounts
        #: the audiences the API server accepts tokens for (TokenReview compares what it is asked about)
        self.audiences: tuple[str, ...] = service_accounts.issuer.audiences if service_accounts else ()

    async def authenticate(self, request: ApiRequest) -> User | None:
        if request.certificate_user is not None:  # a verified client certificate comes first, as in Kubernetes
            return request.certificate_user
        token = bearer_token(request.headers)
        if token is None:
            return ANONYMOUS
        return await self.authenticate_bearer(token)

    async def authenticate_bearer(self, token: str) -> User | None:
        """The user a bearer token stands for (TokenReview asks this too), or None."""
        user = self.authenticate_token(token)
        if user is None and self.service_accounts is not None and looks_like_jwt(token):
            user = await self.service_accounts.authenticate(token)
        return user

    def authenticate_token(self, token: str) -> User | None:
        if not token:
            return None
        user = self.static.find(token)
        if user is not None:
            return user
        match = tokens.BOOTSTRAP_TOKEN.fullmatch(token)
        if match is not None:
            return self._bootstrap(*match.groups())
        match = tokens.NODE_TOKEN.fullmatch(token)
        if match is not None:
            return self._node(*match.groups())
        return None

    def _secret(self, name: str) -> dict[str, Any] | None:
        return self.reader.get("", "v1", "secrets", tokens.NAMESPACE, name)

    def _bootstrap(self, token_id: str, token_secret: str) -> User | None:
        obj = self._secret(tokens.BOOTSTRAP_PREFIX + token_id)
        token = tokens.read_bootstrap_secret(obj) if obj is not None else None
        if token is None or not token.authentication:
            return None
        if not hmac.compare_digest(token.secret.encode(), token_secret.encode()):
            return None
        if token.expired(datetime.datetime.now(datetime.UTC)):
            return None
        if (obj or {}).get("metadata", {}).get("deletionTimestamp"):
            return None
        groups = tuple(g for g in token.groups if g.startswith(tokens.BOOTSTRAPPERS + ":"))
        return _with_authenticated(tokens.BOOTSTRAP_USER_PREFIX + token_id, (tokens.BOOTSTRAPPERS, *groups))

    def _node(self, token_id: str, token_secret: str) -> User | None:
        obj = self._secret(tokens.NODE_CREDENTIAL_PREFIX + token_id)
        credential = tokens.read_node_credential_secret(obj) if obj is not None else None
        if credential is None:
            return None
        if not hmac.compare_digest(credential.secret_sha256.encode(), tokens.secret_hash(token_secret).encode()):
            return None
        return _with_authenticated(tokens.NODE_USER_PREFIX + credential.node, (tokens.NODES,))
