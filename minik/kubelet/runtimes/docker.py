"""The Docker runtime (aiodocker): a pause container per pod holds the network namespace and the pod's IP (and
its hostPorts); app and init containers join it, so a pod's containers share localhost.

Every container carries labels (pod uid, namespace, name, container name, attempt, node, kubelet id); the
kubelet id is what keeps two kubelets on one engine apart, and the labels are how a restarted kubelet finds its
containers again. Docker's event stream (die, start, oom of our containers) tells the kubelet when to sync.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiodocker
import structlog
from aiodocker.containers import DockerContainer

from minik.aio import Backoff, start_task, stop_task
from minik.api.quantity import parse_quantity
from minik.kubelet.dns import CLUSTER_DOMAIN, pod_hostname
from minik.kubelet.runtimes.base import (
    ContainerConfig,
    ContainerInfo,
    ExecSession,
    OnChange,
    PodRecord,
    RuntimeFailure,
    SandboxInfo,
)
from minik.kubelet.runtimes.docker_exec import DockerAttach, DockerExec, docker_message
from minik.kubelet.runtimes.docker_security import docker_security, sandbox_sysctls, unsupported
from minik.kubelet.runtimes.images import PAUSE_IMAGE, build_pause
from minik.kubelet.runtimes.security import SecurityConfig, verify_run_as_non_root
from minik.kubelet.runtimes.termination import TerminationMessages

if TYPE_CHECKING:
    from minik.kubelet.dns import ClusterDns

log = structlog.get_logger("minik.kubelet.docker")

Obj = dict[str, Any]

UID = "io.kubernetes.pod.uid"
NAMESPACE = "io.kubernetes.pod.namespace"
NAME = "io.kubernetes.pod.name"
CONTAINER = "io.kubernetes.container.name"
ATTEMPT = "minik.io/attempt"
INIT = "minik.io/init"
EPHEMERAL = "minik.io/ephemeral"
NODE = "minik.io/node"
KUBELET = "minik.io/kubelet"
MESSAGE_FILE = "minik.io/termination-message-file"
MESSAGE_POLICY = "minik.io/termination-message-policy"
SANDBOX = "POD"


def _epoch(text: str | None) -> float | None:
    if not text or text.startswith("0001-"):
        return None
    head, _, fraction = text.rstrip("Z").partition(".")
    seconds = datetime.fromisoformat(head + "+00:00").timestamp()
    return seconds + float("0." + fraction[:6]) if fraction else seconds


class DockerRuntime:
    name = "docker"
    simulated = False
    needs_config = True

    def __init__(self, kubelet_id: str, pause_image: str = PAUSE_IMAGE, url: str | None = None,
                 seccomp_dir: Path | None = None) -> None:
        self.kubelet_id = kubelet_id
        self.seccomp_dir = seccomp_dir
        """where seccompProfile type Localhost finds its profiles (the kubelet's DATA_DIR/seccomp)"""
        self._messages = TerminationMessages(self._log_tail)
        self.pause_image = pause_image
        self.url = url
        self.docker: aiodocker.Docker | None = None
        self._on_change: OnChange = lambda uid: None
        self._events: asyncio.Task[None] | None = None
        self._inspected: dict[str, tuple[str, Obj]] = {}  # id -> (state it was inspected in, inspect output)
        self._pause_ready = False  # checked once, not at every sandbox
        self._pause_lock = asyncio.Lock()
        self.dns: ClusterDns | None = None
        """Gives each pod's sandbox its resolver configuration (minik.kubelet.dns); None: Docker's default."""

    def unsupported(self, security: SecurityConfig) -> list[str]:
        return unsupported(security)

    @property
    def _d(self) -> aiodocker.Docker:
        assert self.docker is not None, "the runtime is not started"
        return self.docker

    async def start(self, on_change: OnChange) -> None:
        self.docker = aiodocker.Docker(url=self.url)
        self._on_change = on_change
        self._events = start_task(self._watch_events(), "docker events")

    async def stop(self) -> None:
        await stop_task(self._events)
        self._events = None
        if self.docker is not None:
            await self.docker.close()
            self.docker = None

    async def version(self) -> str:
        return f"docker://{(await self._d.version())['Version']}"

    async def _watch_events(self) -> None:
        backoff = Backoff(initial=0.2, maximum=5.0)
        filters = json.dumps({"type": ["container"], "label": [f"{KUBELET}={self.kubelet_id}"],
                              # no "start": the kubelet starts its containers itself and knows it did
                              "event": ["die", "oom", "destroy"]})
        while True:
            try:
                async with self._d._query("events", params={"filters": filters}, timeout=None) as response:  # noqa: SLF001
                    backoff.reset()
                    self._inspected.clear()  # events may have been missed while not connected
                    async for line in response.content:
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        actor = event.get("Actor") or {}
                        # the list endpoint may still show the old state: inspect this container afresh
                        self._inspected.pop(str(actor.get("ID") or ""), None)
                        uid = (actor.get("Attributes") or {}).get(UID)
                        if uid:
                            self._on_change(uid)
            except (TimeoutError, aiodocker.DockerError, OSError, ValueError) as exc:
                log.warning("docker event stream broke; reconnecting", error=str(exc))
            await asyncio.sleep(backoff.next())

    # -- reading ----------------------------------------------------------------------------------------------
    async def _list(self, *labels: str) -> list[Obj]:
        filters = json.dumps({"label": [f"{KUBELET}={self.kubelet_id}", *labels]})
        async with self._d._query("containers/json", params={"all": "1", "filters": filters}) as response:  # noqa: SLF001
            return list(await response.json())

    async def _inspect(self, summary: Obj) -> Obj:
        cid, state = summary["Id"], summary.get("State", "")
        cached = self._inspected.get(cid)
        if cached is not None and cached[0] == state:
            return cached[1]  # unchanged since: a container that dies or goes away drops out with its event
        try:
            details = await self._d._query_json(f"containers/{cid}/json")  # noqa: SLF001
        except aiodocker.DockerError:
            return {}
        self._inspected[cid] = (state, details)
        return details

    async def _records(self, summaries: list[Obj]) -> dict[str, PodRecord]:
        records: dict[str, PodRecord] = {}
        details = await asyncio.gather(*(self._inspect(s) for s in summaries))
        for summary, detail in zip(summaries, details):
            labels = summary.get("Labels") or {}
            uid = labels.get(UID, "")
            record = records.get(uid)
            if record is None:
                record = records[uid] = PodRecord(uid, labels.get(NAMESPACE, ""), labels.get(NAME, ""),
                                                  labels.get(NODE, ""))
            state = (detail.get("State") or {}) if detail else {}
            docker_state = str(state.get("Status") or summary.get("State") or "")
            running = docker_state in ("running", "paused", "restarting")
            if labels.get(CONTAINER) == SANDBOX:
                networks = (detail.get("NetworkSettings") or {}) if detail else {}
                sandbox = SandboxInfo(summary["Id"], str(networks.get("IPAddress") or ""), running)
                if record.sandbox is None or (sandbox.running and not record.sandbox.running):
                    record.sandbox = sandbox
                continue
            status = "running" if running else ("created" if docker_state == "created" else "exited")
            exit_code = state.get("ExitCode") if status == "exited" else None
            reason = ""
            message = str(state.get("Error") or "")
            if status == "exited":
                reason = "OOMKilled" if state.get("OOMKilled") else ("Completed" if exit_code == 0 else "Error")
                message = await self._messages.read(summary["Id"], labels.get(MESSAGE_FILE, ""),
                                                    labels.get(MESSAGE_POLICY, ""), exit_code) or message
            record.containers.append(ContainerInfo(
                summary["Id"], labels.get(CONTAINER, ""), int(labels.get(ATTEMPT, "0")), status, exit_code, reason,
                message, _epoch(state.get("StartedAt")), _epoch(state.get("FinishedAt")),
                summary.get("Image", ""), f"docker-pullable://{summary.get('ImageID', '')}",
                labels.get(INIT) == "true"))
        known = {s["Id"] for s in summaries}
        for cid in [c for c in self._inspected if c not in known]:
            del self._inspected[cid]
        return records

    async def _log_tail(self, container_id: str, lines: int) -> bytes:
        output = bytearray()
        try:
            async for chunk in self.logs(container_id, tail_lines=lines):
                output += chunk
        except (RuntimeFailure, aiodocker.DockerError):
            return b""
        return bytes(output)

    async def pods(self) -> dict[str, PodRecord]:
        return await self._records(await self._list())

    async def pod(self, uid: str) -> PodRecord | None:
        summaries = await self._list(f"{UID}={uid}")
        for cid in [c for c, (_, d) in self._inspected.items() if (d.get("Config") or {}).get("Labels", {}).get(UID) == uid
                    and c not in {s["Id"] for s in summaries}]:
            del self._inspected[cid]
        return (await self._records(summaries)).get(uid) if summaries else None

    # -- images -----------------------------------------------------------------------------------------------
    async def _present(self, image: str) -> bool:
        try:
            await self._d.images.inspect(image)
            return True
        except aiodocker.DockerError:
            return False

    async def ensure_image(self, image: str, policy: str) -> bool | None:
        if policy == "Never":
            if not await self._present(image):
                raise RuntimeFailure("ErrImageNeverPull",
                                     f'Container image "{image}" is not present with pull policy of Never')
            return False
        if policy == "IfNotPresent" and await self._present(image):
            return False
        try:
            await self._d.images.pull(image)
        except aiodocker.DockerError as exc:
            # no registry answers on many minik machines: an image already here is used rather than failing a
            # pod whose policy is Always (Kubernetes would fail it); say so in the log
            if await self._present(image):
                log.info("pull failed; using the local image", image=image, error=docker_message(exc))
                return False
            raise RuntimeFailure("ErrImagePull", docker_message(exc)) from None
        return True

    async def _ensure_pause(self) -> None:
        if self._pause_ready:
            return
        async with self._pause_lock:
            self._pause_ready = await self._present(self.pause_image)
            if self._pause_ready:
                return
            try:
                await self._d.images.pull(self.pause_image)
            except aiodocker.DockerError:
                log.info("building the pause image from the host's busybox", image=self.pause_image)
                try:
                    await build_pause(self._d)
                except (aiodocker.DockerError, OSError) as exc:
                    raise RuntimeFailure("CreatePodSandboxError", f"no pause image {self.pause_image}: {exc}") from None
            self._pause_ready = True

    # -- running ----------------------------------------------------------------------------------------------
    def _labels(self, pod: Obj, container: str, attempt: int, init: bool = False,
                ephemeral: bool = False) -> dict[str, str]:
        meta = pod["metadata"]
        labels = {UID: meta["uid"], NAMESPACE: meta.get("namespace", ""), NAME: meta["name"], CONTAINER: container,
                  ATTEMPT: str(attempt), INIT: "true" if init else "false",
                  NODE: (pod.get("spec") or {}).get("nodeName", ""), KUBELET: self.kubelet_id}
        if ephemeral:
            labels[EPHEMERAL] = "true"
        return labels

    @staticmethod
    def _container_name(pod: Obj, container: str, attempt: int) -> str:
        meta = pod["metadata"]
        return f"minik_{container}_{meta['name']}_{meta.get('namespace', '')}_{meta['uid']}_{attempt}"

    async def _next_sandbox_attempt(self, pod: Obj) -> int:
        """0 for a pod's first sandbox, found with one look by name rather than a list of every container; when
        older sandboxes exist (one died, or a kubelet stopped half-way) they are removed and the next number is
        taken."""
        try:
            await self._d._query_json(f"containers/{self._container_name(pod, SANDBOX, 0)}/json")  # noqa: SLF001
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                return 0
            raise RuntimeFailure("CreatePodSandboxError", docker_message(exc)) from None
        previous = await self._list(f"{UID}={pod['metadata']['uid']}", f"{CONTAINER}={SANDBOX}")
        for summary in previous:
            await self._remove(summary["Id"])
        return max((int((s.get("Labels") or {}).get(ATTEMPT, "0")) for s in previous), default=0) + 1

    async def run_sandbox(self, pod: Obj) -> SandboxInfo:
        await self._ensure_pause()
        spec = pod.get("spec") or {}
        exposed: Obj = {}
        bindings: Obj = {}
        for container in spec.get("containers") or []:
            for port in container.get("ports") or []:
                if port.get("hostPort"):
                    key = f"{port['containerPort']}/{str(port.get('protocol') or 'TCP').lower()}"
                    exposed[key] = {}
                    bindings[key] = [{"HostIp": port.get("hostIP") or "", "HostPort": str(port["hostPort"])}]
        attempt = await self._next_sandbox_attempt(pod)
        hostname, domain = pod_hostname(pod, self.dns.domain if self.dns is not None else CLUSTER_DOMAIN)
        config: Obj = {"Image": self.pause_image, "Hostname": hostname, "Domainname": domain,
                  "Labels": self._labels(pod, SANDBOX, attempt), "ExposedPorts": exposed,
                  "HostConfig": {"PortBindings": bindings, "IpcMode": "shareable", **await self._dns_config(pod)}}
        sysctls = sandbox_sysctls(pod)
        if sysctls:  # the sandbox owns the network and IPC namespaces the pod's sysctls belong to
            config["HostConfig"]["Sysctls"] = sysctls
        try:
            container = await self._d.containers.create(config, name=self._container_name(pod, SANDBOX, attempt))
            await container.start()
            self._inspected.pop(container.id, None)
            details = await container.show()
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                self._pause_ready = False  # the image went away: look again next time
            raise RuntimeFailure("CreatePodSandboxError", docker_message(exc)) from None
        return SandboxInfo(container.id, str(details["NetworkSettings"].get("IPAddress") or ""), True)

    async def _dns_config(self, pod: Obj) -> Obj:
        """The sandbox's resolv.conf as HostConfig fields (app containers share the sandbox's file)."""
        config = await self.dns.for_pod(pod) if self.dns is not None else None
        if config is None:
            return {}
        return {"Dns": config.servers, "DnsSearch": config.searches, "DnsOptions": config.options}

    async def start_container(self, pod: Obj, sandbox: SandboxInfo, config: ContainerConfig, attempt: int) -> str:
        host: Obj = {"NetworkMode": f"container:{sandbox.id}", "IpcMode": f"container:{sandbox.id}",
                     "Binds": [f"{m.host_path}:{m.container_path}:{'ro' if m.read_only else 'rw'}"
                               for m in config.mounts]}
        limits = (config.resources or {}).get("limits") or {}
        if limits.get("memory"):
            host["Memory"] = int(parse_quantity(str(limits["memory"])))
        if limits.get("cpu"):
            host["NanoCpus"] = int(parse_quantity(str(limits["cpu"])) * 1_000_000_000)
        if config.pid_namespace_of:
            host["PidMode"] = f"container:{config.pid_namespace_of}"
        labels = self._labels(pod, config.name, attempt, config.init, config.ephemeral)
        if config.termination_message_file:
            labels[MESSAGE_FILE] = config.termination_message_file
            labels[MESSAGE_POLICY] = config.termination_message_policy
        create: Obj = {"Image": config.image, "Env": [f"{k}={v}" for k, v in config.env.items()],
                       "Labels": labels, "HostConfig": host, "Tty": config.tty, "OpenStdin": config.stdin,
                       "StdinOnce": config.stdin and config.stdin_once, "AttachStdin": False}
        user, options = docker_security(config.security, await self._image_user(pod, config), self.seccomp_dir)
        host.update(options)
        if user:
            create["User"] = user
        if config.command:
            create["Entrypoint"] = config.command
            create["Cmd"] = config.args
        elif config.args:
            create["Cmd"] = config.args
        if config.working_dir:
            create["WorkingDir"] = config.working_dir
        name = self._container_name(pod, config.name, attempt)
        try:
            container = await self._create_named(create, name)
        except aiodocker.DockerError as exc:
            raise RuntimeFailure("CreateContainerError", docker_message(exc)) from None
        try:
            await container.start()
        except aiodocker.DockerError as exc:
            raise RuntimeFailure("RunContainerError", docker_message(exc)) from None
        finally:
            self._inspected.pop(container.id, None)
        if attempt >= 2:
            await self._prune(pod["metadata"]["uid"], config.name, attempt)
        return str(container.id)

    async def _image_user(self, pod: Obj, config: ContainerConfig) -> str:
        """The user the image runs as ("" for root), checked against runAsNonRoot; only looked up when a setting
        needs it."""
        security = config.security
        if not security.run_as_non_root and (security.run_as_group is None or security.run_as_user is not None):
            return ""
        try:
            image = await self._d.images.inspect(config.image)
        except aiodocker.DockerError as exc:
            raise RuntimeFailure("CreateContainerError", docker_message(exc)) from None
        user = str((image.get("Config") or {}).get("User") or "")
        verify_run_as_non_root(pod, config.name, security, user)
        return user

    async def _create_named(self, config: Obj, name: str) -> DockerContainer:
        """Create a container; one of that name already there is a half-made attempt (a kubelet stopped between
        create and start): it is removed and the create tried again."""
        try:
            return await self._d.containers.create(config, name=name)
        except aiodocker.DockerError as exc:
            if exc.status != 409:
                raise
        await self._remove(name)
        return await self._d.containers.create(config, name=name)

    async def _prune(self, uid: str, name: str, attempt: int) -> None:
        """Keep the newest two attempts of a container (the current one and the previous, for logs --previous)."""
        for summary in await self._list(f"{UID}={uid}", f"{CONTAINER}={name}"):
            if int((summary.get("Labels") or {}).get(ATTEMPT, "0")) < attempt - 1:
                await self._remove(summary["Id"])

    async def _remove(self, container_id: str) -> None:
        try:
            await self._d.containers.container(container_id).delete(force=True)
        except aiodocker.DockerError as exc:
            if exc.status != 404:
                raise
        self._inspected.pop(container_id, None)

    async def stop_container(self, container_id: str, grace_seconds: float) -> None:
        try:
            await self._d.containers.container(container_id).stop(t=max(0, round(grace_seconds)))
        except aiodocker.DockerError as exc:
            if exc.status not in (304, 404):
                raise

    async def remove_container(self, container_id: str) -> None:
        await self._remove(container_id)

    async def remove_pod(self, uid: str, grace_seconds: float) -> None:
        summaries = await self._list(f"{UID}={uid}")
        apps = [s for s in summaries if (s.get("Labels") or {}).get(CONTAINER) != SANDBOX and s.get("State") == "running"]
        await asyncio.gather(*(self.stop_container(s["Id"], grace_seconds) for s in apps))
        for summary in summaries:
            await self._remove(summary["Id"])

    async def exec(self, container_id: str, command: list[str], *, stdin: bool = False,
                   tty: bool = False) -> ExecSession:
        return await DockerExec.start(self._d, container_id, command, stdin=stdin, tty=tty)

    async def attach(self, container_id: str, *, stdin: bool = False, tty: bool = False) -> ExecSession:
        """`docker attach`: whether the output is a terminal's was decided when the container was created."""
        return await DockerAttach.start(self._d, container_id, stdin=stdin)

    async def logs(self, container_id: str, *, follow: bool = False, tail_lines: int | None = None,
                   since_seconds: int | None = None, timestamps: bool = False) -> AsyncIterator[bytes]:
        params: Obj = {"stdout": "1", "stderr": "1", "follow": "1" if follow else "0",
                       "timestamps": "1" if timestamps else "0", "tail": str(tail_lines) if tail_lines is not None
                       else "all"}
        if since_seconds:
            params["since"] = str(int(time.time() - since_seconds))
        try:
            details = await self._d._query_json(f"containers/{container_id}/json")  # noqa: SLF001
        except aiodocker.DockerError as exc:
            raise RuntimeFailure("NotFound", docker_message(exc)) from None
        tty = bool((details.get("Config") or {}).get("Tty"))
        async with self._d._query(f"containers/{container_id}/logs", params=params, timeout=None) as response:  # noqa: SLF001
            if tty:
                async for chunk in response.content.iter_any():
                    yield chunk
                return
            while True:  # the multiplexed stream: an 8-byte header (stream, 0, 0, 0, size) per frame
                try:
                    header = await response.content.readexactly(8)
                except asyncio.IncompleteReadError:
                    return
                size = int.from_bytes(header[4:8], "big")
                yield await response.content.readexactly(size)


async def remove_kubelet_containers(kubelet_id: str, url: str | None = None) -> int:
    """Remove (forcibly: running ones too) every container of the kubelet ``kubelet_id`` on the engine, as when
    its cluster is deleted; how many were removed. aiodocker.DockerError or OSError when the engine does not
    answer."""
    filters = json.dumps({"label": [f"{KUBELET}={kubelet_id}"]})
    removed = 0
    async with aiodocker.Docker(url=url) as docker:
        async with docker._query("containers/json", params={"all": "1", "filters": filters}) as response:  # noqa: SLF001
            summaries = list(await response.json())
        for summary in summaries:
            try:
                await docker.containers.container(summary["Id"]).delete(force=True)
                removed += 1
            except aiodocker.DockerError as exc:
                if exc.status != 404:  # gone already (its pod was being removed)
                    raise
    return removed
