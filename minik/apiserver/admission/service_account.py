"""ServiceAccount, in its token-free form: a pod without a service account gets ``default`` (spec.serviceAccountName
and its deprecated alias spec.serviceAccount), as Kubernetes' plugin of the name does. minik issues no service
account tokens, so nothing is mounted into pods and service accounts are not required to exist (no controller
creates ``default`` in each namespace); a mirror pod may reference no service account, as Kubernetes requires.
"""

from __future__ import annotations

from minik.api.errors import forbidden
from minik.apiserver.admission.base import Attributes

DEFAULT_SERVICE_ACCOUNT = "default"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


class ServiceAccount:
    name = "ServiceAccount"

    async def admit(self, attrs: Attributes) -> None:
        if (attrs.resource.group, attrs.resource.plural) != ("", "pods") or attrs.operation != "CREATE" \
                or attrs.subresource is not None or not isinstance(attrs.obj, dict):
            return
        spec = attrs.obj.get("spec")
        if not isinstance(spec, dict):
            return
        annotations = (attrs.obj.get("metadata") or {}).get("annotations") or {}
        if isinstance(annotations, dict) and MIRROR_ANNOTATION in annotations:
            if spec.get("serviceAccountName") or spec.get("serviceAccount"):
                raise forbidden(f'pods "{attrs.name}" is forbidden: a mirror pod may not reference service accounts',
                                "pods", "", attrs.name)
            return
        if not spec.get("serviceAccountName") and not spec.get("serviceAccount"):
            spec["serviceAccountName"] = spec["serviceAccount"] = DEFAULT_SERVICE_ACCOUNT
