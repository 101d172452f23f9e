"""The Node objects a kubelet registers and keeps alive: capacity and allocatable, addresses, nodeInfo, the
well-known labels, conditions with heartbeats, and a Lease in kube-node-lease renewed every 10 s.

One ``NodeKeeper`` serves any number of nodes with one task (the fake nodes of a scale test share it): it
registers them, renews every lease each ``lease_renew_seconds`` and reports every node's status each
``status_report_seconds`` (Kubernetes' nodeStatusReportFrequency; the Lease is the frequent heartbeat).
"""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import socket
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import structlog

from minik import __version__
from minik.aio import Backoff
from minik.api.errors import StatusError
from minik.api.timestamps import micro_time, now_rfc3339
from minik.client import Client, TransportError

log = structlog.get_logger("minik.kubelet.node")

Obj = dict[str, Any]

KUBELET_VERSION = "v1.32.0"
LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
ARCHITECTURES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "armv7l": "arm"}


@dataclass
class NodeConfig:
    """One node as its kubelet registers it."""

    name: str
    address: str
    capacity: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[Obj] = field(default_factory=list)
    kubelet_port: int = 10250
    runtime_version: str = ""
    pod_cidr: str | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    """Annotations beyond minik.io/kubelet-version (minik.io/local-path-root: where its local volumes live)."""


def parse_labels(text: str) -> dict[str, str]:
    """``k=v,k2=v2`` -> dict (ValueError for a part without ``=``)."""
    labels: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"invalid label {part!r}: expected key=value")
        labels[key] = value
    return labels


def parse_taints(text: str) -> list[Obj]:
    """``key=value:Effect,key2:Effect`` -> taints (ValueError for a bad effect)."""
    taints = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        spec, sep, effect = part.rpartition(":")
        if not sep or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValueError(f"invalid taint {part!r}: expected key[=value]:NoSchedule|PreferNoSchedule|NoExecute")
        key, _, value = spec.partition("=")
        taint: Obj = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        taints.append(taint)
    return taints


