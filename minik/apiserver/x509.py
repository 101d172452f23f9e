"""Authentication by client certificate, as kube-apiserver's x509 authenticator: a certificate the cluster CA
signed (the TLS handshake has verified it: the API server asks for one, optionally) names the user in its
subject's common name and the user's groups in its organizations. The transports read it once per connection
and hand it on with each request (``ApiRequest.certificate_user``). ``minik kubeconfig --user NAME --group GROUP`` issues such certificates to people, so that
nobody needs a token kept in a Secret; the API server's and admins' certificates carry ``system:masters``.
"""

from __future__ import annotations

from typing import Any

from minik.apiserver.request import User

AUTHENTICATED = "system:authenticated"


def user_from_peercert(peercert: Any) -> User | None:
    """The user of a verified peer certificate, as ``ssl`` describes it (``getpeercert()``); None when there is
    none or it names no user."""
    if not isinstance(peercert, dict):
        return None
    common_name = ""
    groups: list[str] = []
    for rdn in peercert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName" and not common_name:
                common_name = str(value)
            elif key == "organizationName" and value not in groups:
                groups.append(str(value))
    if not common_name:
        return None
    if AUTHENTICATED not in groups:
        groups.append(AUTHENTICATED)
    return User(common_name, tuple(groups))
