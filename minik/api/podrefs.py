"""What a pod refers to by name: the ConfigMaps and Secrets of its volumes, env and image pull secrets, and the
PersistentVolumeClaims of its volumes (what Kubernetes' node authorizer and NodeRestriction walk)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Obj = dict[str, Any]


def references(pod: Obj) -> Iterator[tuple[str, str]]:
    """("configmaps" | "secrets" | "persistentvolumeclaims", name) for everything a pod's volumes, env and pull
    secrets reference (a generic ephemeral volume's claim is named POD-VOLUME)."""
    spec = pod.get("spec") or {}
    for ref in spec.get("imagePullSecrets") or []:
        if isinstance(ref, dict) and ref.get("name"):
            yield "secrets", str(ref["name"])
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        if isinstance(volume.get("configMap"), dict):
            yield "configmaps", str(volume["configMap"].get("name", ""))
        if isinstance(volume.get("secret"), dict):
            yield "secrets", str(volume["secret"].get("secretName", ""))
        if isinstance(volume.get("persistentVolumeClaim"), dict):
            yield "persistentvolumeclaims", str(volume["persistentVolumeClaim"].get("claimName", ""))
        if isinstance(volume.get("ephemeral"), dict):
            yield "persistentvolumeclaims", f"{(pod.get('metadata') or {}).get('name', '')}-{volume.get('name', '')}"
        for source in (volume.get("projected") or {}).get("sources") or []:
            if isinstance(source, dict):
                if isinstance(source.get("configMap"), dict):
                    yield "configmaps", str(source["configMap"].get("name", ""))
                if isinstance(source.get("secret"), dict):
                    yield "secrets", str(source["secret"].get("name", ""))
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(group) or []:
            if not isinstance(container, dict):
                continue
            for source in container.get("envFrom") or []:
                if isinstance(source, dict):
                    if isinstance(source.get("configMapRef"), dict):
                        yield "configmaps", str(source["configMapRef"].get("name", ""))
                    if isinstance(source.get("secretRef"), dict):
                        yield "secrets", str(source["secretRef"].get("name", ""))
            for env in container.get("env") or []:
                value_from = env.get("valueFrom") if isinstance(env, dict) else None
                if isinstance(value_from, dict):
                    if isinstance(value_from.get("configMapKeyRef"), dict):
                        yield "configmaps", str(value_from["configMapKeyRef"].get("name", ""))
                    if isinstance(value_from.get("secretKeyRef"), dict):
                        yield "secrets", str(value_from["secretKeyRef"].get("name", ""))
