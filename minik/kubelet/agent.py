"""One real node: its runtime (docker, process or auto), the kubelet that drives it and the kubelet's HTTP
endpoint (logs, exec), started in the order that lets the Node object carry the endpoint's port.

`minik up` runs one for the local machine (component.py) and `minik node join` runs one on its own; both talk to
the cluster only through the client they are given.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from minik.aio import start_task, stop_task
from minik.api.volumes import LOCAL_PATH_ROOT_ANNOTATION
from minik.client import Client
from minik.controlplane import ControlPlane, StaticPod
from minik.kubelet.containers import ContainerConfigs
from minik.kubelet.kubelet import Kubelet, KubeletSettings
from minik.kubelet.localvolumes import LOCAL_PATH_DIR, LocalVolumes
from minik.kubelet.mirror import is_mirror
from minik.kubelet.node import NodeConfig, host_address, host_capacity, well_known_labels
from minik.kubelet.server import DEFAULT_PORT, KubeletServer

log = structlog.get_logger("minik.kubelet")

Obj = dict[str, Any]


@dataclass(frozen=True)
class AgentSettings:
    name: str
    """The node's name."""

    data_dir: Path
    """Where the kubelet keeps its identity (the id that labels its containers) and the pods' volumes."""

    tls: ssl.SSLContext
    """The server context of the kubelet's endpoint: the node's serving certificate, client certificates from
    the cluster CA required (``minik.pki.kubelet.serving_context``)."""

    runtime: str = "auto"
    """docker, process, fake, or auto (docker when an engine answers, else process)."""

    address: str | None = None
    """The node's InternalIP [default: the source address of the default route]."""

    labels: dict[str, str] = field(default_factory=dict)
    """Labels beyond the well-known ones (kubernetes.io/hostname, os, arch)."""

    taints: list[Obj] = field(default_factory=list)
    """Taints the node registers with (``minik node --taint``)."""

    zone: str | None = None
    """topology.kubernetes.io/zone"""

    region: str | None = None
    """topology.kubernetes.io/region"""

    bind: str = "0.0.0.0"
    """The address the kubelet's endpoint listens on."""

    port: int = DEFAULT_PORT
    """The kubelet's endpoint port (another free one when it is taken; 0 picks one)."""

    kubelet: KubeletSettings = field(default_factory=KubeletSettings)
    """The kubelet's own settings (workers, resync, back-off)."""

    control_plane: ControlPlane | None = None
    """The in-process components this node shows as its static pods (`minik up`'s local node)."""

    local_volume_sweep_seconds: float = 10.0
    """How often the directories of deleted local-path volumes are looked for and removed."""


class NodeAgent:
    def __init__(self, client: Client, settings: AgentSettings) -> None:
        self.client = client
        self.settings = settings
        self.kubelet: Kubelet | None = None
        self.server: KubeletServer | None = None
        self.local_volumes = LocalVolumes(client, settings.data_dir / LOCAL_PATH_DIR,
                                          settings.local_volume_sweep_seconds)
        self._sweeper: asyncio.Task[None] | None = None

    def node_config(self, port: int) -> NodeConfig:
        s = self.settings
        labels = well_known_labels(s.name, s.zone, s.region)
        labels.update(s.labels)
        return NodeConfig(s.name, s.address or host_address(), host_capacity(str(s.data_dir)), labels,
                          list(s.taints), kubelet_port=port,
                          annotations={LOCAL_PATH_ROOT_ANNOTATION: str(self.local_volumes.root)})

    async def start(self) -> None:
        from minik.kubelet.runtimes.select import open_runtime

        s = self.settings
        runtime = await open_runtime(s.runtime, s.data_dir)
        if runtime.name == "docker":  # pods on Docker get the cluster DNS as their nameserver
            from minik.kubelet.dns import ClusterDns

            runtime.dns = ClusterDns(self.client)  # type: ignore[attr-defined]
        kubelet: Kubelet | None = None

        def find_pod(namespace: str, name: str) -> Obj | None:
            return kubelet.find_pod(namespace, name) if kubelet is not None else None

        def static_pod(pod: Obj) -> StaticPod | None:
            if kubelet is None or kubelet.mirror is None or not is_mirror(pod):
                return None
            return kubelet.mirror.static_pod(pod)

        self.server = KubeletServer(runtime, find_pod, s.tls, static_pod)
        try:
            port = await self.server.start(s.bind, s.port)
            node = self.node_config(port)
            configs = ContainerConfigs(self.client, s.data_dir, node.address, node.capacity)
            kubelet = self.kubelet = Kubelet(self.client, runtime, [node], s.kubelet, configs, s.control_plane)
            await kubelet.start()
            self._sweeper = start_task(self.local_volumes.run(), f"local volumes of {s.name}")
        except BaseException:
            # Undo what began. When the start was cancelled, this cleanup may itself be cut short: the owner's
            # stop() (every step of which may be repeated) finishes it.
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop the endpoint, then the kubelet; the containers keep running for the next start to adopt."""
        await stop_task(self._sweeper)
        self._sweeper = None
        if self.server is not None:
            await self.server.stop()
            self.server = None
        if self.kubelet is not None:
            await self.kubelet.stop()
            self.kubelet = None
