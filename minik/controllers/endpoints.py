"""The endpoints controller (Kubernetes' endpoint controller): keeps each Service's Endpoints in step with the pods
its selector matches.

For every pod with an IP that is not finished and not being deleted: an address (ip, nodeName, targetRef, and the
hostname when the pod names the service as its subdomain) under ``addresses`` when the pod is ready (or the
Service publishes not-ready addresses), under ``notReadyAddresses`` otherwise; per service port, the pod's own
port number (a named targetPort is looked up in that pod's containers, so pods may differ). Addresses with the
same ports are packed into one subset, sorted, so an unchanged world writes nothing.

Services without a selector are left alone (their Endpoints are someone else's: the `kubernetes` Service's are
the API server's), as are ExternalName Services. The Endpoints of a deleted Service are deleted.

Standalone for now (its own informers, queue and workers, in the controllers' shape: handlers only enqueue service
keys, workers sync one key at a time, failures retried with backoff); it moves onto minik.controllers.base once
that lands.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import structlog

from minik.aio import start_task, stop_task
from minik.api.errors import StatusError
from minik.api.selectors import selector_from_set
from minik.client import Client
from minik.informers import Informer, object_key, split_key
from minik.workqueue import ShutDown, WorkQueue

log = structlog.get_logger("minik.controllers.endpoints")

Obj = dict[str, Any]

MAX_RETRIES = 15
HEADLESS_LABEL = "service.kubernetes.io/headless"


# -- what the Endpoints should be (pure) -------------------------------------------------------------------------

def is_pod_ready(pod: Obj) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def should_be_in_endpoints(pod: Obj, include_terminating: bool = False) -> bool:
    """Kubernetes' ShouldPodBeInEndpoints: has an IP, has not finished, is not being deleted."""
    status = pod.get("status") or {}
    if not status.get("podIP"):
        return False
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    if not include_terminating and (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return True


def find_port(pod: Obj, service_port: Obj) -> int | None:
    """The pod's port number for a service port (Kubernetes' FindPort): a number as it is, a name looked up in the
    pod's containers' ports with the same protocol; None when the pod has no such port."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = service_port.get("protocol") or "TCP"
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port["containerPort"])
    return None


def _address(pod: Obj, service: Obj) -> Obj:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    address: Obj = {"ip": pod["status"]["podIP"]}
    if spec.get("hostname") and spec.get("subdomain") == service["metadata"]["name"]:
        address["hostname"] = spec["hostname"]
    if spec.get("nodeName"):
        address["nodeName"] = spec["nodeName"]
    address["targetRef"] = {"kind": "Pod", "namespace": meta.get("namespace"), "name": meta.get("name"),
                            "uid": meta.get("uid")}
    return address


def _address_key(address: Obj) -> tuple[str, str]:
    return address["ip"], (address.get("targetRef") or {}).get("uid") or ""


def endpoint_subsets(service: Obj, pods: list[Obj]) -> list[Obj]:
    """The subsets of a Service's Endpoints given the pods its selector matches, packed and sorted."""
    spec = service.get("spec") or {}
    publish_not_ready = bool(spec.get("publishNotReadyAddresses"))
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    groups: dict[tuple[tuple[str, int, str], ...], tuple[list[Obj], list[Obj]]] = {}
    for pod in pods:
        if not should_be_in_endpoints(pod, include_terminating=publish_not_ready):
            continue
        address = _address(pod, service)
        ready = publish_not_ready or is_pod_ready(pod)
        if not ports:
            if spec.get("clusterIP") != "None":
                continue
            port_set: tuple[tuple[str, int, str], ...] = ()  # a headless service without ports: addresses only
        else:
            resolved = []
            for port in ports:
                number = find_port(pod, port)
                if number is None:
                    log.debug("pod has no such port", pod=object_key(pod), port=port.get("targetPort"))
                    continue
                resolved.append((str(port.get("name") or ""), number, str(port.get("protocol") or "TCP")))
            if not resolved:
                continue
            port_set = tuple(sorted(resolved))
        ready_list, not_ready_list = groups.setdefault(port_set, ([], []))
        (ready_list if ready else not_ready_list).append(address)
    subsets = []
    for port_set in sorted(groups):
        ready_list, not_ready_list = groups[port_set]
        subset: Obj = {}
        if ready_list:
            subset["addresses"] = sorted(ready_list, key=_address_key)
        if not_ready_list:
            subset["notReadyAddresses"] = sorted(not_ready_list, key=_address_key)
        if port_set:
            subset["ports"] = [{"name": name, "port": number, "protocol": protocol} if name else
                               {"port": number, "protocol": protocol} for name, number, protocol in port_set]
        subsets.append(subset)
    return subsets


def endpoints_labels(service: Obj) -> dict[str, str]:
    labels = dict((service.get("metadata") or {}).get("labels") or {})
    if (service.get("spec") or {}).get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    else:
        labels.pop(HEADLESS_LABEL, None)
    return labels


def manages(service: Obj) -> bool:
    """Whether the controller owns this Service's Endpoints: it has a selector and is not an ExternalName."""
    spec = service.get("spec") or {}
    return bool(spec.get("selector")) and spec.get("type") != "ExternalName"


# -- the controller ----------------------------------------------------------------------------------------------

class EndpointsController:
    """Services + pods (+ the current Endpoints) -> Endpoints, one service key at a time."""

    name = "endpoints"

    def __init__(self, client: Client, workers: int = 2, *, services: Informer | None = None,
                 pods: Informer | None = None, endpoints: Informer | None = None) -> None:
        """Pass shared informers to use them (the caller starts and stops them); any left out is created, started
        and stopped by the controller itself."""
        self.client = client
        self.workers = workers
        self._owned: list[Informer] = []
        self.services = services or self._own(Informer(client, "services"))
        self.pods = pods or self._own(Informer(client, "pods"))
        self.endpoints = endpoints or self._own(Informer(client, "endpoints"))
        self.queue: WorkQueue[str] = WorkQueue(name=self.name)
        self._tasks: list[asyncio.Task[None]] = []
        self.services.add_handlers(self._service_changed, lambda _old, new: self._service_changed(new),
                                   self._service_changed)
        self.pods.add_handlers(self._pod_added, self._pod_updated, self._pod_added)
        self.endpoints.add_handlers(on_delete=self._endpoints_deleted)

    def _own(self, informer: Informer) -> Informer:
        self._owned.append(informer)
        return informer

    # -- life cycle --------------------------------------------------------------------------------------------
    async def start(self) -> None:
        for informer in self._owned:
            informer.start()
        for informer in (self.services, self.pods, self.endpoints):
            await informer.wait_for_sync(30.0)
        for i in range(self.workers):
            self._tasks.append(start_task(self._worker(), name=f"{self.name} worker {i}"))
        log.info("endpoints controller started", workers=self.workers)

    async def stop(self) -> None:
        self.queue.shutdown()
        for task in self._tasks:
            await stop_task(task)
        self._tasks.clear()
        for informer in reversed(self._owned):
            await informer.stop()

    # -- handlers: they only enqueue service keys --------------------------------------------------------------
    def _service_changed(self, service: Obj) -> None:
        self.queue.add(object_key(service))

    def _services_of(self, pod: Obj) -> list[str]:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        keys = []
        for service in self.services.list(meta.get("namespace")):
            selector = (service.get("spec") or {}).get("selector")
            if selector and selector_from_set(selector).matches(labels):
                keys.append(object_key(service))
        return keys

    def _pod_added(self, pod: Obj) -> None:
        for key in self._services_of(pod):
            self.queue.add(key)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if old.get("metadata", {}).get("resourceVersion") == new.get("metadata", {}).get("resourceVersion"):
            return
        keys = set(self._services_of(new))
        if (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels"):
            keys |= set(self._services_of(old))
        for key in keys:
            self.queue.add(key)

    def _endpoints_deleted(self, endpoints: Obj) -> None:
        key = object_key(endpoints)
        if self.services.get(key) is not None:
            self.queue.add(key)  # someone deleted what we keep: put it back

    # -- workers -----------------------------------------------------------------------------------------------
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
            except Exception as exc:  # noqa: BLE001 - retried with backoff, never fatal
                if self.queue.num_requeues(key) >= MAX_RETRIES:
                    log.warning("dropping service after repeated failures", service=key, error=str(exc))
                    self.queue.forget(key)
                else:
                    level = log.debug if isinstance(exc, StatusError) and exc.code in (404, 409) else log.warning
                    level("endpoints sync failed; retrying", service=key, error=str(exc))
                    self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        service = self.services.get(key)
        current = self.endpoints.get(key)
        if service is None:
            if current is not None:
                try:
                    await self.client.delete("endpoints", name, namespace)
                except StatusError as exc:
                    if exc.code != 404:
                        raise
            return
        if not manages(service):
            return
        selector = selector_from_set(service["spec"]["selector"])
        pods = [p for p in self.pods.list(namespace) if selector.matches((p.get("metadata") or {}).get("labels"))]
        subsets = endpoint_subsets(service, pods)
        labels = endpoints_labels(service)
        if current is None:
            body = {"apiVersion": "v1", "kind": "Endpoints",
                    "metadata": {"name": name, "namespace": namespace, "labels": labels}, "subsets": subsets}
            await self.client.create("endpoints", body, namespace)
            log.debug("endpoints created", service=key, subsets=len(subsets))
            return
        if (current.get("subsets") or []) == subsets and \
                ((current.get("metadata") or {}).get("labels") or {}) == labels:
            return
        updated = copy.deepcopy(current)
        updated["subsets"] = subsets
        updated["metadata"]["labels"] = labels
        await self.client.update("endpoints", updated, namespace)
        log.debug("endpoints updated", service=key, subsets=len(subsets))