def host_address() -> str:
    """The address other machines reach this one at: the source address of the default route."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))  # no packet is sent for a UDP connect
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def host_capacity(data_dir: str) -> dict[str, str]:
    memory_kib = 0
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    memory_kib = int(line.split()[1])
    except OSError:
        pass
    os.makedirs(data_dir, exist_ok=True)
    disk_kib = shutil.disk_usage(data_dir).total // 1024
    return {"cpu": str(os.cpu_count() or 1), "memory": f"{memory_kib}Ki", "ephemeral-storage": f"{disk_kib}Ki",
            "pods": "110"}


def well_known_labels(name: str, zone: str | None = None, region: str | None = None) -> dict[str, str]:
    arch = ARCHITECTURES.get(platform.machine().lower(), platform.machine().lower())
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": arch,
              "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": arch}
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
    if region:
        labels["topology.kubernetes.io/region"] = region
    return labels


def _os_image() -> str:
    try:
        with open("/etc/os-release") as release:
            for line in release:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


_BOOT_ID = str(uuid.uuid4())


def node_conditions(now: str, old: list[Obj] | None = None) -> list[Obj]:
    """The four conditions a healthy kubelet posts (heartbeat now; transitions kept from ``old``)."""
    wanted = [("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
              ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
              ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
              ("Ready", "True", "KubeletReady", "kubelet is posting ready status")]
    previous = {c.get("type"): c for c in old or []}
    out = []
    for type_, status, reason, message in wanted:
        before = previous.get(type_) or {}
        since = before.get("lastTransitionTime") if before.get("status") == status else now
        out.append({"type": type_, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": since or now,
                    "reason": reason, "message": message})
    return out


def node_status(config: NodeConfig, now: str, old: Obj | None = None) -> Obj:
    arch = ARCHITECTURES.get(platform.machine().lower(), platform.machine().lower())
    return {
        "capacity": dict(config.capacity),
        "allocatable": dict(config.capacity),
        "conditions": node_conditions(now, (old or {}).get("conditions")),
        "addresses": [{"type": "InternalIP", "address": config.address}, {"type": "Hostname", "address": config.name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": config.kubelet_port}},
        "nodeInfo": {"machineID": uuid.uuid5(uuid.NAMESPACE_DNS, config.name).hex, "systemUUID":
                     str(uuid.uuid5(uuid.NAMESPACE_URL, config.name)), "bootID": _BOOT_ID,
                     "kernelVersion": platform.release(), "osImage": _os_image(),
                     "containerRuntimeVersion": config.runtime_version, "kubeletVersion": KUBELET_VERSION,
                     "kubeProxyVersion": KUBELET_VERSION, "operatingSystem": "linux", "architecture": arch},
    }


def node_object(config: NodeConfig, now: str) -> Obj:
    spec: Obj = {}
    if config.taints:
        spec["taints"] = config.taints
    if config.pod_cidr:
        spec["podCIDR"], spec["podCIDRs"] = config.pod_cidr, [config.pod_cidr]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": config.name, "labels": dict(config.labels),
                         "annotations": {"minik.io/kubelet-version": __version__, **config.annotations}},
            "spec": spec, "status": node_status(config, now)}


class NodeKeeper:
    """Registers nodes and keeps them alive (leases, status reports), all from one task."""

    def __init__(self, client: Client, nodes: Iterable[NodeConfig], *, lease_renew_seconds: float = 10.0,
                 status_report_seconds: float = 300.0, concurrency: int = 32) -> None:
        self.client = client
        self.nodes = {n.name: n for n in nodes}
        self.lease_renew_seconds = lease_renew_seconds
        self.status_report_seconds = status_report_seconds
        self._limit = asyncio.Semaphore(concurrency)
        self._uids: dict[str, str] = {}
        self.registered = asyncio.Event()

    def uid(self, name: str) -> str | None:
        """The uid of a node once registered."""
        return self._uids.get(name)

    async def run(self) -> None:
        backoff = Backoff(initial=0.2, maximum=10.0, jitter=0.2)
        pending = list(self.nodes.values())
        while pending:  # register every node, retrying (the API may not answer yet)
            results = await self._each(pending, self._register)
            pending = [n for n, ok in zip(pending, results) if not ok]
            if pending:
                await asyncio.sleep(backoff.next())
        self.registered.set()
        last_report = time.monotonic()
        while True:
            await self._each(self.nodes.values(), self._renew_lease)
            await asyncio.sleep(self.lease_renew_seconds)
            if time.monotonic() - last_report >= self.status_report_seconds:
                last_report = time.monotonic()
                await self._each(self.nodes.values(), self._report_status)

    async def _each(self, nodes: Iterable[NodeConfig], action: Any) -> list[bool]:
        async def guarded(node: NodeConfig) -> bool:
            async with self._limit:
                try:
                    await action(node)
                    return True
                except (StatusError, TransportError) as exc:
                    log.warning("node update failed", node=node.name, action=action.__name__, error=str(exc))
                    return False
        return list(await asyncio.gather(*(guarded(n) for n in nodes)))

    async def _register(self, config: NodeConfig) -> None:
        now = now_rfc3339()
        try:
            node = await self.client.create("nodes", node_object(config, now))
            log.info("node registered", node=config.name)
        except StatusError as exc:
            if exc.code != 409:
                raise
            # registered before (a restart): take over labels, taints and status
            node = await self.client.get("nodes", config.name)
            patch: Obj = {"metadata": {"labels": config.labels, "annotations": config.annotations}}
            if config.taints:
                patch["spec"] = {"taints": config.taints}
            node = await self.client.patch("nodes", config.name, patch)
            status = node_status(config, now, node.get("status"))
            node = await self.client.patch_status("nodes", config.name, {"status": status})
            log.info("node re-registered", node=config.name)
        self._uids[config.name] = node["metadata"]["uid"]

    def _lease(self, config: NodeConfig) -> Obj:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": config.name, "namespace": LEASE_NAMESPACE,
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": config.name,
                                                  "uid": self._uids.get(config.name, "")}]},
                "spec": {"holderIdentity": config.name, "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                         "renewTime": micro_time(time.time())}}

    async def _renew_lease(self, config: NodeConfig) -> None:
        lease = self._lease(config)
        try:
            await self.client.patch("leases", config.name, {"spec": lease["spec"]}, LEASE_NAMESPACE)
        except StatusError as exc:
            if exc.code != 404:
                raise
            await self.client.create("leases", lease, LEASE_NAMESPACE)

    async def _report_status(self, config: NodeConfig) -> None:
        node = await self.client.get("nodes", config.name)
        status = node_status(config, now_rfc3339(), node.get("status"))
        await self.client.patch_status("nodes", config.name, {"status": status})
