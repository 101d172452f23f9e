"""The kubelet: an informer on the pods bound to its node(s) (fieldSelector spec.nodeName=NAME) feeding a work
queue keyed by pod uid, so one worker at a time syncs each pod; the runtime's own changes (a container exiting)
enqueue the pod too. One Kubelet may serve many nodes on one runtime (the fake nodes of a scale test): then it
watches every bound pod once and keeps those of its nodes, instead of one watch per node.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from minik.aio import start_task, stop_task
from minik.client import Client
from minik.controlplane import ControlPlane
from minik.events import EventRecorder
from minik.informers import Informer
from minik.kubelet.mirror import MirrorPods, is_mirror
from minik.kubelet.node import NodeConfig, NodeKeeper
from minik.kubelet.podworker import ConfigBuilder, PodWorkers, WorkerSettings
from minik.kubelet.runtimes.base import Runtime
from minik.workqueue import ShutDown, WorkQueue

log = structlog.get_logger("minik.kubelet")

Obj = dict[str, Any]


@dataclass(frozen=True)
class KubeletSettings:
    workers: int = 8
    """How many pods sync at once."""
    resync_seconds: float = 30.0
    """Every pod is synced at least this often (0: only on changes), a safety net under the runtime's events."""
    lease_renew_seconds: float = 10.0
    """How often each node's Lease is renewed (its heartbeat; Kubernetes: 10 s)."""
    status_report_seconds: float = 300.0
    """How often every node's status is reported (Kubernetes' nodeStatusReportFrequency; the Lease is the frequent
    heartbeat)."""
    record_events: bool = True
    """Whether container events (Pulled, Created, Started, Killing, Unhealthy, BackOff...) are written; simulated
    nodes at scale leave them out."""
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    """The pod workers' back-offs and grace periods."""


def _same_intent(old: Obj, new: Obj) -> bool:
    """Whether two versions of a pod ask the kubelet for the same thing (they differ at most in status)."""
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    return (old.get("spec") == new.get("spec") and om.get("uid") == nm.get("uid") and
            om.get("deletionTimestamp") == nm.get("deletionTimestamp") and
            om.get("annotations") == nm.get("annotations") and om.get("labels") == nm.get("labels"))


