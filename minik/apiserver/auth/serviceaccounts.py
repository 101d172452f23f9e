"""Service account tokens: JWTs the cluster signs for a service account, as Kubernetes' TokenRequest API issues
them and its authenticator checks them.

A token names its service account (``sub: system:serviceaccount:NS:NAME``) and carries Kubernetes' private
claims (``kubernetes.io``: the namespace, the account's name and uid, and the pod, secret or node it is bound to,
with their uids). It is valid while it has not expired, its signature checks against the cluster's key, its
audience is one the API server accepts, the service account still exists with the same uid, and the object it is
bound to still exists with the same uid and is not being deleted: deleting a pod ends its tokens at once.

The signing key is an ECDSA P-256 key in DATA_DIR/pki (``sa.key``, 0600), signing with ES256 through PyJWT; its
``kid`` is the unpadded base64url SHA-256 of the public key's DER, as Kubernetes computes it. The issuer's
discovery documents (``/.well-known/openid-configuration``, ``/openid/v1/jwks``) let an outside verifier check
tokens with the public key alone.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from minik.apiserver.request import User
from minik.pki.files import write_private

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey, EllipticCurvePublicKey

    from minik.apiserver.admission.base import ObjectReader

log = structlog.get_logger("minik.apiserver.auth.serviceaccounts")

Obj = dict[str, Any]

#: the issuer, and the audience tokens get when a request names none (kube-apiserver's default for kubeadm)
ISSUER = "https://kubernetes.default.svc.cluster.local"
ALGORITHM = "ES256"
USER_PREFIX = "system:serviceaccount:"
GROUP = "system:serviceaccounts"
KEY_FILE = "sa.key"

#: what a token's ``extra`` holds about the object it is bound to (Kubernetes' user info extras)
EXTRA_POD_NAME = "authentication.kubernetes.io/pod-name"
EXTRA_POD_UID = "authentication.kubernetes.io/pod-uid"
EXTRA_NODE_NAME = "authentication.kubernetes.io/node-name"
EXTRA_NODE_UID = "authentication.kubernetes.io/node-uid"
EXTRA_CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"


def service_account_name(namespace: str, name: str) -> str:
    """The user name a service account authenticates as: ``system:serviceaccount:NS:NAME``."""
    return f"{USER_PREFIX}{namespace}:{name}"


def service_account_user(namespace: str, name: str, uid: str = "",
                         extra: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> User:
    return User(service_account_name(namespace, name), (GROUP, f"{GROUP}:{namespace}", "system:authenticated"),
                uid, extra)


def parse_service_account_name(name: str) -> tuple[str, str] | None:
    """(namespace, name) of ``system:serviceaccount:NS:NAME``, else None."""
    if not name.startswith(USER_PREFIX):
        return None
    namespace, sep, account = name[len(USER_PREFIX):].partition(":")
    return (namespace, account) if sep and namespace and account and ":" not in account else None


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2 and token.startswith("eyJ")


@dataclass(frozen=True)
class BoundObject:
    kind: str  # Pod, Secret or Node
    name: str
    uid: str


@dataclass(frozen=True)
class Claims:
    """What a verified token says."""

    namespace: str
    name: str
    uid: str
    expires: int
    bound: BoundObject | None
    node: BoundObject | None
    jti: str


def _load_or_create_key(path: Path) -> EllipticCurvePrivateKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    if path.exists():
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{path} is not an ECDSA key")
        return key
    key = ec.generate_private_key(ec.SECP256R1())
    write_private(path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def key_id(public: EllipticCurvePublicKey) -> str:
    from cryptography.hazmat.primitives import serialization

    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return _b64(hashlib.sha256(der).digest())


class TokenIssuer:
    """Signs and verifies the cluster's service account tokens. The key is read (or made) on first use, so a
    cluster that never issues a token never loads it."""

    def __init__(self, pki_dir: Path, issuer: str = ISSUER, audiences: tuple[str, ...] = (ISSUER,)) -> None:
        self.pki_dir = pki_dir
        self.issuer = issuer
        self.audiences = audiences
        self._key: EllipticCurvePrivateKey | None = None
        self._kid = ""

    @property
    def key(self) -> EllipticCurvePrivateKey:
        if self._key is None:
            self._key = _load_or_create_key(self.pki_dir / KEY_FILE)
            self._kid = key_id(self._key.public_key())
        return self._key

    async def ready(self) -> TokenIssuer:
        """Read or make the key in a worker thread (the first use imports cryptography), then return self."""
        if self._key is None:
            await asyncio.to_thread(lambda: self.key)
        return self

    def issue(self, namespace: str, name: str, uid: str, audiences: list[str], seconds: int,
              bound: BoundObject | None = None, node: BoundObject | None = None,
              now: float | None = None) -> tuple[str, int]:
        """A signed token and its expiry (seconds since the epoch)."""
        import jwt

        issued = int(now if now is not None else time.time())
        expires = issued + seconds
        private: Obj = {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}}
        for kind, obj in (("pod", bound if bound and bound.kind == "Pod" else None),
                          ("secret", bound if bound and bound.kind == "Secret" else None),
                          ("node", node)):
            if obj is not None:
                private[kind] = {"name": obj.name, "uid": obj.uid}
        claims = {"iss": self.issuer, "sub": service_account_name(namespace, name), "aud": audiences,
                  "exp": expires, "iat": issued, "nbf": issued, "jti": str(uuid.uuid4()), "kubernetes.io": private}
        key = self.key
        return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": self._kid}), expires

    def verify(self, token: str, now: float | None = None) -> Claims | None:
        """The claims of a token this cluster signed for one of its audiences, still within its validity; None
        for anything else (the caller checks that the account and bound object still exist)."""
        import jwt

        try:
            claims = jwt.decode(token, self.key.public_key(), algorithms=[ALGORITHM], audience=list(self.audiences),
                                issuer=self.issuer, leeway=0, options={"require": ["exp", "iat", "sub"]})
        except jwt.PyJWTError:
            return None
        if now is not None and claims["exp"] <= now:
            return None
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict):
            return None
        account = private.get("serviceaccount") or {}
        namespace = private.get("namespace")
        if not isinstance(namespace, str) or not isinstance(account, dict) or \
                claims["sub"] != service_account_name(namespace, str(account.get("name"))):
            return None
        bound = node = None
        for kind in ("pod", "secret"):
            ref = private.get(kind)
            if isinstance(ref, dict):
                bound = BoundObject(kind.capitalize(), str(ref.get("name") or ""), str(ref.get("uid") or ""))
        ref = private.get("node")
        if isinstance(ref, dict):
            node = BoundObject("Node", str(ref.get("name") or ""), str(ref.get("uid") or ""))
        return Claims(namespace, str(account.get("name") or ""), str(account.get("uid") or ""), int(claims["exp"]),
                      bound, node, str(claims.get("jti") or ""))

    def jwks(self) -> Obj:
        """The public key as a JSON Web Key Set."""
        import jwt

        jwk: Obj = jwt.algorithms.ECAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**jwk, "kid": self._kid, "use": "sig", "alg": ALGORITHM}]}

    def discovery(self, server: str) -> Obj:
        """The OpenID provider configuration an outside verifier reads first."""
        return {"issuer": self.issuer, "jwks_uri": f"{server}/openid/v1/jwks",
                "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": [ALGORITHM]}


class ServiceAccountTokens:
    """The authenticator's side: a JWT to the service account it names, while it and its bound object live."""

    #: verified tokens remembered (their signature is checked once; what they are bound to, on every request)
    CACHE_SIZE = 4096

    def __init__(self, issuer: TokenIssuer, reader: ObjectReader) -> None:
        self.issuer = issuer
        self.reader = reader
        self._verified: dict[str, Claims] = {}

    async def authenticate(self, token: str) -> User | None:
        claims = self._verified.get(token)
        now = time.time()
        if claims is None:
            await self.issuer.ready()
            claims = self.issuer.verify(token, now)
            if claims is None:
                return None
            if len(self._verified) >= self.CACHE_SIZE:
                self._verified.clear()
            self._verified[token] = claims
        if claims.expires <= now:
            self._verified.pop(token, None)
            return None
        return self._still_valid(claims)

    def _alive(self, plural: str, namespace: str | None, name: str, uid: str) -> bool:
        obj = self.reader.get("", "v1", plural, namespace, name)
        meta = (obj or {}).get("metadata") or {}
        return obj is not None and (not uid or meta.get("uid") == uid) and not meta.get("deletionTimestamp")

    def _still_valid(self, claims: Claims) -> User | None:
        if not self._alive("serviceaccounts", claims.namespace, claims.name, claims.uid):
            log.info("service account token refused: the service account is gone", namespace=claims.namespace,
                     serviceaccount=claims.name)
            return None
        extra: list[tuple[str, tuple[str, ...]]] = []
        bound = claims.bound
        if bound is not None:
            plural = "pods" if bound.kind == "Pod" else "secrets"
            if not self._alive(plural, claims.namespace, bound.name, bound.uid):
                log.info("service account token refused: the object it is bound to is gone", kind=bound.kind,
                         namespace=claims.namespace, name=bound.name)
                return None
            if bound.kind == "Pod":
                extra += [(EXTRA_POD_NAME, (bound.name,)), (EXTRA_POD_UID, (bound.uid,))]
        if claims.node is not None:
            if bound is None and not self._alive("nodes", None, claims.node.name, claims.node.uid):
                return None
            extra += [(EXTRA_NODE_NAME, (claims.node.name,)), (EXTRA_NODE_UID, (claims.node.uid,))]
        if claims.jti:
            extra.append((EXTRA_CREDENTIAL_ID, (f"JTI={claims.jti}",)))
        return service_account_user(claims.namespace, claims.name, claims.uid, tuple(sorted(extra)))
