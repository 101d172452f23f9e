"""Bearer tokens: their formats, and the Secrets they are kept in.

**Tokens made by `minik token create`** (to join a node, or to read the cluster) are Kubernetes bootstrap tokens,
``[a-z0-9]{6}.[a-z0-9]{16}``, kept exactly as Kubernetes keeps them: a Secret ``bootstrap-token-ID`` of type
``bootstrap.kubernetes.io/token`` in kube-system with ``token-id``, ``token-secret``, ``expiration``,
``usage-bootstrap-authentication`` and ``auth-extra-groups``. Keeping them in the store rather than in a file
of minik's own means they are created, listed and revoked through the API (so `minik token` works from any
machine with an admin kubeconfig, and ``kubectl -n kube-system delete secret bootstrap-token-ID`` revokes one as
it does on kubeadm clusters), and the authenticator reads them from the server's memory with no I/O. The role is
the extra group: ``system:bootstrappers:minik:node`` tokens may only exchange themselves for a node credential,
``system:bootstrappers:minik:view`` tokens may read (see ``authz``).

**Node credentials** (what a join hands a node; identity ``system:node:NAME``) are ``[a-z0-9]{6}.[a-z0-9]{32}``,
kept as a Secret ``node-credential-ID`` of type ``minik.io/node-credential`` holding only the SHA-256 of the
secret part: whoever reads Secrets (an admin, or a copy of the database) still cannot act as a node.

The admin token and the in-process components' tokens never enter the store (see ``credentials``).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any

from minik.api.timestamps import now_rfc3339, parse_rfc3339, rfc3339

Obj = dict[str, Any]

NAMESPACE = "kube-system"
BOOTSTRAP_TYPE = "bootstrap.kubernetes.io/token"
BOOTSTRAP_PREFIX = "bootstrap-token-"
NODE_CREDENTIAL_TYPE = "minik.io/node-credential"
NODE_CREDENTIAL_PREFIX = "node-credential-"

#: whole-string patterns: \A and \Z, because ``$`` also matches before a final newline, so "<token>\n" would pass
#: ``^...$`` (use them with fullmatch, which means the same whatever the anchors)
BOOTSTRAP_TOKEN = re.compile(r"\A([a-z0-9]{6})\.([a-z0-9]{16})\Z")
NODE_TOKEN = re.compile(r"\A([a-z0-9]{6})\.([a-z0-9]{32})\Z")
TOKEN_ID = re.compile(r"\A[a-z0-9]{6}\Z")

BOOTSTRAP_USER_PREFIX = "system:bootstrap:"
BOOTSTRAPPERS = "system:bootstrappers"
NODES = "system:nodes"
NODE_USER_PREFIX = "system:node:"

#: role -> the extra group its tokens carry
ROLE_GROUPS = {"node": "system:bootstrappers:minik:node", "view": "system:bootstrappers:minik:view"}
ROLES = tuple(ROLE_GROUPS)

_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def _random(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def new_bootstrap_token() -> str:
    return f"{_random(6)}.{_random(16)}"


def new_node_token() -> str:
    return f"{_random(6)}.{_random(32)}"


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def _unb64(value: Any) -> str:
    try:
        return base64.b64decode(str(value), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def _moment(text: str) -> datetime.datetime | None:
    """The moment an RFC 3339 timestamp names; None for one that cannot be read."""
    try:
        return datetime.datetime.fromtimestamp(parse_rfc3339(text), datetime.UTC)
    except (ValueError, OverflowError, OSError):
        return None


# -- bootstrap tokens -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BootstrapToken:
    """A bootstrap token as its Secret describes it."""

    id: str
    secret: str
    expiration: datetime.datetime | None
    groups: tuple[str, ...]
    description: str = ""
    authentication: bool = True
    created: str = ""

    @property
    def role(self) -> str:
        for role, group in ROLE_GROUPS.items():
            if group in self.groups:
                return role
        return "none"

    def expired(self, now: datetime.datetime | None = None) -> bool:
        return self.expiration is not None and \
            (now or datetime.datetime.now(datetime.UTC)) >= self.expiration


def bootstrap_secret(token: str, role: str, ttl: datetime.timedelta | None, description: str = "",
                     now: datetime.datetime | None = None) -> Obj:
    """The Secret that makes ``token`` valid for ``role`` until ``ttl`` from now (None or zero: forever)."""
    match = BOOTSTRAP_TOKEN.fullmatch(token)
    if match is None:
        raise ValueError("a bootstrap token has the form [a-z0-9]{6}.[a-z0-9]{16}")
    if role not in ROLE_GROUPS:
        raise ValueError(f"unknown role {role!r}: choose from {', '.join(ROLES)}")
    token_id, token_secret = match.groups()
    data = {"token-id": token_id, "token-secret": token_secret, "usage-bootstrap-authentication": "true",
            "auth-extra-groups": ROLE_GROUPS[role]}
    if description:
        data["description"] = description
    if ttl:
        data["expiration"] = rfc3339(((now or datetime.datetime.now(datetime.UTC)) + ttl).timestamp())
    return {"apiVersion": "v1", "kind": "Secret", "type": BOOTSTRAP_TYPE,
            "metadata": {"name": BOOTSTRAP_PREFIX + token_id, "namespace": NAMESPACE},
            "data": {k: _b64(v) for k, v in data.items()}}


def read_bootstrap_secret(obj: Obj) -> BootstrapToken | None:
    """The token a bootstrap Secret holds, or None when the Secret is not a well-formed one (never trusted)."""
    if obj.get("type") != BOOTSTRAP_TYPE:
        return None
    raw = obj.get("data")
    if not isinstance(raw, dict):
        return None
    data = {k: _unb64(v) for k, v in raw.items()}
    token_id, token_secret = data.get("token-id", ""), data.get("token-secret", "")
    name = (obj.get("metadata") or {}).get("name")
    if name != BOOTSTRAP_PREFIX + token_id or BOOTSTRAP_TOKEN.fullmatch(f"{token_id}.{token_secret}") is None:
        return None
    expiration = None
    if data.get("expiration"):
        expiration = _moment(data["expiration"])
        if expiration is None:  # an unreadable expiry must not mean "forever"
            expiration = datetime.datetime.min.replace(tzinfo=datetime.UTC)
    groups = tuple(g.strip() for g in data.get("auth-extra-groups", "").split(",") if g.strip())
    return BootstrapToken(token_id, token_secret, expiration, groups, data.get("description", ""),
                          data.get("usage-bootstrap-authentication") == "true",
                          str((obj.get("metadata") or {}).get("creationTimestamp") or ""))


# -- node credentials -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeCredential:
    id: str
    node: str
    secret_sha256: str
    created: str = ""


def node_credential_secret(token: str, node: str) -> Obj:
    match = NODE_TOKEN.fullmatch(token)
    if match is None:
        raise ValueError("a node token has the form [a-z0-9]{6}.[a-z0-9]{32}")
    token_id, token_secret = match.groups()
    data = {"token-id": token_id, "token-secret-sha256": secret_hash(token_secret), "node-name": node}
    return {"apiVersion": "v1", "kind": "Secret", "type": NODE_CREDENTIAL_TYPE,
            "metadata": {"name": NODE_CREDENTIAL_PREFIX + token_id, "namespace": NAMESPACE,
                         "labels": {"minik.io/node": node if len(node) <= 63 else node[:63].rstrip("-.")},
                         "annotations": {"minik.io/issued-at": now_rfc3339()}},
            "data": {k: _b64(v) for k, v in data.items()}}


def read_node_credential_secret(obj: Obj) -> NodeCredential | None:
    if obj.get("type") != NODE_CREDENTIAL_TYPE:
        return None
    raw = obj.get("data")
    if not isinstance(raw, dict):
        return None
    data = {k: _unb64(v) for k, v in raw.items()}
    token_id = data.get("token-id", "")
    if (obj.get("metadata") or {}).get("name") != NODE_CREDENTIAL_PREFIX + token_id or not TOKEN_ID.fullmatch(token_id) \
            or not data.get("node-name") or len(data.get("token-secret-sha256", "")) != 64:
        return None
    return NodeCredential(token_id, data["node-name"], data["token-secret-sha256"],
                          str((obj.get("metadata") or {}).get("creationTimestamp") or ""))


def parse_duration(text: str) -> datetime.timedelta:
    """``24h``, ``90m``, ``1h30m``, ``45s``, ``7d`` or ``0`` (never expires), as Go durations plus days."""
    text = text.strip()
    if text in ("0", "0s"):
        return datetime.timedelta(0)
    parts = re.fullmatch(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not text or parts is None:
        raise ValueError(f"invalid duration {text!r} (examples: 24h, 30m, 1h30m, 7d, 0 for no expiry)")
    days, hours, minutes, seconds = (int(p or 0) for p in parts.groups())
    return datetime.timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
