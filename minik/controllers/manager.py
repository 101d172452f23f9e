"""The controller manager: every controller in one component, sharing one set of informers, each with its own
event recorder; started after the informers have synced and stopped before them.

As kube-controller-manager with ``--use-service-account-credentials``, each controller may write with a client of
its own (``clients``: in `minik up`, the service account ``kube-system/NAME`` bound to the controller's
``system:controller:NAME`` ClusterRole), while the shared informers read with the manager's client
(``system:kube-controller-manager``, which may list and watch everything)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from minik.aio import start_task, stop_task
from minik.aio.clock import SYSTEM_CLOCK, Clock
from minik.api.errors import StatusError
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Recorder

if TYPE_CHECKING:
    from minik.events import EventRecorder

log = structlog.get_logger("minik.controllers")


@dataclass(frozen=True)
class ControllerSettings:
    workers: int = 4
    """Workers per controller: how many keys of one kind sync at once."""

    enabled: Sequence[str] | None = None
    """Controller names to run (None: all of CONTROLLERS)."""

    clock: Clock = SYSTEM_CLOCK
    """Where controllers read the time (tests pass a FakeClock)."""

    host: str | None = None
    """The host named as the source of the events the controllers record."""

    node_monitor_grace_period_seconds: float = 50.0
    """How long a node may go without renewing its Lease (or posting status) before it is Ready=Unknown."""

    node_monitor_period_seconds: float = 5.0
    """How often the node lifecycle controller checks every node's health."""

    node_eviction_rate: float = 0.1
    """Nodes per second (per zone) that may get NoExecute taints, and so have their pods evicted."""

    secondary_node_eviction_rate: float = 0.01
    """The same in a zone of more than 50 nodes where at least 55 % of them are unhealthy."""

    discovery_interval_seconds: float = 30.0
    """How often the resources the server serves are looked up again (custom resources come and go with their
    CRDs; a manager in the API server's process sees them at once through the shared registry)."""

    job_backoff_seconds: float = 10.0
    """The first delay before a Job replaces a failed pod; it doubles with each further failure."""

    job_max_backoff_seconds: float = 600.0
    """The longest delay before a Job replaces a failed pod."""

    event_ttl_seconds: float = 3600.0
    """How long an Event is kept after its last update."""

    terminated_pod_gc_threshold: int = 12_500
    """Terminated pods kept before the oldest are deleted (kube-controller-manager's flag; <= 0: never)."""

    pod_gc_period_seconds: float = 20.0
    """How often the pod garbage collector makes its pass (fixed at 20 s in Kubernetes; tests shorten it)."""

    pod_gc_quarantine_seconds: float = 40.0
    """How long a node must be missing before its pods count as orphans (40 s in Kubernetes)."""

    resource_quota_sync_seconds: float = 300.0
    """How often every ResourceQuota's status.used is recounted besides the changes that trigger it
    (kube-controller-manager's --resource-quota-sync-period)."""

    cluster_signing: tuple[Path, Path] | None = None
    """The CA certificate and key files the csrsigning controller signs kube-apiserver-client(-kubelet)
    certificates with (kube-controller-manager's --cluster-signing-cert-file and -key-file); `minik up` passes
    its own CA's. None: approved requests stay unsigned."""

    root_ca: bytes | None = None
    """The cluster CA's PEM, which the root CA publisher puts in every namespace as ``kube-root-ca.crt`` (`minik
    up` passes its own; `minik controllers` the kubeconfig's certificate-authority-data). None: nothing is
    published."""


ControllerFactory = Callable[[Client, InformerFactory, ControllerSettings, Recorder | None], Controller]


