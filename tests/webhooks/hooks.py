"""Webhook configurations for tests, as a user would write them (the API server fills in the defaults)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conftest import ApiHttp

Obj = dict[str, Any]

GROUP_PATH = "/apis/admissionregistration.k8s.io/v1"
MUTATING = f"{GROUP_PATH}/mutatingwebhookconfigurations"
VALIDATING = f"{GROUP_PATH}/validatingwebhookconfigurations"
PODS = {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}
CONFIGMAPS = {"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
              "resources": ["configmaps"]}


def hook(name: str, client_config: Obj, *rules: Obj, **fields: Any) -> Obj:
    return {"name": name, "clientConfig": client_config, "rules": list(rules) or [CONFIGMAPS],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], **fields}


async def configure(http: ApiHttp, path: str, name: str, *hooks: Obj) -> Obj:
    status, body = await http.post(path, {"metadata": {"name": name}, "webhooks": list(hooks)})
    assert status == 201, body
    return body


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> Obj:
    meta: Obj = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {"metadata": meta, "data": data}


CM = "/api/v1/namespaces/default/configmaps"
