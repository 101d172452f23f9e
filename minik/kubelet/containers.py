"""What a container needs beyond its spec before a runtime can start it: its environment (values, fieldRef,
resourceFieldRef, configMapKeyRef, secretKeyRef, envFrom; ``$(VAR)`` references expanded) and its volumes as
host directories (emptyDir, hostPath, configMap, secret, downwardAPI, projected) under the kubelet's data
directory, DATA_DIR/pods/UID/volumes/NAME; a persistentVolumeClaim volume is its bound PersistentVolume's
hostPath or local directory, which outlives the pod.

A projected volume gathers configMap, secret, downwardAPI and serviceAccountToken sources in one directory; its
tokens come from the TokenRequest API and are renewed while the pod runs (minik.kubelet.tokens). Every file is
written as a new file renamed over the old one. The Docker runtime bind-mounts each volume's directory, so a
renewed token shows in the container; the process runtime mounts nothing (its processes see the host's file
system), so a process finds its files under the pod's directory, not at the mount path.

A missing ConfigMap, Secret or key fails the start with CreateContainerConfigError and Kubernetes' message; so
does a token the API will not give.
"""

from __future__ import annotations

import asyncio
import base64
import math
import os
import re
import shutil
import stat
import uuid
from pathlib import Path
from typing import Any

from minik.api.errors import StatusError
from minik.api.quantity import parse_quantity
from minik.api.serviceenv import service_env
from minik.api.volumes import volume_path
from minik.client import Client, TransportError
from minik.kubelet.runtimes.base import ContainerConfig, Mount, RuntimeFailure, SandboxInfo
from minik.kubelet.runtimes.security import effective
from minik.kubelet.runtimes.termination import create_message_file
from minik.kubelet.status import TERMINAL_PHASES
from minik.kubelet.tokens import DEFAULT_EXPIRATION_SECONDS, TokenFile, TokenManager, write_atomically

Obj = dict[str, Any]

CONFIG_ERROR = "CreateContainerConfigError"
#: the waiting reason while a volume cannot be mounted yet (Kubernetes shows the pod ContainerCreating)
MOUNT_WAITING = "ContainerCreating"
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


def give_to_group(root: Path, gid: int, read_only: bool) -> None:
    """fsGroup, as Kubernetes' SetVolumeOwnership: the volume's files belong to the group and it may read them
    (and write, unless the volume is read-only); directories are setgid, so new files get the group too."""
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        os.chown(path, -1, gid)
        mode = path.stat().st_mode
        if path.is_dir():
            mode |= (0o550 if read_only else 0o770) | stat.S_ISGID
        else:
            mode |= 0o440 if read_only else 0o660
        path.chmod(stat.S_IMODE(mode))


#: the mode of volume files whose volume names none (Kubernetes' 0644)
DEFAULT_MODE = 0o644


def _make_shared_directory(path: Path) -> None:
    """Make a volume's directory, writable by every user, unless it exists."""
    if not path.exists():
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o777)


