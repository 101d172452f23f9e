"""ServiceAccount, as Kubernetes' admission plugin of the name: every new pod runs as a service account that
exists, and gets a token to talk to the API with.

On a pod's CREATE:

* a pod that names no service account runs as ``default`` (spec.serviceAccountName and its deprecated alias
  spec.serviceAccount);
* the service account must exist, else 403 Forbidden (``error looking up service account NS/NAME: serviceaccount
  "NAME" not found``); ``default`` is looked for a few times over about a second, since the service account
  controller makes it just after its namespace;
* unless the pod (or, when the pod does not say, its service account) sets ``automountServiceAccountToken:
  false``, the pod gets a projected volume ``kube-api-access-XXXXX`` -- a bound token (3607 s), the cluster CA
  (the ``kube-root-ca.crt`` ConfigMap the root CA publisher keeps in every namespace) and the namespace -- mounted
  read-only at /var/run/secrets/kubernetes.io/serviceaccount in every container and init container that mounts
  nothing there itself; the kubelet writes the files and renews the token (minik.kubelet.projected);
* a pod without imagePullSecrets gets its service account's;
* a service account annotated ``kubernetes.io/enforce-mountable-secrets: "true"`` limits the Secrets the pod may
  use (volumes, env, envFrom, pull secrets) to those it lists;
* a mirror pod (a kubelet's static pod) may reference no service account, no Secret and no token projection.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

from minik.api.errors import StatusError, forbidden
from minik.api.names import generate_name
from minik.api.podrefs import references
from minik.apiserver.admission.base import Attributes, ObjectReader

Obj = dict[str, Any]

DEFAULT_SERVICE_ACCOUNT = "default"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
ENFORCE_MOUNTABLE_SECRETS = "kubernetes.io/enforce-mountable-secrets"
#: the prefix of the token volume's name; a pod that already has a volume of this prefix is taken to have one
VOLUME_PREFIX = "kube-api-access-"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
#: a token's lifetime in the volume: Kubernetes' 1 h and 7 s, the 7 s marking tokens the plugin asked for
TOKEN_EXPIRATION_SECONDS = 3607
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
PROJECTED_DEFAULT_MODE = 0o644  # 420
#: how often ``default`` is looked for before the pod is refused, and the pause between looks (Kubernetes': 10,
#: 100-200 ms)
DEFAULT_ACCOUNT_ATTEMPTS = 10
RETRY_SECONDS = (0.1, 0.2)


def token_volume_source() -> Obj:
    """The projected volume source of the token volume, with every default spelled out (as Kubernetes 1.32)."""
    return {"sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ], "defaultMode": PROJECTED_DEFAULT_MODE}


def should_automount(account: Obj, spec: Obj) -> bool:
    """The pod's automountServiceAccountToken, else the service account's, else true."""
    for value in (spec.get("automountServiceAccountToken"), account.get("automountServiceAccountToken")):
        if isinstance(value, bool):
            return value
    return True


def mount_token(spec: Obj) -> None:
    """Mount the token volume at MOUNT_PATH in every container and init container that mounts nothing there, and
    add the volume if one of them needs it and the pod has none yet."""
    given = spec.get("volumes")
    volumes: list[Any] = given if isinstance(given, list) else []
    existing = next((str(v["name"]) for v in volumes if isinstance(v, dict) and
                     str(v.get("name") or "").startswith(VOLUME_PREFIX)), None)
    name = existing or generate_name(VOLUME_PREFIX)
    needed = False
    for list_name in ("initContainers", "containers"):
        for container in spec.get(list_name) or []:
            if not isinstance(container, dict):
                continue
            found = container.get("volumeMounts")
            mounts: list[Any] = found if isinstance(found, list) else []
            if any(isinstance(m, dict) and m.get("mountPath") == MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [*mounts, {"name": name, "readOnly": True, "mountPath": MOUNT_PATH}]
            needed = True
    if existing is None and needed:
        spec["volumes"] = [*volumes, {"name": name, "projected": token_volume_source()}]


def _names(refs: Any) -> list[str]:
    return [str(ref.get("name") or "") for ref in refs or [] if isinstance(ref, dict)]


def unmountable_secret(account: Obj, spec: Obj) -> str | None:
    """Why the pod may not use a Secret its service account does not list (Kubernetes' words), or None."""
    name = (account.get("metadata") or {}).get("name", "")
    mountable = set(_names(account.get("secrets")))
    for volume in spec.get("volumes") or []:
        secret = volume.get("secret") if isinstance(volume, dict) else None
        if isinstance(secret, dict) and secret.get("secretName") not in mountable:
            return (f'volume with secret.secretName="{secret.get("secretName")}" is not allowed because service '
                    f"account {name} does not reference that secret")
    for list_name, what in (("initContainers", "init container"), ("containers", "container")):
        for container in spec.get(list_name) or []:
            if not isinstance(container, dict):
                continue
            for env in container.get("env") or []:
                ref = ((env.get("valueFrom") or {}) if isinstance(env, dict) else {}).get("secretKeyRef")
                if isinstance(ref, dict) and ref.get("name") not in mountable:
                    return (f"{what} {container.get('name')} with envVar {env.get('name')} referencing "
                            f'secret.secretName="{ref.get("name")}" is not allowed because service account {name} '
                            "does not reference that secret")
            for source in container.get("envFrom") or []:
                ref = source.get("secretRef") if isinstance(source, dict) else None
                if isinstance(ref, dict) and ref.get("name") not in mountable:
                    return (f"{what} {container.get('name')} with envFrom referencing "
                            f'secret.secretName="{ref.get("name")}" is not allowed because service account {name} '
                            "does not reference that secret")
    pull = set(_names(account.get("imagePullSecrets")))
    for i, ref in enumerate(_names(spec.get("imagePullSecrets"))):
        if ref not in pull:
            return (f'imagePullSecrets[{i}].name="{ref}" is not allowed because service account {name} does not '
                    "reference that imagePullSecret")
    return None


class ServiceAccount:
    name = "ServiceAccount"

    def __init__(self, reader: ObjectReader, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._reader = reader
        self._sleep = sleep

    @staticmethod
    def _pod(attrs: Attributes) -> Obj | None:
        """The new pod of a pod CREATE (no subresource), else None."""
        if (attrs.resource.group, attrs.resource.plural) != ("", "pods") or attrs.operation != "CREATE" \
                or attrs.subresource is not None or not isinstance(attrs.obj, dict) \
                or not isinstance(attrs.obj.get("spec"), dict):
            return None
        return attrs.obj

    @staticmethod
    def _forbidden(attrs: Attributes, reason: str) -> StatusError:
        return forbidden(f'pods "{attrs.name}" is forbidden: {reason}', "pods", "", attrs.name)

    async def _account(self, attrs: Attributes, name: str) -> Obj:
        namespace = attrs.namespace or ""
        attempts = DEFAULT_ACCOUNT_ATTEMPTS if name == DEFAULT_SERVICE_ACCOUNT else 1
        for attempt in range(attempts):
            if attempt:
                await self._sleep(random.uniform(*RETRY_SECONDS))
            account = self._reader.get("", "v1", "serviceaccounts", namespace, name)
            if account is not None:
                return account
        raise self._forbidden(attrs, f'error looking up service account {namespace}/{name}: serviceaccount '
                                     f'"{name}" not found')

    async def admit(self, attrs: Attributes) -> None:
        pod = self._pod(attrs)
        if pod is None or _is_mirror(pod):
            return  # a mirror pod is never changed (its kubelet would not recognise it); validate refuses it
        spec = pod["spec"]
        name = spec.get("serviceAccountName") or spec.get("serviceAccount")
        if not name:
            name = spec["serviceAccountName"] = spec["serviceAccount"] = DEFAULT_SERVICE_ACCOUNT
        account = await self._account(attrs, str(name))
        if should_automount(account, spec):
            mount_token(spec)
        if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
            spec["imagePullSecrets"] = [{"name": n} for n in _names(account["imagePullSecrets"])]

    async def validate(self, attrs: Attributes) -> None:
        pod = self._pod(attrs)
        if pod is None:
            return
        spec = pod["spec"]
        if _is_mirror(pod):
            if spec.get("serviceAccountName") or spec.get("serviceAccount"):
                raise self._forbidden(attrs, "a mirror pod may not reference service accounts")
            if any(plural == "secrets" for plural, _ in references(pod)):
                raise self._forbidden(attrs, "a mirror pod may not reference secrets")
            for volume in spec.get("volumes") or []:
                sources = ((volume.get("projected") or {}) if isinstance(volume, dict) else {}).get("sources")
                if any(isinstance(s, dict) and s.get("serviceAccountToken") is not None for s in sources or []):
                    raise self._forbidden(attrs, "a mirror pod may not use ServiceAccountToken volume projections")
            return
        name = spec.get("serviceAccountName")
        if not name:
            raise self._forbidden(attrs, f"no service account specified for pod {attrs.namespace}/{attrs.name}")
        account = await self._account(attrs, str(name))
        enforce = ((account.get("metadata") or {}).get("annotations") or {}).get(ENFORCE_MOUNTABLE_SECRETS)
        if enforce in ("1", "t", "T", "true", "TRUE", "True"):  # what Go's strconv.ParseBool takes for true
            reason = unmountable_secret(account, spec)
            if reason is not None:
                raise self._forbidden(attrs, reason)


def _is_mirror(pod: Obj) -> bool:
    annotations = (pod.get("metadata") or {}).get("annotations")
    return isinstance(annotations, dict) and MIRROR_ANNOTATION in annotations
