"""Helpers for the security tests: clients with a given token over HTTPS, tokens made as `minik token create`
makes them, and node credentials obtained through a real join."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path

import aiohttp

from minik.api import tokens
from minik.client import Client
from minik.cluster import Cluster
from minik.kubelet.join import JoinedNode, join


def ca_context(cluster: Cluster) -> ssl.SSLContext:
    assert cluster.credentials is not None
    return ssl.create_default_context(cadata=cluster.credentials.ca.cert_pem.decode())


def connect(cluster: Cluster, token: str | None) -> Client:
    """A client over HTTPS that trusts only the cluster's CA and sends ``token`` (none when None)."""
    return Client.http(cluster.url, token, ssl=ca_context(cluster))


async def raw(cluster: Cluster, method: str, path: str, token: str | None = None, **kwargs: object
              ) -> tuple[int, dict, dict[str, str]]:
    """One HTTPS request: (status, decoded body, headers)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    headers.update(kwargs.pop("headers", None) or {})  # type: ignore[call-overload]
    async with aiohttp.ClientSession() as session:
        async with session.request(method, cluster.url + path, ssl=ca_context(cluster), headers=headers,
                                   **kwargs) as response:  # type: ignore[arg-type]
            try:
                body = await response.json(content_type=None)
            except ValueError:
                body = {"raw": await response.text()}
            return response.status, body if isinstance(body, dict) else {"raw": body}, dict(response.headers)


async def make_token(admin: Client, role: str = "node", ttl: datetime.timedelta | None = None,
                     now: datetime.datetime | None = None) -> str:
    """A token stored as `minik token create` stores it."""
    value = tokens.new_bootstrap_token()
    await admin.create("secrets", tokens.bootstrap_secret(value, role, ttl, now=now), tokens.NAMESPACE)
    return value


def ca_hash(cluster: Cluster) -> str:
    assert cluster.credentials is not None
    return cluster.credentials.ca.hash


async def join_node(cluster: Cluster, admin: Client, name: str, state: Path) -> JoinedNode:
    """A node that joined through the real join (CA pinned, bootstrap token exchanged)."""
    return await join(cluster.url, await make_token(admin), ca_hash(cluster), name, state)
