"""The shape every controller has (Kubernetes' sample-controller): shared informers whose handlers only enqueue
keys, one WorkQueue per controller, N workers that each pop a key and call ``sync(key)``, and a failed sync
requeued with rate limiting. Controllers read from the informers' caches, which are shared and read-only: an
object is copied (``copy.deepcopy``) before it is changed and written back through the API.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from minik.aio import start_task, stop_task
from minik.aio.clock import SYSTEM_CLOCK, Clock
from minik.api.errors import StatusError
from minik.api.registry import ResourceType
from minik.client import Client
from minik.informers import Informer, Transform, object_key
from minik.workqueue import ShutDown, WorkQueue

Obj = dict[str, Any]

#: how many times a key is retried with backoff before it is dropped (it comes back with its next event or resync)
MAX_RETRIES = 15


class Recorder(Protocol):
    """minik.events.EventRecorder's one method controllers use."""

    def event(self, involved_obj: Obj, type_: str, reason: str, message: str) -> None: ...


class InformerFactory:
    """One informer per resource, shared by every controller that asks for it (client-go's
    SharedInformerFactory): handlers are added while controllers are built, then every informer starts."""

    def __init__(self, client: Client, resync_seconds: float = 0.0) -> None:
        self.client = client
        self.resync_seconds = resync_seconds
        self._informers: dict[tuple[str, str | None], Informer] = {}
        self._started = False

    def informer(self, resource: str, transform: Transform | None = None,
                 field_selector: str | None = None) -> Informer:
        """The shared informer of ``resource`` (any name the registry resolves: "pods", "deployments.apps").
        ``transform`` keeps less of each object; every controller asking for the resource must ask alike.
        ``field_selector`` makes an informer of its own that holds only the objects it selects (the root CA
        publisher follows one ConfigMap name in every namespace, not every ConfigMap)."""
        key = (self.client.resource(resource).group_resource, field_selector)
        informer = self._informers.get(key)
        if informer is None:
            if self._started:
                raise RuntimeError(f"informer {resource} asked for after the factory started")
            informer = Informer(self.client, resource, resync_seconds=self.resync_seconds, transform=transform,
                                field_selector=field_selector)
            self._informers[key] = informer
        elif informer.transform is not transform:
            raise ValueError(f"the informer of {resource} is shared with a different transform")
        return informer

    def informer_late(self, resource: ResourceType) -> Informer:
        """The informer of a resource that appeared after the factory was built (a CRD's): made, and started at
        once when the factory runs already. Its handlers are added by the caller before it returns control to the
        event loop (the informer lists in a task of its own)."""
        key = (resource.group_resource, None)
        informer = self._informers.get(key)
        if informer is None:
            informer = Informer(self.client, resource, resync_seconds=self.resync_seconds)
            self._informers[key] = informer
            if self._started:
                asyncio.get_running_loop().call_soon(_start_if_new, informer)
        return informer

    def discard(self, group_resource: str) -> Informer | None:
        """Forget the informer of a resource that is no longer served; the caller stops it."""
        return self._informers.pop((group_resource, None), None)

    async def start(self, timeout: float = 30.0) -> None:
        """Start every informer and wait until each has listed once."""
        self._started = True
        for informer in self._informers.values():
            informer.start()
        for informer in self._informers.values():
            await informer.wait_for_sync(timeout)

    async def stop(self) -> None:
        for informer in self._informers.values():
            await informer.stop()


def _start_if_new(informer: Informer) -> None:
    if not informer.started:
        informer.start()


class Controller:
    """A queue of keys and the workers that sync them. Subclasses register their informer handlers in
    ``__init__`` (handlers call ``enqueue``) and implement ``sync(key)``, which must be idempotent: it reads the
    object's current state from the cache and makes the world match it."""

    name = "controller"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        self.client = client
        self.recorder = recorder
        self.factory = factory
        self.workers = workers
        self.clock = clock or SYSTEM_CLOCK
        self.queue: WorkQueue[str] = WorkQueue(name=self.name)
        self.log = structlog.get_logger(f"minik.controllers.{self.name}")
        self._tasks: list[asyncio.Task[None]] = []

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """Record a Kubernetes event about ``obj`` (non-blocking; nothing when the manager runs no recorder)."""
        if self.recorder is not None:
            self.recorder.event(obj, type_, reason, message)

    def enqueue(self, obj: Obj) -> None:
        self.queue.add(object_key(obj))

    def enqueue_after(self, obj: Obj, seconds: float) -> None:
        """Sync ``obj`` again once ``seconds`` have passed on the controller's clock."""
        self.clock.add_after(self.queue, object_key(obj), seconds)

    def enqueue_key_after(self, key: str, seconds: float) -> None:
        self.clock.add_after(self.queue, key, seconds)

    async def start(self) -> None:
        """Start the workers; the caller has started the informers (and waited for their caches)."""
        for i in range(self.workers):
            self._tasks.append(start_task(self._worker(), name=f"{self.name} worker {i}"))

    async def stop(self) -> None:
        self.queue.shutdown()
        for task in self._tasks:
            await stop_task(task)
        self._tasks.clear()

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await self.sync(key)
                self.queue.forget(key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a failed sync is retried with backoff, never fatal
                self._retry(key, exc)
            finally:
                self.queue.done(key)

    def _retry(self, key: str, exc: Exception) -> None:
        log = self.log.bind(key=key)
        if self.queue.num_requeues(key) >= MAX_RETRIES:
            log.warning("dropping key after repeated failures", error=_describe(exc))
            self.queue.forget(key)
            return
        if isinstance(exc, StatusError) and exc.code in (404, 409):
            log.debug("sync raced another write; retrying", error=_describe(exc))
        else:
            log.warning("sync failed; retrying", error=_describe(exc),
                        exc_info=not isinstance(exc, StatusError))
        self.queue.add_rate_limited(key)

    async def sync(self, key: str) -> None:
        raise NotImplementedError


def _describe(exc: Exception) -> str:
    if isinstance(exc, StatusError):
        return f"{exc.code} {exc.reason}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


def controller_ref(obj: Obj) -> Obj | None:
    """The ownerReference with controller: true, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def owner_reference(owner: Obj, *, block: bool = True) -> Obj:
    """A controller ownerReference to ``owner`` (blockOwnerDeletion set, as Kubernetes' controllers set it)."""
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": block}


def is_being_deleted(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def ignore_not_found(exc: StatusError) -> None:
    if exc.code != 404:
        raise exc


Handler = Callable[..., None]
