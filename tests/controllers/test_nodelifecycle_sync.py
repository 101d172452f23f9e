"""Node lifecycle controller checks against known caches, on a settable clock (sample-controller style)."""

from __future__ import annotations

from typing import Any

from objects import T0, node, pod

from minik.api.timestamps import rfc3339
from minik.controllers.nodelifecycle import NodeLifecycleController
from minik.testing.clock import FakeClock
from minik.testing.controllers import RecordingClient, StaticInformerFactory

UNREACHABLE = "node.kubernetes.io/unreachable"


def lease(name: str, renewed: float) -> dict:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease", "uid": f"lease-{name}",
                         "resourceVersion": "1"},
            "spec": {"holderIdentity": name, "renewTime": rfc3339(renewed)}}


class Harness:
    def __init__(self, nodes: list[dict], pods: list[dict] | None = None, **settings: Any) -> None:
        pods = pods or []
        leases = [lease(n["metadata"]["name"], T0) for n in nodes]
        self.client = RecordingClient([*nodes, *pods, *leases])
        self.factory = StaticInformerFactory(self.client, {"nodes": nodes, "pods": pods, "leases": leases})
        self.clock = FakeClock(T0)
        self.controller = NodeLifecycleController(self.client, self.factory, clock=self.clock,
                                                  grace_period_seconds=40, **settings)
        self.events: list[tuple[str, str]] = []
        self.controller.event = lambda obj, t, r, m: self.events.append((obj["kind"], r))  # type: ignore[method-assign]

    def refresh_nodes(self) -> None:
        informer = self.factory.static("nodes")
        for (plural, _, _), obj in self.client.objects.items():
            if plural == "nodes":
                informer.put(obj)

    def renew(self, name: str) -> None:
        self.factory.static("leases").put(lease(name, self.clock.now()))

    def node(self, name: str) -> dict:
        return self.client.stored("nodes", name)  # type: ignore[return-value]

    def taints(self, name: str) -> set[tuple[str, str]]:
        return {(t["key"], t["effect"]) for t in self.node(name)["spec"].get("taints") or []}


async def test_a_node_that_stops_renewing_its_lease_turns_unknown_and_is_tainted_unreachable() -> None:
    running = pod("web-1", node_name="n1", phase="Running", ready=True)
    h = Harness([node("n1"), node("n2"), node("n3")], [running])
    await h.controller.monitor_once()
    h.clock.step(30)
    for name in ("n2", "n3"):
        h.renew(name)
    await h.controller.monitor_once()
    assert not h.client.writes()
    h.clock.step(15)  # n1: 45 s without news, past the 40 s grace period
    for name in ("n2", "n3"):
        h.renew(name)
    await h.controller.monitor_once()
    ready = next(c for c in h.node("n1")["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
    pod_ready = [c for c in h.client.stored("pods", "web-1", "default")["status"]["conditions"]  # type: ignore[index]
                 if c["type"] == "Ready"]
    assert pod_ready[0]["status"] == "False"
    assert ("Node", "NodeNotReady") in h.events and ("Pod", "NodeNotReady") in h.events
    h.refresh_nodes()
    await h.controller.taint_pass()
    h.refresh_nodes()
    await h.controller.sync("n1")  # the NoSchedule pass, as the node's update event would start it
    assert h.taints("n1") == {(UNREACHABLE, "NoExecute"), (UNREACHABLE, "NoSchedule")}
    assert all(t.get("timeAdded") for t in h.node("n1")["spec"]["taints"])
    assert h.node("n2")["spec"].get("taints") is None


async def test_a_node_that_is_ready_again_loses_the_taints() -> None:
    taints = [{"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": rfc3339(T0)},
              {"key": UNREACHABLE, "effect": "NoSchedule", "timeAdded": rfc3339(T0)}]
    h = Harness([node("n1", taints=taints), node("n2")])
    await h.controller.monitor_once()
    assert h.taints("n1") == {(UNREACHABLE, "NoSchedule")}
    h.refresh_nodes()
    await h.controller.sync("n1")
    assert h.taints("n1") == set()


async def test_tainting_is_rate_limited_per_zone() -> None:
    nodes = [node(f"n{i}", ready="Unknown" if i < 2 else "True") for i in range(5)]
    h = Harness(nodes, eviction_rate=0.1)
    await h.controller.monitor_once()
    await h.controller.taint_pass()
    await h.controller.taint_pass()
    assert len(h.client.writes("patch", "nodes")) == 1
    h.clock.step(10)
    await h.controller.taint_pass()
    assert len(h.client.writes("patch", "nodes")) == 2


async def test_when_every_node_is_down_no_node_is_tainted() -> None:
    h = Harness([node("n1", ready="Unknown"), node("n2", ready="Unknown")])
    await h.controller.monitor_once()
    await h.controller.taint_pass()
    assert not h.client.writes("patch", "nodes")


async def test_no_schedule_taints_follow_the_conditions_and_cordoning() -> None:
    n = node("n1")
    n["status"]["conditions"].append({"type": "MemoryPressure", "status": "True"})
    n["spec"]["unschedulable"] = True
    h = Harness([n])
    await h.controller.sync("n1")
    assert h.taints("n1") == {("node.kubernetes.io/memory-pressure", "NoSchedule"),
                              ("node.kubernetes.io/unschedulable", "NoSchedule")}
