"""The endpoints controller (Kubernetes' endpoint controller): keeps each Service's Endpoints in step with the pods
its selector matches.

For every pod with an IP that is not finished and not being deleted: an address (ip, nodeName, targetRef, and the
hostname when the pod names the service as its subdomain) under ``addresses`` when the pod is ready (or the
Service publishes not-ready addresses), under ``notReadyAddresses`` otherwise; per service port, the pod's own
port number (a named targetPort is looked up in that pod's containers, so pods may differ). Addresses with the
same ports are packed into one subset, sorted, so an unchanged world writes nothing.

Services without a selector are left alone (their Endpoints are someone else's: the `kubernetes` Service's are
the API server's), as are ExternalName Services. The Endpoints of a deleted Service are deleted.
"""

from __future__ import annotations

import copy

import structlog

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.selectors import selector_from_set
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder
from minik.informers import object_key, split_key

log = structlog.get_logger("minik.controllers.endpoints")

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

class EndpointsController(Controller):
    """Services + pods (+ the current Endpoints) -> Endpoints, one service key at a time."""

    name = "endpoints"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.services = factory.informer("services")
        self.pods = factory.informer("pods")
        self.endpoints = factory.informer("endpoints")
        self.services.add_handlers(self.enqueue, lambda _old, new: self.enqueue(new), self.enqueue)
        self.pods.add_handlers(self._pod_added, self._pod_updated, self._pod_added)
        self.endpoints.add_handlers(on_delete=self._endpoints_deleted)

    # -- handlers: they only enqueue service keys --------------------------------------------------------------
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
            self.log.debug("endpoints created", service=key, subsets=len(subsets))
            return
        if (current.get("subsets") or []) == subsets and \
                ((current.get("metadata") or {}).get("labels") or {}) == labels:
            return
        updated = copy.deepcopy(current)
        updated["subsets"] = subsets
        updated["metadata"]["labels"] = labels
        await self.client.update("endpoints", updated, namespace)
        self.log.debug("endpoints updated", service=key, subsets=len(subsets))
