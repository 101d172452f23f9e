"""`minik up`: the store, the API server and (as they land) the other components, started and stopped in order.

Start-up: open the store, bootstrap the API (system namespaces), listen. Shut-down, in reverse: stop accepting
connections, end the watches, let in-flight requests finish, then close the store so every acknowledged write
is on disk.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import ipaddress
import ssl
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson
import structlog

from minik.api.resources import REGISTRY
from minik.api.tokens import NODE_USER_PREFIX, NODES
from minik.apiserver.admission import ObjectReader, default_plugins
from minik.apiserver.admission.certificates import CertificateApproval, CertificateSigning, ReservedNodeNames
from minik.apiserver.admission.dynamic import DynamicAdmission
from minik.apiserver.auth import authz
from minik.apiserver.auth.authn import StaticTokens, TokenAuthenticator
from minik.apiserver.auth.authz import ClusterAuthorizer
from minik.apiserver.auth.credentials import (
    ADMIN,
    APISERVER,
    ClusterCredentials,
    client_ssl_context,
    mint,
    serving_names,
)
from minik.apiserver.auth.impersonation import ImpersonatingAuthenticator
from minik.apiserver.auth.rbac import policy
from minik.apiserver.auth.rbac.escalation import RbacEscalation
from minik.apiserver.auth.rbac.reconcile import reconcile
from minik.apiserver.auth.reviews import Reviews
from minik.apiserver.auth.serviceaccounts import ServiceAccountTokens, TokenIssuer, service_account_user
from minik.apiserver.auth.tokenrequest import TokenRequests
from minik.apiserver.connection import HttpListener
from minik.apiserver.http import build_server
from minik.apiserver.limits import Limits
from minik.apiserver.request import ApiRequest, ApiResponse, User
from minik.apiserver.server import ApiServer, ApiSettings
from minik.client import DEFAULT_USER_AGENT, Client, user_agent
from minik.controlplane import ControlPlane, StaticPod, proxy_pods
from minik.inprocess import in_process_client
from minik.kubeconfig import Config, for_cluster
from minik.pki.files import private_dir, restrict
from minik.store import Store, StoreSettings

if TYPE_CHECKING:
    from minik.controllers.manager import ControllerSettings
    from minik.kubelet.kubelet import KubeletSettings
    from minik.proxy import ProxySettings

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


#: gives an in-process client that acts as a user (through authentication, authorization and admission)
ClientAs = Callable[[User], Client]

#: the program each component's writes name as their User-Agent, and so as their field manager: Kubernetes' own
COMPONENT_AGENTS = {"scheduler": "kube-scheduler", "controllers": "kube-controller-manager", "node": "kubelet",
                    "proxy": "kube-proxy"}

#: builds a component from the cluster's settings, its in-process client, a way to get clients for other
#: identities (the controllers' service accounts) and the control plane the local node shows as static pods; kept
#: as functions that import their component lazily, so a disabled component costs nothing at start-up
ComponentFactory = Callable[["ClusterSettings", Client, ClientAs, ControlPlane], Component]


def _scheduler(settings: ClusterSettings, client: Client, client_as: ClientAs, plane: ControlPlane) -> Component:
    from minik.scheduler import Scheduler

    return Scheduler(client)


def controller_user(controller: str) -> User:
    """The identity a controller of `minik up` writes as: its service account in kube-system, as
    kube-controller-manager's controllers with --use-service-account-credentials."""
    account = policy.controller_account(controller)
    if account is None:
        return User(authz.CONTROLLER_MANAGER)
    return service_account_user(*account)


def _controllers(settings: ClusterSettings, client: Client, client_as: ClientAs, plane: ControlPlane) -> Component:
    from minik.controllers.manager import ControllerManager

    return ControllerManager(client, settings.controllers, clients=lambda name: client_as(controller_user(name)))


