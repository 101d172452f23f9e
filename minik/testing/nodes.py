"""Simulated nodes for integration tests: each node its own kubelet on the fake runtime, so a test can add a node,
stop one (its heartbeats stop, its pods stay as they were) and bring it back (it registers again, Ready)."""

from __future__ import annotations

from dataclasses import dataclass

from minik.client import Client
from minik.cluster import Cluster
from minik.kubelet.component import FAKE_CAPACITY
from minik.kubelet.kubelet import Kubelet, KubeletSettings
from minik.kubelet.node import NodeConfig, well_known_labels
from minik.kubelet.runtimes.fake import FakeRuntime


class SimulatedNodes:
    def __init__(self, client: Client, *, lease_renew_seconds: float = 0.2, start_delay_seconds: float = 0.05) -> None:
        self.client = client
        self.settings = KubeletSettings(workers=4, resync_seconds=0.0, lease_renew_seconds=lease_renew_seconds)
        self.start_delay_seconds = start_delay_seconds
        self.configs: dict[str, NodeConfig] = {}
        self.kubelets: dict[str, Kubelet] = {}

    async def add(self, name: str, labels: dict[str, str] | None = None) -> None:
        """Register a node and start its kubelet (returns once the Node object exists)."""
        index = len(self.configs) + 1
        config = NodeConfig(name, f"10.200.0.{index}", dict(FAKE_CAPACITY), {**well_known_labels(name),
                                                                              **(labels or {})})
        self.configs[name] = config
        await self._start(name)

    async def _start(self, name: str) -> None:
        kubelet = Kubelet(self.client, FakeRuntime(self.start_delay_seconds), [self.configs[name]], self.settings)
        await kubelet.start()
        self.kubelets[name] = kubelet
        await kubelet.wait_registered(30)

    async def stop(self, name: str) -> None:
        """The node goes silent: no more leases or status, and its pods are left as the API last saw them."""
        kubelet = self.kubelets.pop(name)
        await kubelet.stop()

    async def restart(self, name: str) -> None:
        """The node comes back: it registers again (Ready) and renews its lease."""
        await self._start(name)

    async def close(self) -> None:
        for name in list(self.kubelets):
            await self.stop(name)


@dataclass
class SimulatedCluster:
    cluster: Cluster
    api: Client
    nodes: SimulatedNodes
