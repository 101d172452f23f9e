"""Where a webhook's ``service`` reference leads, read from the store: a ready address of the Service's Endpoints
and the port its ``port`` targets (by number, or by the name of the Service port)."""

from __future__ import annotations

from typing import Any

from minik.store import Store


def service_endpoint(store: Store, namespace: str, name: str, port: int) -> tuple[str, int] | None:
    service = store.get(f"/core/services/{namespace}/{name}")
    endpoints = store.get(f"/core/endpoints/{namespace}/{name}")
    if service is None or endpoints is None:
        return None
    ports: list[Any] = (service.object().get("spec") or {}).get("ports") or []
    wanted = next((p for p in ports if isinstance(p, dict) and p.get("port") == port), None)
    if wanted is None:
        return None
    port_name, target = wanted.get("name"), wanted.get("targetPort", port)
    for subset in endpoints.object().get("subsets") or []:
        addresses = [a for a in subset.get("addresses") or [] if isinstance(a, dict) and a.get("ip")]
        if not addresses:
            continue
        for endpoint_port in subset.get("ports") or []:
            if (port_name and endpoint_port.get("name") == port_name) or \
                    (not port_name and (endpoint_port.get("port") == target or len(subset.get("ports")) == 1)):
                return str(addresses[0]["ip"]), int(endpoint_port["port"])
    return None