def _node(settings: ClusterSettings, client: Client, client_as: ClientAs, plane: ControlPlane) -> Component:
    from minik.kubelet.component import NodeComponent

    return NodeComponent(settings, client, plane)


#: Python's GIL switch interval while a cluster runs. A worker thread (the store's reader for lists and replays, or
#: its writer when it is not a process of its own) needs the GIL for a moment to hand over each result; at the
#: default 5 ms a busy event loop may keep it that long, and whatever waits for that result waits with it (with
#: the writer thread, on the 2-vCPU test machines: commit latency p50 3.1 -> 2.7 ms and about 5% more pod
#: creates/s, in noisy measurements)
GIL_SWITCH_INTERVAL_SECONDS = 0.001

#: connections the API server's listening socket queues before they are accepted (aiohttp's default is 128; a
#: burst of simulated kubelets or benchmark clients connects at once)
LISTEN_BACKLOG = 1024


def _proxy(settings: ClusterSettings, client: Client, client_as: ClientAs, plane: ControlPlane) -> Component:
    from minik.proxy import NodeProxy, ProxySettings

    return NodeProxy(client, settings.proxy or ProxySettings(node_name=settings.local_node_name()))


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

    store: StoreSettings | None = None
    """The store's own settings, for tests and benchmarks that tune it (compaction window, buffers...) [default: a
    store at DATA_DIR/state.db with ``synchronous``]. Given, it is taken whole: its path is where the cluster keeps
    its state, and its durability must be ``synchronous`` (a ValueError otherwise)."""

    controllers: ControllerSettings | None = None
    """The controller manager's settings (for tests and benchmarks: workers, a fake clock, which controllers...)
    [default: ControllerSettings()]. Without a ``root_ca``, the controllers publish the cluster's own CA."""

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

    kubelet: KubeletSettings | None = None
    """The local node's kubelet settings (for tests: back-off, resync...) [default: KubeletSettings()]."""

    fake_kubelet: KubeletSettings | None = None
    """The settings of the one kubelet the simulated nodes share [default: minik.kubelet.component.FAKE_KUBELET:
    more workers, no resync, no events]."""

    plain_http: bool = False
    """Serve plain HTTP instead of HTTPS (`minik up --plain-http`), only on a loopback address: for benchmarks
    measured against plain-HTTP anchors (etcd). Every request is still authenticated and authorized as over HTTPS
    (the kubeconfig carries the admin token; a request without a token gets 401): nothing is trusted for the
    address it comes from, since the node proxy and pods reach the API from loopback too. (kubectl, like every
    client-go program, sends a kubeconfig's credentials only over TLS, so it is anonymous here.) The CA is made
    all the same: the kubelets' endpoint is TLS only."""

    tls_sans: tuple[str, ...] = ()
    """Extra names and addresses for the serving certificate (`minik up --tls-san`), besides this host's own."""

    limits: Limits = field(default_factory=Limits)
    """The API server's limits: concurrent requests per lane, timeouts (for tests and benchmarks)."""

    proxy: ProxySettings | None = None
    """This machine's proxy settings (for tests: DNS upstreams, iptables...) [default: ProxySettings for the local
    node]. Given, its ``node_name`` must be the local node's (a ValueError otherwise)."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.disabled) - set(COMPONENTS))
        if unknown:
            raise ValueError(f"unknown components {unknown}: choose from {', '.join(COMPONENTS)}")
        network = ipaddress.ip_network(self.service_cidr, strict=False)  # ValueError for a bad range
        if network.num_addresses < 8:
            raise ValueError(f"the service range {self.service_cidr} is too small (at least 8 addresses)")
        if self.plain_http and not is_loopback(self.bind):
            raise ValueError(f"plain HTTP is only served on a loopback address, not on {self.bind}: drop "
                             "--plain-http to serve HTTPS")
        if self.store is not None and self.store.synchronous != self.synchronous:
            raise ValueError(f"the store's synchronous ({self.store.synchronous}) is not the cluster's "
                             f"({self.synchronous})")
        if self.proxy is not None and self.proxy.node_name != self.local_node_name():
            raise ValueError(f"the proxy serves node {self.proxy.node_name}, not the local node "
                             f"{self.local_node_name()}")

    def store_settings(self) -> StoreSettings:
        """What the store opens with: ``store`` when given, else the defaults at DATA_DIR/state.db."""
        return self.store or StoreSettings(path=self.data_dir / "state.db", synchronous=self.synchronous)

    @property
    def db_path(self) -> Path:
        """The SQLite file the cluster keeps its state in."""
        return self.store_settings().path

    def local_node_name(self) -> str:
        """The name of this machine's node: ``node_name``, or the host name."""
        from minik.kubelet.component import default_node_name

        return self.node_name or default_node_name()


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


