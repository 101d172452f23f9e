"""The scheduler: informers feed the queue and the cache; one loop pops a pod, decides its node, assumes it there
and binds it asynchronously (kube-scheduler's scheduleOne, scheduling cycle then binding cycle).

It talks to the cluster only through its client: pods with no spec.nodeName whose spec.schedulerName is its own
name are its to place; every bound pod and every node feed the cache. On success the API server's binding sets
the PodScheduled condition and the scheduler records a ``Scheduled`` event; when no node fits, it writes
PodScheduled False (reason Unschedulable, with Kubernetes' message) and a ``FailedScheduling`` event, which the
recorder aggregates across retries.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from minik.aio import start_task, stop_task, wake_one
from minik.api.errors import StatusError
from minik.api.timestamps import now_rfc3339
from minik.client import STRATEGIC_MERGE_PATCH, Client, TransportError
from minik.events import NORMAL, WARNING, EventRecorder
from minik.informers import Informer
from minik.scheduler.algorithm import Algorithm, FitError
from minik.scheduler.arrays import NUMPY
from minik.scheduler.cache import Cache
from minik.scheduler.framework import DEFAULT_SCHEDULER_NAME, ClusterView, PodInfo, PreBindPlugin
from minik.scheduler.objects import RESOURCES, VOLUME_RESOURCES, ClusterObjects
from minik.scheduler.plugins.registry import ProfileConfig, build_profile
from minik.scheduler.preemption import Preemptor
from minik.scheduler.queue import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    ASSIGNED_POD_UPDATE,
    NODE_ADD,
    NODE_UPDATE,
    VOLUME_CHANGE,
    QueuedPod,
    QueueSettings,
    SchedulingQueue,
)

log = structlog.get_logger("minik.scheduler")


Obj = dict[str, Any]

#: how long the scheduler decides pods in a row, when several are waiting, before it lets the rest of the process
#: run (events, binds): a cycle run between unrelated work finds less of what it reads in the processor's caches
CYCLES_SECONDS = 0.002


@dataclass(frozen=True)
class SchedulerSettings:
    name: str = DEFAULT_SCHEDULER_NAME
    """The spec.schedulerName this scheduler serves, and the source of its events."""

    percentage_of_nodes_to_score: int = 0
    """How many feasible nodes to find before scoring, as a percentage of all nodes; 0 is adaptive (50% less 1%
    per 125 nodes, at least 5%), and never fewer than 100 nodes."""

    profile: ProfileConfig = field(default_factory=ProfileConfig)
    """Which plugins run, the scoring strategy and the score weights."""

    queue: QueueSettings = field(default_factory=QueueSettings)
    """Backoff and the unschedulable pool's timing."""

    preemption: bool = True
    """Whether a pod no node fits may evict lower-priority pods."""

    concurrent_binds: int = 16
    """Binds in flight at once; the others wait their turn (their pods are assumed already). Over HTTP each bind
    in flight holds a connection of its own: without a bound, a backlog of pending pods decided in a burst would
    open one connection per pod. Each is a worker task, started when needed and kept until the scheduler stops,
    that takes the decided pods in order (no task per pod)."""


def _reference(pod: Obj) -> Obj:
    """What the event recorder needs of a pod (items from a list carry no kind)."""
    meta = pod.get("metadata") or {}
    return {"kind": "Pod", "apiVersion": "v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid") if meta.get(k)}}