class Kubelet:
    def __init__(self, client: Client, runtime: Runtime, nodes: Sequence[NodeConfig],
                 settings: KubeletSettings | None = None, build_config: ConfigBuilder | None = None,
                 control_plane: ControlPlane | None = None) -> None:
        """``control_plane``: the in-process components this (single) node shows as its static pods."""
        if not nodes:
            raise ValueError("a kubelet serves at least one node")
        self.client = client
        self.runtime = runtime
        self.nodes = {n.name: n for n in nodes}
        self.settings = settings or KubeletSettings()
        self.queue: WorkQueue[str] = WorkQueue(name="kubelet")
        self.recorder = EventRecorder(client, "kubelet", nodes[0].name if len(nodes) == 1 else None) \
            if self.settings.record_events else None
        self.workers = PodWorkers(client, runtime, self._host_ip, self._enqueue, self.settings.worker,
                                  build_config, self.recorder)
        self.keeper = NodeKeeper(client, nodes, lease_renew_seconds=self.settings.lease_renew_seconds,
                                 status_report_seconds=self.settings.status_report_seconds)
        selector = f"spec.nodeName={nodes[0].name}" if len(nodes) == 1 else "spec.nodeName!="
        self.informer = Informer(client, "pods", field_selector=selector, resync_seconds=self.settings.resync_seconds)
        self.informer.add_handlers(self._on_pod, self._on_pod_update, self._on_pod_delete)
        self.pods: dict[str, Obj] = {}
        self.mirror: MirrorPods | None = None
        if control_plane is not None:
            first = nodes[0]
            self.mirror = MirrorPods(client, control_plane, first.name, first.address,
                                     lambda: self.keeper.uid(first.name))
        self._tasks: list[asyncio.Task[None]] = []
        self._log = log.bind(nodes=len(nodes) if len(nodes) > 1 else nodes[0].name, runtime=runtime.name)

    def _host_ip(self, node_name: str) -> str:
        node = self.nodes.get(node_name)
        return node.address if node else ""

    def _enqueue(self, uid: str, delay: float = 0.0) -> None:
        if delay > 0:
            self.queue.add_after(uid, delay)
        else:
            self.queue.add(uid)

    # -- events -----------------------------------------------------------------------------------------------
    def _on_pod(self, pod: Obj) -> None:
        if is_mirror(pod):  # never run: the mirror of a static pod, which its manager keeps
            if self.mirror is not None and (pod.get("spec") or {}).get("nodeName") in self.nodes:
                self.mirror.seen(pod)
            return
        if (pod.get("spec") or {}).get("nodeName") in self.nodes:
            uid = pod["metadata"]["uid"]
            self.pods[uid] = pod
            self.queue.add(uid)

    def _on_pod_update(self, old: Obj, pod: Obj) -> None:
        if is_mirror(pod):
            self._on_pod(pod)
            return
        if old is not pod and _same_intent(old, pod):
            # only the status changed (most often our own write): keep the newest copy, sync nothing, as
            # Kubernetes' kubelet ignores status-only updates
            uid = pod["metadata"]["uid"]
            if uid in self.pods:
                self.pods[uid] = pod
            return
        self._on_pod(pod)

    def _on_pod_delete(self, pod: Obj) -> None:
        if is_mirror(pod):
            if self.mirror is not None:
                self.mirror.gone(pod)
            return
        uid = (pod.get("metadata") or {}).get("uid")
        if uid in self.pods:
            del self.pods[uid]
            self.queue.add(uid)

    def _runtime_changed(self, uid: str) -> None:
        self.queue.add(uid)

    # -- life -------------------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the runtime, the node keeper, the informer and the workers; a start that fails or is cancelled
        half-way stops what it began."""
        try:
            if self.recorder is not None:
                await self.recorder.start()
            await self.runtime.start(self._runtime_changed)
            version = await self.runtime.version()
        except BaseException:
            await self.stop()
            raise
        for node in self.nodes.values():
            node.runtime_version = version
        self._tasks.append(start_task(self.keeper.run(), "kubelet node keeper"))
        self.informer.start()
        self._tasks.extend(start_task(self._work(), f"kubelet worker {i}") for i in range(self.settings.workers))
        self._tasks.append(start_task(self._collect_orphans(), "kubelet orphans"))
        if self.mirror is not None:
            self._tasks.append(start_task(self._keep_mirror_pods(self.mirror), "kubelet mirror pods"))
        self._log.info("kubelet started")

    async def stop(self) -> None:
        """Stop syncing; containers keep running (the next kubelet adopts them)."""
        self.queue.shutdown()
        for task in reversed(self._tasks):
            await stop_task(task)
        self._tasks.clear()
        await self.informer.stop()
        await self.workers.stop()
        await self.runtime.stop()
        if self.recorder is not None:
            await self.recorder.stop()
        self._log.info("kubelet stopped")

    async def _keep_mirror_pods(self, mirror: MirrorPods) -> None:
        await self.keeper.registered.wait()
        await self.informer.wait_for_sync()
        await mirror.run()

    def find_pod(self, namespace: str, name: str) -> Obj | None:
        """The pod of that name bound to this kubelet (the live one when an old one still terminates), or one of
        its mirror pods."""
        if self.mirror is not None and (mirror := self.mirror.find(namespace, name)) is not None:
            return mirror
        found = None
        for pod in self.pods.values():
            meta = pod.get("metadata") or {}
            if meta.get("namespace") == namespace and meta.get("name") == name:
                if not meta.get("deletionTimestamp"):
                    return pod
                found = pod
        return found

    async def wait_registered(self, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout):
            await self.keeper.registered.wait()

    async def _collect_orphans(self) -> None:
        """Once the cache holds the API's pods: the runtime's pods the API does not have are synced (removed)."""
        await self.informer.wait_for_sync()
        for uid in await self.runtime.pods():
            if uid not in self.pods:
                self.queue.add(uid)

    async def _work(self) -> None:
        while True:
            try:
                uid = await self.queue.get()
            except ShutDown:
                return
            try:
                delay = await self.workers.sync(uid, self.pods.get(uid))
            except Exception as exc:  # noqa: BLE001 - a failed sync is retried with back-off
                self._log.warning("pod sync failed", uid=uid, error=f"{type(exc).__name__}: {exc}")
                self.queue.add_rate_limited(uid)
            else:
                self.queue.forget(uid)
                if delay is not None:
                    self.queue.add_after(uid, delay)
            finally:
                self.queue.done(uid)
