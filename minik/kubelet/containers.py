"""What a container needs beyond its spec before a runtime can start it: its environment (values, fieldRef,
resourceFieldRef, configMapKeyRef, secretKeyRef, envFrom; ``$(VAR)`` references expanded) and its volumes as
host directories (emptyDir, hostPath, configMap, secret, downwardAPI) under the kubelet's data directory.

A missing ConfigMap, Secret or key fails the start with CreateContainerConfigError and Kubernetes' message.
"""

from __future__ import annotations

import base64
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any

from minik.api.errors import StatusError
from minik.api.quantity import parse_quantity
from minik.api.serviceenv import service_env
from minik.client import Client
from minik.kubelet.runtimes.base import ContainerConfig, Mount, RuntimeFailure, SandboxInfo

Obj = dict[str, Any]

CONFIG_ERROR = "CreateContainerConfigError"
_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)|\$\$")
_FIELD_INDEX = re.compile(r"metadata\.(labels|annotations)\['(.+)'\]")  # matched whole, with fullmatch


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: known names are replaced, unknown ones kept, $$ escapes a $."""
    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)
    return _REFERENCE.sub(one, text)


def field_value(pod: Obj, path: str, pod_ip: str, host_ip: str) -> str:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    indexed = _FIELD_INDEX.fullmatch(path)
    if indexed:
        return str((meta.get(indexed.group(1)) or {}).get(indexed.group(2), ""))
    values = {"metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
              "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
              "spec.serviceAccountName": spec.get("serviceAccountName"), "status.podIP": pod_ip,
              "status.podIPs": pod_ip, "status.hostIP": host_ip, "status.hostIPs": host_ip,
              "metadata.labels": "\n".join(f'{k}="{v}"' for k, v in sorted((meta.get("labels") or {}).items())),
              "metadata.annotations": "\n".join(f'{k}="{v}"' for k, v in
                                                sorted((meta.get("annotations") or {}).items()))}
    return str(values.get(path) or "")


def resource_value(pod: Obj, container: Obj, ref: Obj, capacity: dict[str, str]) -> str:
    """resourceFieldRef: the limit (or request) in units of the divisor, rounded up; an unset limit is the
    node's allocatable, as Kubernetes does."""
    target = container
    if ref.get("containerName"):
        target = next((c for c in (pod.get("spec") or {}).get("containers") or []
                       if c.get("name") == ref["containerName"]), container)
    kind, _, resource = str(ref.get("resource", "")).partition(".")
    quantity = ((target.get("resources") or {}).get(kind) or {}).get(resource) or capacity.get(resource, "0")
    divisor = parse_quantity(str(ref.get("divisor") or "1"))
    return str(math.ceil(parse_quantity(str(quantity)) / divisor)) if divisor else "0"


