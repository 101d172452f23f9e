"""`minik up`: the store, the API server and (as they land) the other components, started and stopped in order.

Start-up: open the store, bootstrap the API (system namespaces), listen. Shut-down, in reverse: stop accepting
connections, end the watches, let in-flight requests finish, then close the store so every acknowledged write
is on disk.
"""

from __future__ import annotations

import ipaddress
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import structlog
from aiohttp import web

from minik.api.resources import REGISTRY
from minik.apiserver.admission import LoopbackAuthenticator
from minik.apiserver.http import build_server
from minik.apiserver.server import ApiServer, ApiSettings
from minik.apiserver.tokenauth import JOINED_NODE, TokenAuthenticator
from minik.client import Client
from minik.jointoken import ensure_token
from minik.store import Store, StoreSettings

log = structlog.get_logger("minik.cluster")

#: the components `minik up` will run besides the store and the API server; each arrives with its own issue, and
#: any of them can be left out (``--disable``) to run it elsewhere or not at all
COMPONENTS = ("scheduler", "controllers", "node", "proxy")


class Component(Protocol):
    """A part of the cluster that runs beside the API server and talks to it only through its client."""

    async def start(self) -> None:
        """Start the component's tasks; return once it is running (not when it is done)."""

    async def stop(self) -> None:
        """Stop every task the component started and release what it holds."""


#: builds a component from the cluster's settings and an in-process client; kept as functions that import their
#: component lazily, so a disabled component costs nothing at start-up
ComponentFactory = Callable[["ClusterSettings", Client], Component]


def _scheduler(settings: "ClusterSettings", client: Client) -> Component:
    from minik.scheduler import Scheduler

    return Scheduler(client)


def _controllers(settings: "ClusterSettings", client: Client) -> Component:
    from minik.controllers.manager import ControllerManager, ControllerSettings

    return ControllerManager(client, ControllerSettings(**settings.controllers))  # type: ignore[arg-type]


def _node(settings: "ClusterSettings", client: Client) -> Component:
    from minik.kubelet.component import NodeComponent

    return NodeComponent(settings, client)


#: Python's GIL switch interval while a cluster runs. The store's writer thread needs the GIL for a moment to hand
#: over each commit; at the default 5 ms a busy event loop may keep it that long, and every write waiting for that
#: commit waits with it (on the 2-vCPU test machines: commit latency p50 3.1 -> 2.7 ms and about 5% more pod
#: creates/s, in noisy measurements)
GIL_SWITCH_INTERVAL_SECONDS = 0.001


def _proxy(settings: "ClusterSettings", client: Client) -> Component:
    from minik.kubelet.component import default_node_name
    from minik.proxy import NodeProxy, ProxySettings

    name = settings.node_name or default_node_name()
    return NodeProxy(client, ProxySettings(node_name=name, **settings.proxy))  # type: ignore[arg-type]


#: component name -> factory, in start order (stopped in reverse); each component's issue adds its entry. The proxy
#: starts before the node, so that the cluster DNS is published before the first pods' sandboxes are made.
FACTORIES: dict[str, ComponentFactory] = {"scheduler": _scheduler, "controllers": _controllers, "proxy": _proxy,
                                          "node": _node}