def _replicaset(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.replicaset import ReplicaSetController
    return ReplicaSetController(client, factory, s.workers, s.clock, r)


def _replicationcontroller(client: Client, factory: InformerFactory, s: ControllerSettings,
                           r: Recorder | None) -> Controller:
    from minik.controllers.replicaset import ReplicationControllerController
    return ReplicationControllerController(client, factory, s.workers, s.clock, r)


def _deployment(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.deployment import DeploymentController
    return DeploymentController(client, factory, s.workers, s.clock, r)


def _daemonset(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.daemonset import DaemonSetController
    return DaemonSetController(client, factory, s.workers, s.clock, r)


def _statefulset(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.statefulset import StatefulSetController
    return StatefulSetController(client, factory, s.workers, s.clock, r)


def _job(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.job import JobController
    return JobController(client, factory, s.workers, s.clock, r, backoff_seconds=s.job_backoff_seconds,
                         max_backoff_seconds=s.job_max_backoff_seconds)


def _cronjob(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.cronjob import CronJobController
    return CronJobController(client, factory, s.workers, s.clock, r)


def _ttl_after_finished(client: Client, factory: InformerFactory, s: ControllerSettings,
                        r: Recorder | None) -> Controller:
    from minik.controllers.ttlafterfinished import TTLAfterFinishedController
    return TTLAfterFinishedController(client, factory, s.workers, s.clock, r)


def _garbage_collector(client: Client, factory: InformerFactory, s: ControllerSettings,
                       r: Recorder | None) -> Controller:
    from minik.controllers.garbagecollector import GarbageCollector
    return GarbageCollector(client, factory, s.workers, s.clock, r)


def _namespace(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.namespace import NamespaceController
    return NamespaceController(client, factory, s.workers, s.clock, r)


def _node_lifecycle(client: Client, factory: InformerFactory, s: ControllerSettings,
                    r: Recorder | None) -> Controller:
    from minik.controllers.nodelifecycle import NodeLifecycleController
    return NodeLifecycleController(client, factory, s.workers, s.clock, r,
                                   grace_period_seconds=s.node_monitor_grace_period_seconds,
                                   monitor_period_seconds=s.node_monitor_period_seconds,
                                   eviction_rate=s.node_eviction_rate,
                                   secondary_eviction_rate=s.secondary_node_eviction_rate)


def _taint_eviction(client: Client, factory: InformerFactory, s: ControllerSettings,
                    r: Recorder | None) -> Controller:
    from minik.controllers.tainteviction import TaintEvictionController
    return TaintEvictionController(client, factory, s.workers, s.clock, r)


def _event_ttl(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.eventttl import EventTTLController
    return EventTTLController(client, factory, 1, s.clock, r, ttl_seconds=s.event_ttl_seconds)


def _pod_gc(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.podgc import PodGCController
    return PodGCController(client, factory, 1, s.clock, r, terminated_threshold=s.terminated_pod_gc_threshold,
                           period_seconds=s.pod_gc_period_seconds, quarantine_seconds=s.pod_gc_quarantine_seconds)


def _token_cleaner(client: Client, factory: InformerFactory, s: ControllerSettings,
                   r: Recorder | None) -> Controller:
    from minik.controllers.tokencleaner import TokenCleaner
    return TokenCleaner(client, factory, 1, s.clock, r)


def _serviceaccount(client: Client, factory: InformerFactory, s: ControllerSettings,
                    r: Recorder | None) -> Controller:
    from minik.controllers.serviceaccount import ServiceAccountController
    return ServiceAccountController(client, factory, 1, s.clock, r)


def _root_ca_cert_publisher(client: Client, factory: InformerFactory, s: ControllerSettings,
                            r: Recorder | None) -> Controller:
    from minik.controllers.rootcacertpublisher import RootCACertPublisher
    return RootCACertPublisher(client, factory, 1, s.clock, r, root_ca=s.root_ca)


def _clusterrole_aggregation(client: Client, factory: InformerFactory, s: ControllerSettings,
                             r: Recorder | None) -> Controller:
    from minik.controllers.clusterroleaggregation import ClusterRoleAggregationController
    return ClusterRoleAggregationController(client, factory, 1, s.clock, r)


def _endpoints(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.endpoints import EndpointsController
    return EndpointsController(client, factory, s.workers, s.clock, r)


def _resourcequota(client: Client, factory: InformerFactory, s: ControllerSettings,
                   r: Recorder | None) -> Controller:
    from minik.controllers.resourcequota import ResourceQuotaController
    return ResourceQuotaController(client, factory, s.workers, s.clock, r,
                                   resync_seconds=s.resource_quota_sync_seconds)


def _csrsigning(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.certificates import CSRSigningController
    return CSRSigningController(client, factory, 1, s.clock, r, signing=s.cluster_signing)


def _csrapproving(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.certificates import CSRApprovingController
    return CSRApprovingController(client, factory, 1, s.clock, r)


def _disruption(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.disruption import DisruptionController
    return DisruptionController(client, factory, s.workers, s.clock, r)
def _volume_binder(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.volumebinder import PersistentVolumeBinder
    return PersistentVolumeBinder(client, factory, max(s.workers, 8), s.clock, r)  # several writes a claim


def _pvc_protection(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.volumeprotection import PVCProtectionController
    return PVCProtectionController(client, factory, s.workers, s.clock, r)


def _pv_protection(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.volumeprotection import PVProtectionController
    return PVProtectionController(client, factory, s.workers, s.clock, r)


def _local_path(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.localpath import LocalPathProvisioner
    return LocalPathProvisioner(client, factory, max(s.workers, 8), s.clock, r)


def _ephemeral_volume(client: Client, factory: InformerFactory, s: ControllerSettings,
                      r: Recorder | None) -> Controller:
    from minik.controllers.ephemeralvolume import EphemeralVolumeController
    return EphemeralVolumeController(client, factory, s.workers, s.clock, r)


#: controller name -> factory (Kubernetes' names, as kube-controller-manager --controllers takes them)
CONTROLLERS: dict[str, ControllerFactory] = {
    "replicaset": _replicaset,
    "replicationcontroller": _replicationcontroller,
    "deployment": _deployment,
    "daemonset": _daemonset,
    "statefulset": _statefulset,
    "job": _job,
    "cronjob": _cronjob,
    "ttl-after-finished": _ttl_after_finished,
    "garbage-collector": _garbage_collector,
    "namespace": _namespace,
    "node-lifecycle": _node_lifecycle,
    "taint-eviction": _taint_eviction,
    "event-ttl": _event_ttl,
    "pod-garbage-collector": _pod_gc,
    "tokencleaner": _token_cleaner,
    "endpoints": _endpoints,
    "serviceaccount": _serviceaccount,
    "root-ca-cert-publisher": _root_ca_cert_publisher,
    "clusterrole-aggregation": _clusterrole_aggregation,
    "resourcequota": _resourcequota,
    "csrsigning": _csrsigning,
    "csrapproving": _csrapproving,
    "disruption": _disruption,
    # issue 21's storage (local-path-provisioner is minik's own, as k3s runs one beside its controllers)
    "persistentvolume-binder": _volume_binder,
    "pvc-protection": _pvc_protection,
    "pv-protection": _pv_protection,
    "local-path-provisioner": _local_path,
    "ephemeral-volume": _ephemeral_volume,
}


def _recorder(client: Client, name: str, host: str | None) -> EventRecorder:
    from minik.events import EventRecorder

    return EventRecorder(client, f"{name}-controller", host)  # the source Kubernetes' controllers name


#: gives the client a controller writes with, by the controller's name
ClientFor = Callable[[str], Client]


class ControllerManager:
    def __init__(self, client: Client, settings: ControllerSettings | None = None,
                 clients: ClientFor | None = None) -> None:
        """``client`` reads for the shared informers; ``clients`` gives each controller the client it writes with
        (default: ``client`` for all)."""
        self.client = client
        self.settings = settings or ControllerSettings()
        self.factory = InformerFactory(client)
        names = self.settings.enabled if self.settings.enabled is not None else list(CONTROLLERS)
        unknown = sorted(set(names) - set(CONTROLLERS))
        if unknown:
            raise ValueError(f"unknown controllers {unknown}: choose from {', '.join(CONTROLLERS)}")
        writers = {name: clients(name) if clients is not None else client for name in names}
        self.writers = writers
        self._discovery: asyncio.Task[None] | None = None
        #: one recorder per controller, so each event names its controller as its source
        self.recorders = {name: _recorder(writers[name], name, self.settings.host) for name in names}
        self.controllers: dict[str, Controller] = {
            name: CONTROLLERS[name](writers[name], self.factory, self.settings, self.recorders[name])
            for name in names}

    def __getitem__(self, name: str) -> Controller:
        return self.controllers[name]

    async def start(self) -> None:
        for recorder in self.recorders.values():
            await recorder.start()
        await self._discover()
        self._discovery = start_task(self._discover_periodically(), name="controller manager discovery")
        await self.factory.start()
        for controller in self.controllers.values():
            await controller.start()
        log.info("controllers started", controllers=list(self.controllers))

    async def _discover(self) -> None:
        """Look up the served resources with every client whose registry is its own."""
        for client in {id(c): c for c in (self.client, *self.writers.values())}.values():
            try:
                await client.discover()
            except StatusError as exc:
                log.warning("discovery failed", error=exc.message)

    async def _discover_periodically(self) -> None:
        while True:
            await self.settings.clock.sleep(self.settings.discovery_interval_seconds)
            await self._discover()

    async def stop(self) -> None:
        await stop_task(self._discovery)
        self._discovery = None
        for controller in reversed(list(self.controllers.values())):
            await controller.stop()
        await self.factory.stop()
        for recorder in self.recorders.values():
            await recorder.stop()