class ContainerConfigs:
    """Builds ContainerConfigs for one kubelet; owns DATA_DIR/pods/UID/volumes."""

    def __init__(self, client: Client, data_dir: Path, host_ip: str, capacity: dict[str, str]) -> None:
        self.client = client
        self.pods_dir = data_dir / "pods"
        self.host_ip = host_ip
        self.capacity = capacity

    async def _get(self, kind: str, namespace: str, name: str) -> Obj | None:
        try:
            return await self.client.get(kind, name, namespace)
        except StatusError as exc:
            if exc.code == 404:
                return None
            raise

    async def _data(self, kind: str, namespace: str, name: str, optional: bool) -> dict[str, str] | None:
        obj = await self._get("configmaps" if kind == "ConfigMap" else "secrets", namespace, name)
        if obj is None:
            if optional:
                return None
            raise RuntimeFailure(CONFIG_ERROR, f'{"configmap" if kind == "ConfigMap" else "secret"} "{name}" not found')
        if kind == "Secret":
            return {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in (obj.get("data") or {}).items()}
        data = dict(obj.get("data") or {})
        data.update({k: base64.b64decode(v).decode("utf-8", "replace")
                     for k, v in (obj.get("binaryData") or {}).items()})
        return data

    async def service_env(self, pod: Obj) -> dict[str, str]:
        """NAME_SERVICE_HOST, NAME_SERVICE_PORT... for the Services the pod sees when its container starts: those
        of its namespace (unless enableServiceLinks is false) and the `kubernetes` Service (minik.api.serviceenv)."""
        namespace = pod["metadata"]["namespace"]
        links = (pod.get("spec") or {}).get("enableServiceLinks") is not False
        services = list((await self.client.list("services", namespace)).get("items") or []) if links else []
        if namespace != "default" or not links:
            master = await self._get("services", "default", "kubernetes")
            services += [master] if master is not None else []
        return service_env(services, namespace, links)

    async def env(self, pod: Obj, container: Obj, pod_ip: str) -> dict[str, str]:
        namespace = pod["metadata"]["namespace"]
        env: dict[str, str] = await self.service_env(pod)  # the container's own env overrides these
        for source in container.get("envFrom") or []:
            prefix = source.get("prefix") or ""
            for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                ref = source.get(key)
                if ref:
                    data = await self._data(kind, namespace, ref.get("name", ""), bool(ref.get("optional")))
                    env.update({prefix + k: v for k, v in (data or {}).items()})
        for item in container.get("env") or []:
            name = item.get("name", "")
            if "value" in item or not item.get("valueFrom"):
                env[name] = expand(str(item.get("value") or ""), env)
                continue
            source = item["valueFrom"]
            if source.get("fieldRef"):
                env[name] = field_value(pod, source["fieldRef"].get("fieldPath", ""), pod_ip, self.host_ip)
            elif source.get("resourceFieldRef"):
                env[name] = resource_value(pod, container, source["resourceFieldRef"], self.capacity)
            else:
                for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                    ref = source.get(key)
                    if not ref:
                        continue
                    optional = bool(ref.get("optional"))
                    data = await self._data(kind, namespace, ref.get("name", ""), optional)
                    if data is None:
                        break
                    if ref.get("key") not in data:
                        if optional:
                            break
                        raise RuntimeFailure(CONFIG_ERROR, f"couldn't find key {ref.get('key')} in {kind} "
                                                           f"{namespace}/{ref.get('name')}")
                    env[name] = data[ref["key"]]
        return env

    def pod_dir(self, uid: str) -> Path:
        return self.pods_dir / uid

    async def _volume(self, pod: Obj, volume: Obj, pod_ip: str) -> Path:
        uid, namespace = pod["metadata"]["uid"], pod["metadata"]["namespace"]
        if volume.get("hostPath"):
            path = Path(volume["hostPath"].get("path", "/"))
            if volume["hostPath"].get("type") in ("DirectoryOrCreate", None, ""):
                path.mkdir(parents=True, exist_ok=True)
            return path
        root = self.pod_dir(uid) / "volumes" / volume["name"]
        root.mkdir(parents=True, exist_ok=True)
        files: dict[str, str] = {}
        mode = 0o644
        if volume.get("configMap") or volume.get("secret"):
            kind = "ConfigMap" if volume.get("configMap") else "Secret"
            source = volume.get("configMap") or volume.get("secret") or {}
            name = source.get("name") or source.get("secretName") or ""
            mode = int(source.get("defaultMode", 0o644))
            data = await self._data(kind, namespace, name, bool(source.get("optional"))) or {}
            items = source.get("items")
            if items:
                for item in items:
                    if item.get("key") not in data:
                        raise RuntimeFailure(CONFIG_ERROR, f"couldn't find key {item.get('key')} in {kind} "
                                                           f"{namespace}/{name}")
                    files[item.get("path") or item["key"]] = data[item["key"]]
            else:
                files = dict(data)
        elif volume.get("downwardAPI"):
            for item in volume["downwardAPI"].get("items") or []:
                if item.get("fieldRef"):
                    files[item["path"]] = field_value(pod, item["fieldRef"].get("fieldPath", ""), pod_ip,
                                                      self.host_ip)
                elif item.get("resourceFieldRef"):
                    container = (pod.get("spec") or {}).get("containers", [{}])[0]
                    files[item["path"]] = resource_value(pod, container, item["resourceFieldRef"], self.capacity)
        for relative, content in files.items():
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_name(f".{target.name}.tmp")
            temporary.write_text(content)
            os.chmod(temporary, mode)
            temporary.replace(target)
        root.chmod(0o777 if volume.get("emptyDir") is not None else 0o755)
        return root

    async def mounts(self, pod: Obj, container: Obj, pod_ip: str) -> list[Mount]:
        volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
        mounts = []
        for mount in container.get("volumeMounts") or []:
            volume = volumes.get(mount.get("name"))
            if volume is None:
                raise RuntimeFailure(CONFIG_ERROR, f"cannot find volume \"{mount.get('name')}\" to mount into "
                                                   f"container \"{container.get('name')}\"")
            host = await self._volume(pod, volume, pod_ip)
            if mount.get("subPath"):
                host = host / mount["subPath"]
                if not host.exists():
                    host.mkdir(parents=True, exist_ok=True)
            mounts.append(Mount(str(host), mount.get("mountPath", ""), bool(mount.get("readOnly"))))
        return mounts

    async def build(self, pod: Obj, container: Obj, sandbox: SandboxInfo, init: bool) -> ContainerConfig:
        env = await self.env(pod, container, sandbox.ip)
        return ContainerConfig(
            name=container.get("name", ""), image=container.get("image", ""),
            command=[expand(str(part), env) for part in container.get("command") or []],
            args=[expand(str(part), env) for part in container.get("args") or []],
            working_dir=container.get("workingDir"), env=env,
            mounts=await self.mounts(pod, container, sandbox.ip), ports=list(container.get("ports") or []),
            resources=container.get("resources") or {}, tty=bool(container.get("tty")),
            stdin=bool(container.get("stdin")), init=init)

    def remove(self, uid: str) -> None:
        """Drop the pod's volumes (emptyDir contents, configMap files...) once its containers are gone."""
        shutil.rmtree(self.pod_dir(uid), ignore_errors=True)
