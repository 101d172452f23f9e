"""Taint eviction syncs against known caches, on a settable clock (sample-controller style)."""

from __future__ import annotations

from objects import T0, node, pod

from minik.controllers.tainteviction import TaintEvictionController
from minik.informers import NODE_NAME_INDEX, object_key
from minik.testing.clock import FakeClock
from minik.testing.controllers import RecordingClient, StaticInformerFactory

UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}


def tolerating(seconds: int | None) -> list[dict]:
    toleration = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return [toleration]


class Harness:
    def __init__(self, p: dict, n: dict) -> None:
        self.client = RecordingClient([p, n])
        self.factory = StaticInformerFactory(self.client, {"pods": [p], "nodes": [n]})
        self.clock = FakeClock(T0)
        self.controller = TaintEvictionController(self.client, self.factory, clock=self.clock)
        self.events: list[str] = []
        self.controller.event = lambda obj, t, r, m: self.events.append(m)  # type: ignore[method-assign]

    async def sync(self) -> None:
        await self.controller.sync("default/web-1")


async def test_a_pod_that_does_not_tolerate_a_no_execute_taint_is_evicted_at_once() -> None:
    h = Harness(pod("web-1", node_name="n1", phase="Running"), node("n1", taints=[UNREACHABLE]))
    await h.sync()
    assert [(a.verb, a.name) for a in h.client.writes()] == [("patch_status", "web-1"), ("delete", "web-1")]
    condition = h.client.writes("patch_status")[0].body["status"]["conditions"][0]
    assert (condition["type"], condition["reason"]) == ("DisruptionTarget", "DeletionByTaintManager")
    assert h.events == ["Marking for deletion Pod default/web-1"]


async def test_a_pod_tolerating_the_taint_for_a_while_is_evicted_when_its_time_runs_out() -> None:
    h = Harness(pod("web-1", node_name="n1", phase="Running", tolerations=tolerating(300)),
                node("n1", taints=[UNREACHABLE]))
    await h.sync()
    assert not h.client.writes()
    h.clock.step(299)
    assert len(h.controller.queue) == 0
    h.clock.step(2)
    assert len(h.controller.queue) == 1
    await h.sync()
    assert [a.verb for a in h.client.writes()] == ["patch_status", "delete"]


async def test_a_pod_tolerating_the_taint_for_ever_stays() -> None:
    h = Harness(pod("web-1", node_name="n1", phase="Running", tolerations=tolerating(None)),
                node("n1", taints=[UNREACHABLE]))
    await h.sync()
    h.clock.step(10_000)
    await h.sync()
    assert not h.client.writes()


async def test_a_taint_that_goes_in_time_cancels_the_eviction() -> None:
    h = Harness(pod("web-1", node_name="n1", phase="Running", tolerations=tolerating(60)),
                node("n1", taints=[UNREACHABLE]))
    await h.sync()
    h.factory.static("nodes").put(node("n1"))
    h.clock.step(61)
    await h.sync()
    assert not h.client.writes()
    assert h.events == ["Cancelling deletion of Pod default/web-1"]


async def test_a_tainted_node_requeues_only_the_pods_bound_to_it() -> None:
    h = Harness(pod("web-1", node_name="n1", phase="Running"), node("n1"))
    c = h.controller
    pods = h.factory.static("pods")
    for p in (pod("web-2", node_name="n2"), pod("web-3")):
        pods.added(p)
    pods.updated(pod("web-2", node_name="n1"))
    pods.deleted(pod("web-1", node_name="n1"))
    assert [object_key(p) for p in pods.by_index(NODE_NAME_INDEX, "n1")] == ["default/web-2"]
    while len(c.queue):
        c.queue.done(await c.queue.get())
    c._node_updated(node("n1"), node("n1", taints=[UNREACHABLE]))
    assert len(c.queue) == 1 and await c.queue.get() == "default/web-2"
