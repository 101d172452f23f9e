"""The node component of `minik up`: a local node (Docker when an engine answers, else the process runtime),
started after the API is up without holding start-up, and any number of fake (simulated) nodes sharing one
kubelet, one pod watch and one lease loop."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path
from typing import Protocol

import structlog

from minik.aio import start_task, stop_task
from minik.client import Client
from minik.controlplane import ControlPlane
from minik.kubelet.agent import AgentSettings, NodeAgent
from minik.kubelet.kubelet import Kubelet, KubeletSettings
from minik.kubelet.node import NodeConfig, host_address, well_known_labels

log = structlog.get_logger("minik.kubelet")

FAKE_CAPACITY = {"cpu": "8", "memory": "32Gi", "ephemeral-storage": "100Gi", "pods": "110"}

#: the kubelet the simulated nodes share: many pods on many nodes, so more workers; the fake runtime tells of every
#: change, so no resync; and no container events, which at scale would outnumber everything else written
FAKE_KUBELET = KubeletSettings(workers=16, resync_seconds=0.0, record_events=False)


class NodeComponentSettings(Protocol):
    """What the node component reads of the cluster's settings (``minik.cluster.ClusterSettings`` has it all; the
    component does not import the cluster above it)."""

    @property
    def data_dir(self) -> Path: ...
    @property
    def disabled(self) -> frozenset[str]: ...
    @property
    def local_node(self) -> bool: ...
    @property
    def node_runtime(self) -> str: ...
    @property
    def kubelet(self) -> KubeletSettings | None: ...
    @property
    def fake_nodes(self) -> int: ...
    @property
    def fake_start_delay_seconds(self) -> float: ...
    @property
    def fake_kubelet(self) -> KubeletSettings | None: ...

    def local_node_name(self) -> str: ...


def default_node_name() -> str:
    """This machine's host name as a node name (a DNS subdomain)."""
    name = re.sub(r"[^a-z0-9.-]+", "-", socket.gethostname().lower()).strip("-.")
    return name or "minik-node"


def fake_node_names(count: int, prefix: str = "fake-node") -> list[str]:
    width = max(3, len(str(count - 1)))
    return [f"{prefix}-{i:0{width}d}" for i in range(count)]


def fake_nodes(count: int, prefix: str = "fake-node") -> list[NodeConfig]:
    nodes = []
    for i, name in enumerate(fake_node_names(count, prefix)):
        labels = well_known_labels(name)
        labels["minik.io/fake-node"] = "true"
        nodes.append(NodeConfig(name, f"10.{64 + (i >> 16) % 64}.{(i >> 8) & 255}.{i & 255}", dict(FAKE_CAPACITY),
                                labels))
    return nodes


def own_node_names(settings: NodeComponentSettings) -> frozenset[str]:
    """The nodes the node component of a cluster with ``settings`` runs (none when it is disabled): the local
    node and the simulated ones. No join is ever handed one of these names."""
    if "node" in settings.disabled:
        return frozenset()
    names = fake_node_names(settings.fake_nodes) if settings.fake_nodes else []
    if settings.local_node:
        names.append(settings.local_node_name())
    return frozenset(names)


class NodeComponent:
    def __init__(self, settings: NodeComponentSettings, client: Client, control_plane: ControlPlane | None = None) -> None:
        """``control_plane``: the cluster's in-process components, which the local node shows as its static
        pods."""
        self.settings = settings
        self.client = client
        self.control_plane = control_plane
        self.kubelets: list[Kubelet] = []
        self.local: Kubelet | None = None
        self.agent: NodeAgent | None = None
        self.local_ready = asyncio.Event()
        self._local_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        s = self.settings
        if s.fake_nodes:
            from minik.kubelet.runtimes.fake import FakeRuntime

            fake = Kubelet(self.client, FakeRuntime(s.fake_start_delay_seconds), fake_nodes(s.fake_nodes),
                           s.fake_kubelet or FAKE_KUBELET)
            await fake.start()
            self.kubelets.append(fake)
        if s.local_node:
            self._local_task = start_task(self._start_local(), "local node start")

    async def _start_local(self) -> None:
        s = self.settings
        name = s.local_node_name()
        data_dir = s.data_dir / "kubelet"
        address = host_address()
        # the endpoint's serving certificate, from the cluster CA in DATA_DIR/pki (made off the event loop: key
        # generation and signing are CPU work)
        from minik.pki.kubelet import local_serving_context

        tls = await asyncio.to_thread(local_serving_context, s.data_dir, name, (address,))
        agent = NodeAgent(self.client, AgentSettings(name, data_dir, tls, s.node_runtime, address=address,
                                                     kubelet=s.kubelet or KubeletSettings(),
                                                     control_plane=self.control_plane))
        self.agent = agent  # stop() undoes a start cancelled half-way
        await agent.start()
        assert agent.kubelet is not None
        self.local = agent.kubelet
        self.local_ready.set()

    async def stop(self) -> None:
        await stop_task(self._local_task)
        if self.agent is not None:
            await self.agent.stop()
            self.agent = None
        self.local = None
        for kubelet in reversed(self.kubelets):
            await kubelet.stop()
        self.kubelets.clear()


def factory(settings: NodeComponentSettings, client: Client) -> NodeComponent:
    return NodeComponent(settings, client)
