"""minik's in-process components as the static pods of the local node, the way kubeadm and k3s clusters show
their control plane in ``kube-system``.

The cluster registers each component here as it starts (``StaticPod``: its pod's name and labels, kubeadm's, and
whether it is ready); the local node's kubelet keeps one mirror pod per registered component
(``minik.kubelet.mirror``) and serves its log from the component's own log lines (``minik.logtap``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minik.proxy.component import NodeProxy

Obj = dict[str, Any]

CONTROL_PLANE = {"tier": "control-plane"}

#: component -> (its pod's name before ``-NODE``, its labels), as kubeadm names and labels them
PODS: dict[str, tuple[str, dict[str, str]]] = {
    "apiserver": ("kube-apiserver", {"component": "kube-apiserver", **CONTROL_PLANE}),
    "controllers": ("kube-controller-manager", {"component": "kube-controller-manager", **CONTROL_PLANE}),
    "scheduler": ("kube-scheduler", {"component": "kube-scheduler", **CONTROL_PLANE}),
    "proxy": ("kube-proxy", {"k8s-app": "kube-proxy"}),
    "dns": ("kube-dns", {"k8s-app": "kube-dns"}),
}


def _always() -> bool:
    return True


def _nothing() -> tuple[Obj, ...]:
    return ()


def _no_address() -> str | None:
    return None


@dataclass
class StaticPod:
    """One in-process component, as a pod of the node that runs it."""

    component: str
    """The component's name in minik (``scheduler``), which its log lines are kept under."""

    ready: Callable[[], bool] = _always
    """Whether it serves now (its pod's Ready condition)."""

    present: Callable[[], bool] = _always
    """Whether it is there to show yet (the DNS: once it listens); until then its pod is left as it is."""

    ports: Callable[[], tuple[Obj, ...]] = _nothing
    """Its container's ports (the DNS's, which the kube-dns Service's named target ports find)."""

    address: Callable[[], str | None] = _no_address
    """The address it is reached at when not the node's (the DNS: the bridge pods reach it on)."""

    started_at: float = field(default_factory=time.time)

    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    """Tells this run of the component from the one before (its pod's containerID, as a container's id)."""

    @property
    def name(self) -> str:
        return PODS[self.component][0]

    @property
    def labels(self) -> dict[str, str]:
        return dict(PODS[self.component][1])


class ControlPlane:
    """The components of this process that show as static pods, and who hears of changes to the set."""

    def __init__(self) -> None:
        self.pods: dict[str, StaticPod] = {}
        self._listeners: list[Callable[[], None]] = []

    def add(self, pod: StaticPod) -> None:
        self.pods[pod.component] = pod
        self.changed()

    def remove(self, component: str) -> None:
        if self.pods.pop(component, None) is not None:
            self.changed()

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` on each change; returns what stops it."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def changed(self) -> None:
        for callback in list(self._listeners):
            callback()

    def by_pod_name(self, name: str, node: str) -> StaticPod | None:
        for pod in self.pods.values():
            if f"{pod.name}-{node}" == name:
                return pod
        return None


def proxy_pods(proxy: NodeProxy) -> list[StaticPod]:
    """The node proxy's two pods: kube-proxy, ready once its rules are set up, and the DNS, there once the proxy is
    set up, ready when it listens (it may fail to), reached at the first address of a bridge it listens on (where
    pods send their queries)."""

    def dns_address() -> str | None:
        if proxy.dns is None:
            return None
        return next((a for a in proxy.dns.addresses if not a.startswith("127.")), None)

    def dns_ports() -> tuple[Obj, ...]:
        if proxy.dns is None or dns_address() is None:
            return ()  # reached on loopback only: no address another pod could use
        port = proxy.dns.port
        return ({"name": "dns", "containerPort": port, "hostPort": port, "protocol": "UDP"},
                {"name": "dns-tcp", "containerPort": port, "hostPort": port, "protocol": "TCP"})

    return [StaticPod("proxy", ready=proxy.ready.is_set),
            StaticPod("dns", ready=lambda: proxy.dns is not None and proxy.ready.is_set(), present=proxy.ready.is_set,
                      ports=dns_ports, address=dns_address)]
