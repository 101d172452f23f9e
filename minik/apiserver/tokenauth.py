"""Bearer-token authentication in front of another authenticator: a request that presents a token must present
a known one (else 401), and one that presents none is left to the next authenticator. `minik up` puts the
cluster's join token here, so `minik node join --token` is checked; the security work replaces this piece."""

from __future__ import annotations

import hmac

from minik.apiserver.admission import Authenticator
from minik.apiserver.request import ApiRequest, User

#: who a node that joined with the shared cluster token is (Kubernetes' bootstrap-token identity and groups)
JOINED_NODE = User("system:bootstrap:cluster-token", ("system:bootstrappers", "system:nodes",
                                                      "system:authenticated"))


class TokenAuthenticator:
    def __init__(self, tokens: dict[str, User], fallback: Authenticator) -> None:
        self._tokens = [(token.encode(), user) for token, user in tokens.items()]
        self._fallback = fallback

    async def authenticate(self, request: ApiRequest) -> User | None:
        header = request.headers.get("Authorization") or ""
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer":
            return await self._fallback.authenticate(request)
        presented = value.strip().encode()
        found = None
        for token, user in self._tokens:  # every token compared, in constant time each
            if hmac.compare_digest(presented, token):
                found = user
        return found