@dataclass(frozen=True)
class ClusterSettings:
    data_dir: Path
    """Where the cluster keeps its state (the SQLite file) and its kubeconfig."""

    name: str = "minik"
    """The cluster's name: the kubeconfig context and the default data directory are named after it."""

    bind: str = "127.0.0.1"
    """The address the API server listens on."""

    port: int = 6443
    """The API server's port; 0 picks a free one."""

    synchronous: str = "FULL"
    """SQLite durability: FULL survives power loss, NORMAL only a crash of the process."""

    shutdown_timeout_seconds: float = 10.0
    """How long in-flight requests may take to finish at shutdown."""

    store: dict[str, object] = field(default_factory=dict)
    """Extra StoreSettings fields (for tests and benchmarks: compaction window, buffers...)."""

    controllers: dict[str, object] = field(default_factory=dict)
    """Extra ControllerSettings fields (for tests and benchmarks: workers, a fake clock, which controllers...)."""

    service_cidr: str = "10.96.0.0/12"
    """The range Service cluster IPs come from (the `kubernetes` Service gets its first address)."""

    disabled: frozenset[str] = frozenset()
    """Components (names from COMPONENTS) not to start. Recorded now; honoured as the components land."""

    local_node: bool = True
    """Whether the node component runs a node for this machine (`minik up --no-node` to skip)."""

    node_name: str | None = None
    """The local node's name [default: the host name]."""

    node_runtime: str = "auto"
    """The local node's runtime: docker, process, fake, or auto (docker when an engine answers, else process)."""

    fake_nodes: int = 0
    """How many simulated nodes (fake runtime) the node component adds, for scheduling and scale work."""

    fake_start_delay_seconds: float = 0.1
    """How long a fake node's containers take to start running."""

    kubelet: dict[str, object] = field(default_factory=dict)
    """Extra KubeletSettings fields for the local node (for tests: back-off, resync...)."""

    proxy: dict[str, object] = field(default_factory=dict)
    """Extra ProxySettings fields for this machine's proxy (for tests: DNS upstreams, iptables...)."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.disabled) - set(COMPONENTS))
        if unknown:
            raise ValueError(f"unknown components {unknown}: choose from {', '.join(COMPONENTS)}")
        network = ipaddress.ip_network(self.service_cidr, strict=False)  # ValueError for a bad range
        if network.num_addresses < 8:
            raise ValueError(f"the service range {self.service_cidr} is too small (at least 8 addresses)")

    @property
    def db_path(self) -> Path:
        return self.data_dir / "state.db"


def _quiet(_line: str) -> None:
    return None


class Cluster:
    def __init__(self, settings: ClusterSettings, progress: Callable[[str], None] = _quiet) -> None:
        """``progress`` hears one line for people per start-up step (the store, the listener, each component);
        the log has the same steps for machines."""
        self.settings = settings
        self.progress = progress
        self.store: Store | None = None
        self.api: ApiServer | None = None
        self._runner: web.ServerRunner | None = None
        self.client: Client | None = None
        self.components: dict[str, Component] = {}
        self.port: int = settings.port
        self.started_seconds: float = 0.0
        self.join_token: str = ""

    @property
    def host(self) -> str:
        """The address this machine reaches the API server at."""
        return self.settings.bind if self.settings.bind not in ("0.0.0.0", "::") else "127.0.0.1"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        began = time.perf_counter()
        s = self.settings
        s.data_dir.mkdir(parents=True, exist_ok=True)
        sys.setswitchinterval(min(sys.getswitchinterval(), GIL_SWITCH_INTERVAL_SECONDS))
        self.store = await Store.open(StoreSettings(path=s.db_path, synchronous=s.synchronous, **s.store))  # type: ignore[arg-type]
        self.progress(f"store {s.db_path} open at revision {self.store.revision}")
        try:
            self.join_token = ensure_token(s.data_dir)
            self.api = ApiServer(self.store, REGISTRY, ApiSettings(address=f"{s.bind}:{s.port}",
                                                                  service_cidr=s.service_cidr,
                                                                  kubelet_token=self.join_token),
                                 authenticator=TokenAuthenticator({self.join_token: JOINED_NODE},
                                                                  LoopbackAuthenticator()))
            await self.api.bootstrap()
            self._runner = web.ServerRunner(build_server(self.api), shutdown_timeout=s.shutdown_timeout_seconds)
            await self._runner.setup()
            site = web.TCPSite(self._runner, s.bind, s.port, reuse_address=True)
            await site.start()
            sockets = self._runner.addresses
            if sockets:
                self.port = int(sockets[0][1])
            await self.api.publish_master_service(self.host, self.port)
            self.progress(f"API server listening on {self.url}")
            await self._start_components()
        except BaseException:
            await self.stop()
            raise
        self.started_seconds = time.perf_counter() - began
        log.info("cluster ready", url=self.url, seconds=round(self.started_seconds, 3), data_dir=str(s.data_dir))

    async def _start_components(self) -> None:
        """Start the enabled components in FACTORIES order, each with the in-process client."""
        assert self.api is not None
        self.client = Client.in_process(self.api)
        for name, factory in FACTORIES.items():
            if name in self.settings.disabled:
                continue
            component = factory(self.settings, self.client)
            await component.start()
            self.components[name] = component
            log.info("component started", component=name)
            self.progress(f"{name} started")

    async def _stop_components(self) -> None:
        """Stop the components in reverse start order, while the API they talk to is still up."""
        for name, component in reversed(list(self.components.items())):
            try:
                await component.stop()
            except Exception:  # noqa: BLE001 - one component's failure must not keep the others running
                log.exception("component failed to stop", component=name)
        self.components.clear()
        if self.client is not None:
            await self.client.close()
            self.client = None

    async def stop(self) -> None:
        await self._stop_components()
        if self._runner is not None:
            for site in list(self._runner.sites):  # stop accepting,
                await site.stop()
            if self.store is not None:  # end the watches,
                self.store.close_watches()
            await self._runner.cleanup()  # let the requests in flight finish
            self._runner = None
        if self.store is not None:
            await self.store.close()
            self.store = None
        log.info("cluster stopped")

    async def __aenter__(self) -> "Cluster":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
