"""How tests reach a cluster over the network as every other client does: HTTPS trusting only the cluster's CA
(plain HTTP when the cluster serves it), and the admin's token from the kubeconfig `minik up` writes. The
``minik.client.Client`` for this is ``Cluster.admin_client()``; here are the raw aiohttp session and the
kubeconfig file for subprocesses (kubectl, `minik ...`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from minik import kubeconfig
from minik.cluster import Cluster


def admin_headers(cluster: Cluster) -> dict[str, str]:
    return {"Authorization": f"Bearer {cluster.admin_token}"}


def admin_session(cluster: Cluster, **options: Any) -> aiohttp.ClientSession:
    """An aiohttp session as the admin, its ``base_url`` the cluster's URL (``options``: ClientSession's)."""
    return aiohttp.ClientSession(base_url=cluster.url, headers=admin_headers(cluster),
                                 connector=aiohttp.TCPConnector(ssl=cluster.client_ssl_context() or True),
                                 **options)


def admin_kubeconfig(cluster: Cluster, path: Path) -> Path:
    """Write the admin's kubeconfig for ``cluster`` (what `minik up` writes) to ``path``; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    kubeconfig.write(path, cluster.kubeconfig())
    return path