class Scheduler:
    def __init__(self, client: Client, settings: SchedulerSettings | None = None) -> None:
        self.client = client
        self.settings = settings or SchedulerSettings()
        self.name = self.settings.name
        self.cache = Cache()
        self.objects = ClusterObjects()
        profile = build_profile(self.settings.profile)
        self.algorithm = Algorithm(profile, self.settings.percentage_of_nodes_to_score, cluster=self.objects)
        self.pre_binds = [p for p in profile.plugins if isinstance(p, PreBindPlugin)]
        self.volume_binding = VolumeWaits(client, self.objects)
        self.queue: SchedulingQueue | None = None
        self.recorder = EventRecorder(client, self.name, max_pending=100_000)
        self.preemptor = Preemptor(self.algorithm, client, self.name, self.recorder)
        self.pods = Informer(client, "pods")
        self.nodes = Informer(client, "nodes")
        self.pods.add_handlers(self._pod_added, self._pod_updated, self._pod_deleted)
        self.nodes.add_handlers(self._node_added, self._node_updated, self._node_deleted)
        # namespaces (namespaceSelector), services and controllers (default spreading): kept in self.objects
        self.others = [self._object_informer(resource) for resource in RESOURCES]
        self._loop: asyncio.Task[None] | None = None
        self._writes: set[asyncio.Task[None]] = set()
        self._to_bind: deque[tuple[QueuedPod, str]] = deque()  # decided and assumed, waiting for a bind worker
        self._binders = 0  # bind workers started
        self._idle_binders: deque[asyncio.Future[None]] = deque()  # what each idle bind worker waits on
        self._log = log.bind(scheduler=self.name)
        self.scheduled = 0
        self.attempts = 0

    def _object_informer(self, resource: str) -> Informer:
        informer = Informer(self.client, resource)
        objects = self.objects
        if resource in VOLUME_RESOURCES:  # pods waiting on volumes may fit now, or their claims be bound
            def changed(obj: Obj, gone: bool = False) -> None:
                objects.delete(resource, obj) if gone else objects.set(resource, obj)
                if resource == "persistentvolumeclaims":
                    meta = obj.get("metadata") or {}
                    self.volume_binding.changed(f"{meta.get('namespace', '')}/{meta.get('name', '')}")
                if self.queue is not None:
                    self.queue.move_all(VOLUME_CHANGE)
            informer.add_handlers(changed, lambda old, obj: changed(obj), lambda obj: changed(obj, True))
            return informer
        informer.add_handlers(lambda obj: objects.set(resource, obj), lambda old, obj: objects.set(resource, obj),
                              lambda obj: objects.delete(resource, obj))
        return informer

    # -- lifecycle ------------------------------------------------------------------------------------------------
    async def start(self) -> None:
        self.queue = SchedulingQueue(self.settings.queue)
        await self.recorder.start()
        for informer in self.others:
            informer.start()
        self.nodes.start()
        self.pods.start()
        for informer in self.others:
            await informer.wait_for_sync()
        await self.nodes.wait_for_sync()
        await self.pods.wait_for_sync()
        self.queue.start()
        self._loop = start_task(self._run(), name=f"scheduler {self.name}")
        self._log.info("scheduler started", nodes=len(self.cache), pending=len(self.queue))

    async def stop(self) -> None:
        await stop_task(self._loop)
        self._loop = None
        for task in list(self._writes):
            await stop_task(task)
        self._binders = 0
        self._idle_binders.clear()
        self._to_bind.clear()  # assumed, never bound: the cache goes with this scheduler
        await self.preemptor.stop()
        await self.pods.stop()
        await self.nodes.stop()
        for informer in self.others:
            await informer.stop()
        if self.queue is not None:
            await self.queue.stop()
        await self.recorder.stop()
        self._log.info("scheduler stopped", scheduled=self.scheduled)

    def _spawn(self, coro: Any, name: str) -> None:
        task = start_task(coro, name=name)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    # -- informer handlers ----------------------------------------------------------------------------------------
    def _responsible(self, info: PodInfo) -> bool:
        return not info.node_name and info.scheduler_name == self.name and not info.deleting and not info.terminal

    def _pod_added(self, pod: Obj) -> None:
        info = PodInfo(pod)
        if info.node_name:
            if not info.terminal:
                self.cache.add_pod(info)
                if self.queue is not None:
                    self.queue.move_all(ASSIGNED_POD_ADD)
        else:
            self._track_nomination(info)
            if self._responsible(info) and self.queue is not None:
                self.queue.add(info)

    def _pod_updated(self, old: Obj, pod: Obj) -> None:
        info = PodInfo(pod)
        queue = self.queue
        if info.node_name:
            self.cache.clear_nomination(info.key)
            if queue is not None:
                queue.delete(info.key)
            if info.terminal:
                if self.cache.remove_pod(info.key) is not None and queue is not None:
                    queue.move_all(ASSIGNED_POD_DELETE)
            else:
                bound_now = not (old.get("spec") or {}).get("nodeName")
                self.cache.add_pod(info)
                if queue is not None and (bound_now or (old.get("metadata") or {}).get("labels") != info.labels):
                    queue.move_all(ASSIGNED_POD_ADD if bound_now else ASSIGNED_POD_UPDATE)
        else:
            self._track_nomination(info)
            if queue is not None:
                if self._responsible(info):
                    queue.update(info, retry=_changed_beyond_status(old, pod))
                else:
                    queue.delete(info.key)

    def _pod_deleted(self, pod: Obj) -> None:
        info = PodInfo(pod)
        self.cache.clear_nomination(info.key)
        if self.queue is not None:
            self.queue.delete(info.key)
        if self.cache.remove_pod(info.key) is not None and self.queue is not None:
            self.queue.move_all(ASSIGNED_POD_DELETE)

    def _track_nomination(self, info: PodInfo) -> None:
        """A pending pod's status.nominatedNodeName, as the cache's nominations (other pods leave it room)."""
        if info.nominated_node and not info.deleting and not info.terminal and not self.cache.is_assumed(info.key):
            if self.cache.nominated_node_of(info.key) != info.nominated_node:
                self.cache.nominate(info, info.nominated_node)
        else:
            self.cache.clear_nomination(info.key)

    def _node_added(self, node: Obj) -> None:
        self.cache.set_node(node)
        if self.queue is not None:
            self.queue.move_all(NODE_ADD)

    def _node_updated(self, old: Obj, node: Obj) -> None:
        self.cache.set_node(node)
        if self.queue is not None and _node_changed_for_scheduling(old, node):
            self.queue.move_all(NODE_UPDATE)

    def _node_deleted(self, node: Obj) -> None:
        self.cache.remove_node((node.get("metadata") or {}).get("name") or "")

    # -- the scheduling loop --------------------------------------------------------------------------------------
    async def warm_up(self) -> None:
        """Import numpy (the columns the hot filters and scores run on) in a thread, off the event loop."""
        if not NUMPY.loaded:
            await asyncio.to_thread(NUMPY.load)

    async def _run(self) -> None:
        assert self.queue is not None
        first: QueuedPod | None = None
        if not NUMPY.loaded:
            # numpy (about 130 ms of CPU and 14 MB) waits for the first pod: a cluster that schedules nothing,
            # idle or still starting, never pays for it
            first = await self.queue.pop()
            await self.warm_up()
        loop = asyncio.get_running_loop()
        while True:
            if first is not None:
                qp, first = first, None
            else:
                qp = await self.queue.pop()
            # the pods waiting are decided in a row for up to CYCLES_SECONDS (the code and the columns stay in the
            # processor's caches), then the informers and the binds run
            until = loop.time() + CYCLES_SECONDS
            while True:
                try:
                    self.schedule_one(qp)
                except Exception:  # noqa: BLE001 - a bug in one cycle must not stop scheduling
                    self._log.exception("scheduling cycle failed", pod=qp.key)
                    self.queue.add_backoff(qp)
                if loop.time() >= until:
                    break
                next_pod = self.queue.pop_nowait()
                if next_pod is None:
                    break
                qp = next_pod
            await asyncio.sleep(0)

    def schedule_one(self, qp: QueuedPod) -> None:
        """One scheduling cycle, without awaiting: decide, assume, and start the bind."""
        assert self.queue is not None
        info = qp.info
        self.attempts += 1
        try:
            result = self.algorithm.schedule(info, self.cache, self.cache.nominated_node_of(info.key))
        except FitError as fit:
            nominated = None
            if self.settings.preemption:
                nominated = self.preemptor.preempt(info, self.cache, fit.diagnosis)
                if nominated is not None:
                    self._nominate(info, nominated)
            self.queue.add_unschedulable(qp, fit.diagnosis.unschedulable_plugins)
            message = fit.diagnosis.message()
            self._log.debug("unschedulable", pod=info.key, message=message)
            self.recorder.event(_reference(info.pod), WARNING, "FailedScheduling", message)
            self._spawn(self._mark_unschedulable(info, message, nominated), f"unschedulable {info.key}")
            return
        self.cache.clear_nomination(info.key)
        self.cache.assume(info, result.node)
        self.queue.done(qp)
        if any(plugin.needs_pre_bind(self.objects, info) for plugin in self.pre_binds):
            # its volumes are bound first, which takes the provisioner's time: a task of its own, not a bind
            # worker that the pods behind it wait for
            self._spawn(self._pre_bind_and_bind(qp, result.node), f"pre-bind {info.key}")
            return
        self._to_bind.append((qp, result.node))
        self._wake_binder()

    def _wake_binder(self) -> None:
        """Wake an idle bind worker, or start one while there are fewer than ``concurrent_binds``."""
        if wake_one(self._idle_binders):
            return
        if self._binders < self.settings.concurrent_binds:
            self._binders += 1
            self._spawn(self._bind_worker(), f"bind worker {self._binders}")

    async def _bind_worker(self) -> None:
        """Bind the decided pods in order; when none is left, wait for the next one (a worker lives as long as
        the scheduler: starting a task per pod costs more than its bind's wake-up)."""
        loop = asyncio.get_running_loop()
        while True:
            while self._to_bind:
                qp, node = self._to_bind.popleft()
                try:
                    await self._bind(qp, node)
                except Exception:  # noqa: BLE001 - a bug in one bind must not strand the pods queued behind it
                    self._log.exception("bind failed", pod=qp.key, node=node)
                    self.cache.forget(qp.key)
                    if self.queue is not None:
                        self.queue.add_backoff(qp)
            waiter: asyncio.Future[None] = loop.create_future()
            self._idle_binders.append(waiter)
            await waiter

    async def _pre_bind_and_bind(self, qp: QueuedPod, node: str) -> None:
        """Run the pre-bind steps (VolumeBinding: the claims get the node, and are waited for), then bind."""
        info = qp.info
        for plugin in self.pre_binds:
            try:
                status = await plugin.pre_bind(self.volume_binding, info, node)
                ok, message = status.ok, status.message
            except (StatusError, TransportError) as exc:
                ok, message = False, getattr(exc, "message", str(exc))
            if not ok:
                self.cache.forget(info.key)
                text = f'running PreBind plugin "{plugin.name}": {message}'
                self._log.info("pre-bind failed", pod=info.key, node=node, error=text)
                self.recorder.event(_reference(info.pod), WARNING, "FailedScheduling", text)
                current = self.pods.get(info.key)
                if current is not None and self._responsible(PodInfo(current)) and self.queue is not None:
                    self.queue.add_backoff(qp)
                return
        await self._bind(qp, node)

    async def _bind(self, qp: QueuedPod, node: str) -> None:
        info = qp.info
        try:
            await self.client.bind(info.name, node, info.namespace, uid=info.uid or None)
        except (StatusError, TransportError) as exc:
            self.cache.forget(info.key)
            message = getattr(exc, "message", str(exc))
            self._log.info("bind failed", pod=info.key, node=node, error=message)
            current = self.pods.get(info.key)
            if current is not None and self._responsible(PodInfo(current)) and self.queue is not None:
                self.queue.add_backoff(qp)
                self.recorder.event(_reference(info.pod), WARNING, "FailedScheduling", f"Binding rejected: {message}")
            return
        self.scheduled += 1
        self.recorder.event(_reference(info.pod), NORMAL, "Scheduled",
                            f"Successfully assigned {info.key} to {node}")

    def _nominate(self, info: PodInfo, node: str) -> None:
        """Preemption chose ``node`` for the pod: other pods must leave it room; lower-priority pods nominated
        there lose their nomination (they may no longer fit), as in kube-scheduler."""
        for other in self.cache.nominated(node):
            if other.priority < info.priority:
                self.cache.clear_nomination(other.key)
                self._spawn(self._clear_nominated_node(other), f"clear nomination {other.key}")
        self.cache.nominate(info, node)

    async def _clear_nominated_node(self, info: PodInfo) -> None:
        try:
            await self.client.patch_status("pods", info.name, {"status": {"nominatedNodeName": None}},
                                           info.namespace, content_type=STRATEGIC_MERGE_PATCH)
        except (StatusError, TransportError) as exc:
            self._log.info("could not clear a nominated node", pod=info.key, error=str(exc))

    async def _mark_unschedulable(self, info: PodInfo, message: str, nominated: str | None) -> None:
        """PodScheduled False with reason Unschedulable (written only when it changes), and the nominated node."""
        current = self.pods.get(info.key) or info.pod
        status = current.get("status") or {}
        condition = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        patch_status: Obj = {}
        if condition is None or condition.get("status") != "False" or condition.get("message") != message:
            patch_status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                           "message": message, "lastProbeTime": None,
                                           "lastTransitionTime": now_rfc3339()}]
        if nominated and status.get("nominatedNodeName") != nominated:
            patch_status["nominatedNodeName"] = nominated
        if not patch_status:
            return
        try:
            await self.client.patch_status("pods", info.name, {"status": patch_status}, info.namespace,
                                           content_type=STRATEGIC_MERGE_PATCH)
        except (StatusError, TransportError) as exc:
            self._log.info("could not update the pod's status", pod=info.key, error=str(exc))


