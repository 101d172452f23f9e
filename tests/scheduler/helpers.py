"""Objects and waits the scheduler tests share: nodes as a node agent would register them, pods, polling."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from minik.client import Client
from minik.kubelet.kubelet import Kubelet, KubeletSettings
from minik.kubelet.node import NodeConfig, well_known_labels
from minik.kubelet.runtimes.fake import FakeRuntime
from minik.scheduler.framework import Code, CycleState, NodeInfo, PodInfo, StaticNodes

Obj = dict[str, Any]


def node_object(name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110",
                labels: Mapping[str, str] | None = None, taints: list[Obj] | None = None,
                unschedulable: bool = False, extra: Mapping[str, str] | None = None) -> Obj:
    """A Node as a node agent registers it: capacity = allocatable, the well-known labels, Ready."""
    amounts = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "100Gi", **(extra or {})}
    spec: Obj = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                              "kubernetes.io/arch": "amd64", **(labels or {})}},
        "spec": spec,
        "status": {"capacity": amounts, "allocatable": amounts,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "message": "kubelet is posting ready status"}]},
    }


def pod_object(name: str, *, cpu: str | None = None, memory: str | None = None, namespace: str = "default",
               labels: Mapping[str, str] | None = None, **spec: Any) -> Obj:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    container: Obj = {"name": "main", "image": "registry.k8s.io/pause:3.9"}
    if requests:
        container["resources"] = {"requests": requests}
    if "ports" in spec:
        container["ports"] = spec.pop("ports")
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
            "spec": {"containers": [container], **spec}}


async def create_node(client: Client, name: str, **kwargs: Any) -> Obj:
    node = node_object(name, **kwargs)
    created = await client.create("nodes", node)
    # status is the node agent's to write: through the status subresource, as a kubelet does
    created["status"] = node["status"]
    return await client.update_status("nodes", created)


async def wait_for(check: Callable[[], Awaitable[Any]], timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll ``check`` until it returns something truthy; TimeoutError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout}s (last: {value!r})")
        await asyncio.sleep(interval)


async def node_of(client: Client, name: str, namespace: str = "default") -> str:
    pod = await client.get("pods", name, namespace)
    return pod["spec"].get("nodeName") or ""


async def wait_bound(client: Client, name: str, namespace: str = "default", timeout: float = 10.0) -> str:
    return await wait_for(lambda: node_of(client, name, namespace), timeout)


async def events_for(client: Client, name: str, namespace: str = "default") -> list[Obj]:
    """The events schedulers recorded about a pod (the simulated nodes' kubelets record Pulled, Created and
    Started too; those are not the scheduler's business)."""
    listing = await client.list("events", namespace, field_selector=f"involvedObject.name={name}")
    return [e for e in listing["items"] if (e.get("source") or {}).get("component") != "kubelet"]


def node_info(name: str, *, running: list[Obj] | None = None, **kwargs: Any) -> NodeInfo:
    """A NodeInfo for plugin table tests, with the ``running`` pods bound to it."""
    info = NodeInfo(node_object(name, **kwargs))
    for pod in running or []:
        pod = {**pod, "metadata": {"uid": pod["metadata"]["name"], **pod["metadata"]},
               "spec": {**pod["spec"], "nodeName": name}}
        info.add_pod(PodInfo(pod))
    return info


def pod_info(name: str = "p", **kwargs: Any) -> PodInfo:
    pod = pod_object(name, **kwargs)
    pod["metadata"]["uid"] = f"uid-{name}"
    pod["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    return PodInfo(pod)


# -- running one plugin, as the framework does ----------------------------------------------------------------
def filter_results(plugin: Any, pod: PodInfo, nodes: list[NodeInfo], cluster: Any = None) -> dict[str, str]:
    """Each node's verdict from one filter plugin (pre_filter first, as a cycle runs it): "ok", or the status's
    code name and message, e.g. "UNSCHEDULABLE: Insufficient cpu"."""
    state = CycleState(StaticNodes(nodes), cluster)
    pre = getattr(plugin, "pre_filter", None)
    if pre is not None:
        status = pre(state, pod)
        if status.code == Code.SKIP:
            return {n.name: "ok" for n in nodes}
        if not status.ok:
            return {n.name: f"{status.code.name}: {status.message}" for n in nodes}
    results = {}
    for node in nodes:
        status = plugin.filter(state, pod, node)
        results[node.name] = "ok" if status.ok else f"{status.code.name}: {status.message}"
    return results


def score_results(plugin: Any, pod: PodInfo, nodes: list[NodeInfo], cluster: Any = None,
                  all_nodes: list[NodeInfo] | None = None) -> dict[str, int]:
    """One score plugin's normalized scores for ``nodes`` (the feasible ones); ``all_nodes`` is the cluster
    (default: the same nodes). A plugin whose pre_score skips scores nothing: {}."""
    state = CycleState(StaticNodes(all_nodes if all_nodes is not None else nodes), cluster)
    pre = getattr(plugin, "pre_score", None)
    if pre is not None and pre(state, pod, nodes).code == Code.SKIP:
        return {}
    scores = [plugin.score(state, pod, node) for node in nodes]
    normalize = getattr(plugin, "normalize", None)
    if normalize is not None:
        normalize(state, pod, nodes, scores)
    return {n.name: s for n, s in zip(nodes, scores)}


# -- simulated nodes ---------------------------------------------------------------------------------------------
def simulated_node(name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110", zone: str | None = None,
                   labels: Mapping[str, str] | None = None, taints: list[Obj] | None = None,
                   extra: Mapping[str, str] | None = None) -> NodeConfig:
    capacity = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "100Gi", **(extra or {})}
    return NodeConfig(name, "10.99.0.1", capacity, {**well_known_labels(name, zone), **(labels or {})},
                      list(taints or []))


class SimulatedNodes:
    """Starts one fake-runtime kubelet per ``add`` call, serving the nodes given; stops them all at the end."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.kubelets: list[Kubelet] = []

    async def add(self, *nodes: NodeConfig) -> None:
        kubelet = Kubelet(self.client, FakeRuntime(0.0), list(nodes),
                          KubeletSettings(workers=4, resync_seconds=0.0))
        self.kubelets.append(kubelet)
        await kubelet.start()
        await kubelet.wait_registered(timeout=10)

    async def cordon(self, name: str) -> None:
        await self.client.patch("nodes", name, {"spec": {"unschedulable": True}})

    async def stop(self) -> None:
        for kubelet in reversed(self.kubelets):
            await kubelet.stop()


async def scheduled_condition(client: Client, name: str, namespace: str = "default") -> Obj | None:
    """The pod's PodScheduled condition when the scheduler has said it cannot place the pod (status False)."""
    pod = await client.get("pods", name, namespace)
    return next((c for c in pod["status"].get("conditions") or []
                 if c["type"] == "PodScheduled" and c["status"] == "False"), None)