class ContainerConfigs:
    """Builds ContainerConfigs for one kubelet; owns DATA_DIR/pods/UID/volumes and the pods' projected tokens."""

    def __init__(self, client: Client, data_dir: Path, host_ip: str, capacity: dict[str, str],
                 tokens: TokenManager | None = None) -> None:
        self.client = client
        self.pods_dir = data_dir / "pods"
        self.host_ip = host_ip
        self.capacity = capacity
        self.tokens = tokens or TokenManager(client)
        #: pods whose tokens written by an earlier kubelet were looked for (see keep_tokens)
        self._adopted: set[str] = set()

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

    async def _items(self, kind: str, namespace: str, source: Obj, mode: int) -> dict[str, tuple[str, int]]:
        """The files of a ConfigMap or Secret source (a volume, or a projected volume's source): every key, or the
        listed items at their paths and modes."""
        name = source.get("name") or source.get("secretName") or ""
        data = await self._data(kind, namespace, name, bool(source.get("optional"))) or {}
        items = source.get("items")
        if not items:
            return {key: (value, mode) for key, value in data.items()}
        files = {}
        for item in items:
            if item.get("key") not in data:
                if source.get("optional"):
                    continue
                raise RuntimeFailure(CONFIG_ERROR, f"couldn't find key {item.get('key')} in {kind} {namespace}/{name}")
            files[item.get("path") or item["key"]] = (data[item["key"]], int(item.get("mode", mode)))
        return files

    def _downward(self, pod: Obj, items: list[Obj], mode: int, pod_ip: str) -> dict[str, tuple[str, int]]:
        files = {}
        for item in items:
            if item.get("fieldRef"):
                value = field_value(pod, item["fieldRef"].get("fieldPath", ""), pod_ip, self.host_ip)
            elif item.get("resourceFieldRef"):
                container = (pod.get("spec") or {}).get("containers", [{}])[0]
                value = resource_value(pod, container, item["resourceFieldRef"], self.capacity)
            else:
                continue
            files[item["path"]] = (value, int(item.get("mode", mode)))
        return files

    def token_files(self, pod: Obj) -> list[TokenFile]:
        """The serviceAccountToken sources of the pod's projected volumes, as files on this node."""
        targets = []
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            projected = volume.get("projected") if isinstance(volume, dict) else None
            if not isinstance(projected, dict):
                continue
            root = self.pod_dir(pod["metadata"]["uid"]) / "volumes" / volume["name"]
            for source in projected.get("sources") or []:
                token = source.get("serviceAccountToken") if isinstance(source, dict) else None
                if isinstance(token, dict):
                    targets.append(TokenFile(volume["name"], root / str(token.get("path") or "token"),
                                             int(projected.get("defaultMode", DEFAULT_MODE)),
                                             str(token.get("audience") or ""),
                                             int(token.get("expirationSeconds") or DEFAULT_EXPIRATION_SECONDS)))
        return targets

    async def _projected(self, pod: Obj, volume: Obj, pod_ip: str) -> dict[str, tuple[str, int]]:
        """The files of a projected volume's configMap, secret and downwardAPI sources, its tokens written (and
        kept renewed) on the way."""
        namespace = pod["metadata"]["namespace"]
        projected = volume["projected"]
        mode = int(projected.get("defaultMode", DEFAULT_MODE))
        files: dict[str, tuple[str, int]] = {}
        for source in projected.get("sources") or []:
            if source.get("configMap"):
                files.update(await self._items("ConfigMap", namespace, source["configMap"], mode))
            elif source.get("secret"):
                files.update(await self._items("Secret", namespace, source["secret"], mode))
            elif source.get("downwardAPI"):
                files.update(self._downward(pod, source["downwardAPI"].get("items") or [], mode, pod_ip))
        for target in self.token_files(pod):
            if target.volume != volume["name"]:
                continue
            try:
                await self.tokens.write(pod, target)
            except StatusError as exc:
                raise RuntimeFailure(CONFIG_ERROR, f"failed to fetch token: {exc.message}") from None
            except TransportError as exc:
                raise RuntimeFailure(CONFIG_ERROR, f"failed to fetch token: {exc}") from None
        return files

    async def _claimed_path(self, namespace: str, source: Obj) -> Path:
        """The host directory of a persistentVolumeClaim volume: its claim's bound PersistentVolume's hostPath or
        local path (made when missing, open to every user as local-path provisioners make them). A claim that is
        missing or not bound yet fails the start, which is retried (the pod shows ContainerCreating)."""
        name = str(source.get("claimName") or "")
        claim = await self._get("persistentvolumeclaims", namespace, name)
        if claim is None:
            raise RuntimeFailure(MOUNT_WAITING, f'persistentvolumeclaim "{name}" not found')
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if not volume_name or (claim.get("status") or {}).get("phase") != "Bound":
            raise RuntimeFailure(MOUNT_WAITING, f"PVC {namespace}/{name} is not bound")
        pv = await self.client.get("persistentvolumes", volume_name)
        path = volume_path(pv)
        if path is None:
            raise RuntimeFailure(MOUNT_WAITING, f'volume "{volume_name}" has no hostPath or local path to mount')
        host = Path(path)
        if (pv.get("spec") or {}).get("hostPath", {}).get("type") in ("DirectoryOrCreate", None, ""):
            await asyncio.to_thread(_make_shared_directory, host)
        return host

    async def _volume(self, pod: Obj, volume: Obj, pod_ip: str) -> Path:
        uid, namespace = pod["metadata"]["uid"], pod["metadata"]["namespace"]
        if isinstance(volume.get("persistentVolumeClaim"), dict):
            return await self._claimed_path(namespace, volume["persistentVolumeClaim"])
        if isinstance(volume.get("ephemeral"), dict):  # its claim, made by the ephemeral-volume controller
            return await self._claimed_path(namespace, {"claimName": f"{pod['metadata']['name']}-{volume['name']}"})
        if volume.get("hostPath"):
            path = Path(volume["hostPath"].get("path", "/"))
            if volume["hostPath"].get("type") in ("DirectoryOrCreate", None, ""):
                await asyncio.to_thread(path.mkdir, parents=True, exist_ok=True)
            return path
        root = self.pod_dir(uid) / "volumes" / volume["name"]
        created = not root.exists()
        root.mkdir(parents=True, exist_ok=True)
        files: dict[str, tuple[str, int]] = {}
        if volume.get("configMap") or volume.get("secret"):
            kind = "ConfigMap" if volume.get("configMap") else "Secret"
            source = volume.get("configMap") or volume.get("secret") or {}
            files = await self._items(kind, namespace, source, int(source.get("defaultMode", DEFAULT_MODE)))
        elif volume.get("downwardAPI"):
            source = volume["downwardAPI"]
            files = self._downward(pod, source.get("items") or [], int(source.get("defaultMode", DEFAULT_MODE)),
                                   pod_ip)
        elif volume.get("projected"):
            files = await self._projected(pod, volume, pod_ip)
        for relative, (content, mode) in files.items():
            write_atomically(root / relative, content, mode)
        empty_dir = volume.get("emptyDir") is not None
        if created or not empty_dir:  # an emptyDir is set up once: later it holds what the pod made of it
            root.chmod(0o777 if empty_dir else 0o755)
            fs_group = ((pod.get("spec") or {}).get("securityContext") or {}).get("fsGroup")
            if isinstance(fs_group, int):
                await asyncio.to_thread(give_to_group, root, fs_group, not empty_dir)
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
            read_only = bool(mount.get("readOnly")) or bool((volume.get("persistentVolumeClaim") or {}).get("readOnly"))
            mounts.append(Mount(str(host), mount.get("mountPath", ""), read_only))
        return mounts

    async def build(self, pod: Obj, container: Obj, sandbox: SandboxInfo, init: bool) -> ContainerConfig:
        env = await self.env(pod, container, sandbox.ip)
        mounts = await self.mounts(pod, container, sandbox.ip)
        message_path = str(container.get("terminationMessagePath") or "")
        message_file = ""
        if message_path and not any(m.container_path == message_path for m in mounts):
            directory = self.pod_dir(pod["metadata"]["uid"]) / "containers" / container.get("name", "")
            path = directory / uuid.uuid4().hex[:8]  # one per attempt
            await asyncio.to_thread(create_message_file, path)
            message_file = str(path)
            mounts.append(Mount(message_file, message_path))
        return ContainerConfig(
            name=container.get("name", ""), image=container.get("image", ""),
            command=[expand(str(part), env) for part in container.get("command") or []],
            args=[expand(str(part), env) for part in container.get("args") or []],
            working_dir=container.get("workingDir"), env=env,
            mounts=mounts, ports=list(container.get("ports") or []),
            resources=container.get("resources") or {}, tty=bool(container.get("tty")),
            stdin=bool(container.get("stdin")), init=init, stdin_once=bool(container.get("stdinOnce")),
            security=effective(pod, container), termination_message_file=message_file,
            termination_message_policy=str(container.get("terminationMessagePolicy") or "File"))

    async def keep_tokens(self, pod: Obj) -> None:
        """Keep the pod's projected tokens renewed while it runs, and stop once it has finished. Writing a token
        starts its renewal; this picks up the tokens an earlier kubelet wrote for a pod still running here."""
        uid = pod["metadata"]["uid"]
        if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            await self.tokens.forget(uid)
            return
        if uid in self._adopted or self.tokens.tracks(uid):
            return
        self._adopted.add(uid)
        targets = self.token_files(pod)
        if targets:
            self.tokens.adopt(pod, targets)

    async def remove(self, uid: str) -> None:
        """Drop the pod's volumes (emptyDir contents, configMap files, tokens...) once its containers are gone, and
        stop renewing its tokens."""
        await self.tokens.forget(uid)
        self._adopted.discard(uid)
        shutil.rmtree(self.pod_dir(uid), ignore_errors=True)

    async def stop(self) -> None:
        """Stop renewing tokens (the kubelet stops; the files stay for the next one)."""
        await self.tokens.stop()
        self._adopted.clear()
