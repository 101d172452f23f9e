"""Namespaces as a cluster's controllers leave them, for tests and benchmarks that run without controllers.

A pod runs as a service account that must exist (the ServiceAccount admission plugin refuses it otherwise). The
API server makes ``default`` in its own namespaces at start-up; in any other namespace the service account
controller makes it. A cluster without controllers needs it made by hand before a pod can be created there: that
is what these helpers do, with the same object the controller would create."""

from __future__ import annotations

from typing import Any

from minik.api.errors import StatusError
from minik.client import Client

Obj = dict[str, Any]

DEFAULT = "default"


def default_service_account() -> Obj:
    """The body of the ``default`` ServiceAccount (POST it to ``service_accounts_path(namespace)``)."""
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT}}


def service_accounts_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/serviceaccounts"


async def ensure_default_service_account(client: Client, namespace: str) -> None:
    """Create ``default`` in ``namespace`` unless it is there already."""
    try:
        await client.create("serviceaccounts", default_service_account(), namespace)
    except StatusError as exc:
        if exc.reason != "AlreadyExists":
            raise


async def create_namespace(client: Client, name: str, labels: dict[str, str] | None = None) -> Obj:
    """Create the namespace and its ``default`` service account; the namespace as created."""
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    created = await client.create("namespaces", {"metadata": meta})
    await ensure_default_service_account(client, name)
    return created