#: the identity each in-process component runs as (see minik.apiserver.auth.authz for what each may do; the controllers
#: write as their own service accounts, see ``controller_user``); a component not listed runs as
#: ``system:minik:component:NAME`` with every right, until its own identity is decided
COMPONENT_USERS: dict[str, User] = {
    "scheduler": User(authz.SCHEDULER),
    "controllers": User(authz.CONTROLLER_MANAGER),
    "proxy": User(authz.KUBE_PROXY),
}


def _kubelet_client_tls(data_dir: Path) -> Callable[[], ssl.SSLContext]:
    """What the API server calls kubelets with (made on the first pods/log or pods/exec, from DATA_DIR/pki)."""

    def make() -> ssl.SSLContext:
        from minik.pki.kubelet import apiserver_client_context

        return apiserver_client_context(data_dir)

    return make


@dataclass(frozen=True)
class Step:
    """One start-up step done: which part (``store``, ``apiserver`` or a component's name), a detail for people
    (the store's path and revision, the URL), and the line that says it."""

    part: str
    detail: str
    line: str

    def __str__(self) -> str:
        return self.line


def _quiet(_step: Step) -> None:
    return None


class Cluster:
    def __init__(self, settings: ClusterSettings, progress: Callable[[Step], None] = _quiet) -> None:
        """``progress`` hears of each start-up step (the store, the listener, each component) as it is done; the
        log has the same steps for machines."""
        self.settings = settings
        self.progress = progress
        self.store: Store | None = None
        self.api: ApiServer | None = None
        #: Node and RBAC authorization, their indexes following the store
        self.authorizer: ClusterAuthorizer | None = None
        #: admission webhooks and ValidatingAdmissionPolicies (their configurations followed in the store)
        self.dynamic_admission: DynamicAdmission | None = None
        #: signs and checks service account tokens
        self.issuer: TokenIssuer | None = None
        self._listener: HttpListener | None = None
        self._server: asyncio.AbstractServer | None = None
        #: the API server's own in-process client (identity system:apiserver, an admin)
        self.client: Client | None = None
        self.tokens = StaticTokens()
        #: the CA, serving certificate and admin token (set once started)
        self.credentials: ClusterCredentials | None = None
        self._clients: list[Client] = []
        self.components: dict[str, Component] = {}
        self.port: int = settings.port
        self.started_seconds: float = 0.0
        #: the components running in this process, which the local node shows as its static pods
        self.control_plane = ControlPlane()

    @property
    def host(self) -> str:
        """The address this machine reaches the API server at."""
        return self.settings.bind if self.settings.bind not in ("0.0.0.0", "::") else "127.0.0.1"

    @property
    def url(self) -> str:
        return f"{'http' if self.settings.plain_http else 'https'}://{self.host}:{self.port}"

    @property
    def admin_token(self) -> str | None:
        return self.credentials.admin_token if self.credentials is not None else None

    def client_ssl_context(self) -> ssl.SSLContext | None:
        """What a client of this cluster trusts: its CA only (None when it serves plain HTTP)."""
        assert self.credentials is not None, "the cluster is not started"
        return None if self.settings.plain_http else client_ssl_context(self.credentials.ca_pem)

    def kubeconfig(self) -> Config:
        """The admin's kubeconfig, as `minik up` writes it (DATA_DIR/kubeconfig): this cluster's URL, its CA
        (over HTTPS) and the admin token."""
        assert self.credentials is not None, "the cluster is not started"
        return for_cluster(self.settings.name, self.url, token=self.credentials.admin_token,
                           ca_data=None if self.settings.plain_http else self.credentials.ca_pem)

    def admin_client(self, **options: Any) -> Client:
        """A client over the network as the admin, as one with the kubeconfig reaches this cluster (``options``:
        ``Client.http``'s, e.g. timeout_seconds). Closed by the caller."""
        return Client.http(self.url, self.admin_token, ssl=self.client_ssl_context(), **options)

    def in_process_client(self, user: User = ADMIN, agent: str = DEFAULT_USER_AGENT) -> Client:
        """A client that reaches this cluster's API in-process as ``user`` (through authentication with a token
        minted for it, authorization and admission, as any client), with ``agent`` as its User-Agent. Closed by
        the caller, or at stop."""
        assert self.api is not None, "the cluster is not started"
        client = in_process_client(self.api, mint(self.tokens, user), agent)
        self._clients.append(client)
        return client

    def component_user(self, name: str) -> User:
        """The identity of an in-process component: the local node is ``system:node:NAME`` (the node simulator
        when there are fake nodes, since one kubelet then writes every simulated node)."""
        if name == "node":
            if self.settings.fake_nodes:
                return User(authz.NODE_SIMULATOR)
            return User(NODE_USER_PREFIX + self.settings.local_node_name(), (NODES,))
        return COMPONENT_USERS.get(name) or User(f"system:minik:component:{name}", (authz.MASTERS,))

    def own_node_names(self) -> frozenset[str]:
        """The nodes this cluster runs itself (the local node, simulated ones): names no join may take."""
        if "node" in self.settings.disabled:
            return frozenset()  # and the kubelet's modules are not imported
        from minik.kubelet.component import own_node_names

        return own_node_names(self.settings)

    async def start(self) -> None:
        from minik import logtap

        logtap.install()  # each component's log lines, for its mirror pod
        source = logtap.SOURCE.set("apiserver")  # what the API server's own tasks log is its
        try:
            await self._start()
        finally:
            logtap.SOURCE.reset(source)

    async def _start(self) -> None:
        began = time.perf_counter()
        s = self.settings
        private_dir(s.data_dir)  # 0700: everything in it is the cluster's alone
        sys.setswitchinterval(min(sys.getswitchinterval(), GIL_SWITCH_INTERVAL_SECONDS))
        names = serving_names(s.bind, str(next(ipaddress.ip_network(s.service_cidr, strict=False).hosts())),
                              s.tls_sans)
        # the CA and serving certificate are made (or read) in a worker thread while the store opens: their file
        # writes and fsyncs overlap the store's, and the event loop stays free
        credentials: asyncio.Future[ClusterCredentials] | None = asyncio.ensure_future(
            asyncio.to_thread(ClusterCredentials.load_or_create, s.data_dir, names, self.tokens))
        try:
            self.store = await Store.open(s.store_settings())
        except BaseException:
            if credentials is not None:
                await asyncio.wait([credentials])  # a thread cannot be cancelled: let it finish
            raise
        for suffix in ("", "-wal", "-shm"):  # the store holds the bootstrap tokens: owner only
            restrict(s.db_path.with_name(s.db_path.name + suffix))
        self.progress(Step("store", f"{s.db_path} at revision {self.store.revision}",
                           f"store {s.db_path} open at revision {self.store.revision}"))
        try:
            # the cluster's own registry: the built-in kinds, and those its CustomResourceDefinitions add
            registry = REGISTRY.copy()
            reader = ObjectReader(self.store, registry)
            kubelet_tls = _kubelet_client_tls(s.data_dir)
            self.authorizer = ClusterAuthorizer(self.store)
            self.authorizer.start()
            self.issuer = TokenIssuer(s.data_dir / "pki")
            self.dynamic_admission = DynamicAdmission(self.store, reader, registry, self.authorizer.authorize)
            self.dynamic_admission.start()
            plugins = default_plugins(reader, [
                RbacEscalation(self.authorizer.rbac.index, self.authorizer),
                CertificateApproval(self.authorizer), CertificateSigning(self.authorizer),
                ReservedNodeNames(self.own_node_names()), *self.dynamic_admission.plugins()])
            tokens = TokenAuthenticator(reader, self.tokens, ServiceAccountTokens(self.issuer, reader))
            self.api = ApiServer(self.store, registry, ApiSettings(address=f"{s.bind}:{s.port}",
                                                                  service_cidr=s.service_cidr,
                                                                  limits=s.limits,
                                                                  kubelet_tls=kubelet_tls),
                                 authenticator=ImpersonatingAuthenticator(tokens, self.authorizer),
                                 authorizer=self.authorizer, admission_plugins=plugins)
            self.api.route("", "serviceaccounts", "token", "create", TokenRequests(self.issuer, reader).handle)
            Reviews(tokens, self.authorizer, self.authorizer.rbac, self.authorizer.node).route(self.api)
            self.api.start()  # every stored CRD's resources are served from here on
            await self.api.bootstrap()
            await reconcile(registry, self.api.rest, APISERVER)
            if credentials is not None:
                self.credentials = await credentials
                credentials = None
            assert self.credentials is not None
            # llhttp-parsed HTTP/1.1 for every request; aiohttp's server for the connections that upgrade (exec)
            self._listener = HttpListener(self.api, fallback=build_server(self.api))
            ssl_context = None if s.plain_http else self.credentials.server_ssl_context()
            self._server = await asyncio.get_running_loop().create_server(
                self._listener, s.bind, s.port, reuse_address=True, ssl=ssl_context, backlog=LISTEN_BACKLOG)
            self.port = int(self._server.sockets[0].getsockname()[1])
            await self.api.publish_master_service(self.host, self.port)
            self._serve_issuer_discovery(self.api, self.issuer)
            self.progress(Step("apiserver", self.url, f"API server listening on {self.url}"))
            api = self.api
            self.control_plane.add(StaticPod("apiserver", ready=lambda: api.ready and self._server is not None))
            self.client = self.in_process_client(APISERVER, user_agent("kube-apiserver"))
            if not s.plain_http:  # a joining node pins the CA it finds over TLS: nothing to pin over plain HTTP
                from minik import joinserver

                creds = self.credentials
                self.api.extensions[joinserver.PATH] = joinserver.JoinServer(self.client, lambda: creds.ca,
                                                                             self.own_node_names()).handle
                await joinserver.publish_cluster_info(self.client, self.url, creds.ca_pem)
            await self._start_components()
            self.credentials.ensure_client_certificates()  # for the kubelets and admins who reach them
        except BaseException:
            if credentials is not None:
                await asyncio.wait([credentials])
            await self.stop()
            raise
        self.started_seconds = time.perf_counter() - began
        log.info("cluster ready", url=self.url, seconds=round(self.started_seconds, 3), data_dir=str(s.data_dir))

    def _serve_issuer_discovery(self, api: ApiServer, issuer: TokenIssuer) -> None:
        """/.well-known/openid-configuration and /openid/v1/jwks: what an outside verifier of service account
        tokens reads (readable by service accounts, as Kubernetes' system:service-account-issuer-discovery)."""
        async def configuration(request: ApiRequest, user: User) -> ApiResponse:
            return ApiResponse.json(issuer.discovery(self.url))

        async def keys(request: ApiRequest, user: User) -> ApiResponse:
            return ApiResponse(200, orjson.dumps((await issuer.ready()).jwks()), "application/jwk-set+json")

        api.extensions["/.well-known/openid-configuration"] = configuration
        api.extensions["/openid/v1/jwks"] = keys

    def _component_settings(self) -> ClusterSettings:
        """The settings components are built from: the cluster's, and what only a started cluster knows (its CA,
        which the root CA publisher puts in every namespace, and whose key the certificate signer signs with)."""
        if self.credentials is None or "controllers" in self.settings.disabled:
            return self.settings
        from minik.controllers.manager import ControllerSettings

        controllers = self.settings.controllers or ControllerSettings()
        pki = self.credentials.pki_dir
        return dataclasses.replace(self.settings, controllers=dataclasses.replace(
            controllers, root_ca=controllers.root_ca if controllers.root_ca is not None else self.credentials.ca_pem,
            cluster_signing=controllers.cluster_signing or (pki / "ca.crt", pki / "ca.key")))

    async def _start_components(self) -> None:
        """Start the enabled components in FACTORIES order, each with the in-process client; the lines logged by
        what a component starts are its own (``minik.logtap.SOURCE``)."""
        from minik.logtap import SOURCE

        assert self.api is not None
        settings = self._component_settings()
        for name, factory in FACTORIES.items():
            if name in self.settings.disabled:
                continue
            agent = user_agent(COMPONENT_AGENTS.get(name, name))
            client_as: ClientAs = functools.partial(self.in_process_client, agent=agent)
            component = factory(settings, self.in_process_client(self.component_user(name), agent), client_as,
                                self.control_plane)
            source = SOURCE.set(name)
            try:
                await component.start()
            except BaseException:  # a start that failed or was cancelled half-way: undo what it began
                await self._stop_component(name, component)
                raise
            finally:
                SOURCE.reset(source)
            self.components[name] = component
            self._show(name, component)
            log.info("component started", component=name)
            self.progress(Step(name, "", f"{name} started"))

    def _show(self, name: str, component: Component) -> None:
        """Register a started component as a static pod of the local node."""
        if name in ("scheduler", "controllers"):
            self.control_plane.add(StaticPod(name, ready=lambda: name in self.components))
        elif name == "proxy":
            from minik.proxy import NodeProxy

            if isinstance(component, NodeProxy):
                for pod in proxy_pods(component):
                    self.control_plane.add(pod)

    async def _stop_components(self) -> None:
        """Stop the components in reverse start order, while the API they talk to is still up."""
        for name, component in reversed(list(self.components.items())):
            await self._stop_component(name, component)
            for shown in ("dns", "proxy") if name == "proxy" else (name,):
                self.control_plane.remove(shown)
        self.components.clear()
        for client in self._clients:
            await client.close()
        self._clients.clear()
        self.client = None

    @staticmethod
    async def _stop_component(name: str, component: Component) -> None:
        try:
            await component.stop()
        except Exception:  # noqa: BLE001 - one component's failure must not keep the others running
            log.exception("component failed to stop", component=name)

    async def stop(self) -> None:
        await self._stop_components()
        if self._server is not None and self._listener is not None:
            self._server.close()  # stop accepting,
            if self.store is not None:  # end the watches,
                self.store.close_watches()
            await self._listener.shutdown(self.settings.shutdown_timeout_seconds)  # let the requests in flight finish
            await self._server.wait_closed()
            self._server = self._listener = None
        if self.dynamic_admission is not None:
            await self.dynamic_admission.stop()
            self.dynamic_admission = None
        if self.api is not None:
            await self.api.stop()
        if self.authorizer is not None:
            await self.authorizer.stop()
            self.authorizer = None
        if self.store is not None:
            await self.store.close()
            self.store = None
        log.info("cluster stopped")

    async def __aenter__(self) -> Cluster:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
