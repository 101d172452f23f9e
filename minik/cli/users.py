"""Accounts for people: a client certificate signed by the cluster CA, whose common name is the user and whose
organizations are the groups (what minik.apiserver.x509 reads back), in a kubeconfig of its own.

Made on the cluster's machine from DATA_DIR/pki, as `kubeadm kubeconfig user` does: no token per person is kept
anywhere, and what the person may do is whatever RBAC bindings name the user or one of the groups."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minik import kubeconfig
from minik.api.validation import is_valid_path_segment_name

MASTERS = "system:masters"


def user_kubeconfig(admin_kubeconfig: Path, cluster: str, user: str, groups: tuple[str, ...],
                    days: int) -> dict[str, Any]:
    """A kubeconfig for ``user`` in ``groups``, for the cluster whose admin kubeconfig (server and CA) and pki
    directory are at ``admin_kubeconfig``'s directory."""
    from minik.pki.ca import Pki, load_or_create_ca

    for value, what in ((user, "user"), *((g, "group") for g in groups)):
        problems = is_valid_path_segment_name(value) if value else ["must not be empty"]
        if problems or value != value.strip():
            raise ValueError(f"invalid {what} name {value!r}: {'; '.join(problems) or 'surrounding spaces'}")
    if MASTERS in groups:
        raise ValueError(f"{MASTERS} is every right there is: bind the user to cluster-admin instead, so that "
                         "`kubectl get clusterrolebindings` shows it")
    endpoint = kubeconfig.endpoint(admin_kubeconfig)
    pki = admin_kubeconfig.parent / "pki"
    if not (pki / "ca.key").exists():
        raise ValueError(f"no cluster CA key in {pki}: run this on the cluster's machine")
    issued = load_or_create_ca(Pki(pki)).issue(user, tuple(groups), client=True, days=days)
    assert issued.key is not None
    config = kubeconfig.for_cluster(cluster, endpoint.server, ca_data=endpoint.ca_data, client_cert=issued.cert_pem,
                                    client_key=issued.key_pem)
    config["users"][0]["name"] = config["contexts"][0]["context"]["user"] = f"{user}@{cluster}"
    config["contexts"][0]["name"] = config["current-context"] = f"{user}@{cluster}"
    return config