class VolumeWaits:
    """The scheduler's side of pre-binding (framework.Binding): claims patched through its client, and waits
    that wake when a claim they wait on changes (as its informer sees it)."""

    def __init__(self, client: Client, cluster: ClusterView) -> None:
        self.client = client
        self.cluster = cluster
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}

    def changed(self, claim: str) -> None:
        for waiter in self._waiters.pop(claim, ()):
            if not waiter.done():
                waiter.set_result(None)

    async def patch_claim(self, namespace: str, name: str, patch: Obj) -> None:
        await self.client.patch("persistentvolumeclaims", name, patch, namespace)

    async def wait_until(self, done: Any, claims: Sequence[str], timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not done():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            waiter: asyncio.Future[None] = loop.create_future()
            for claim in claims:
                self._waiters.setdefault(claim, set()).add(waiter)
            try:
                await asyncio.wait_for(waiter, remaining)
            except TimeoutError:
                return bool(done())
            finally:
                for claim in claims:
                    waiting = self._waiters.get(claim)
                    if waiting is not None:
                        waiting.discard(waiter)
                        if not waiting:
                            del self._waiters[claim]
        return True


def _changed_beyond_status(old: Obj, new: Obj) -> bool:
    """Whether a pending pod changed in a way that may change where it fits (not just its status or
    bookkeeping, as the scheduler's own status writes do)."""
    if old.get("spec") != new.get("spec"):
        return True
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    return any(old_meta.get(k) != new_meta.get(k) for k in ("labels", "annotations", "deletionTimestamp"))


def _node_changed_for_scheduling(old: Obj, new: Obj) -> bool:
    """A change that could make a pod fit: allocatable, labels, taints, unschedulable, conditions."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if old_meta.get("labels") != new_meta.get("labels") or old.get("spec") != new.get("spec"):
        return True
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    if old_status.get("allocatable") != new_status.get("allocatable"):
        return True
    return [(c.get("type"), c.get("status")) for c in old_status.get("conditions") or []] != \
        [(c.get("type"), c.get("status")) for c in new_status.get("conditions") or []]
