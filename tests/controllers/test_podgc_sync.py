"""The pod garbage collector's passes against known caches, on a settable clock (sample-controller style)."""

from __future__ import annotations

from objects import T0, node, pod

from minik.controllers.podgc import PASS, PodGCController
from minik.testing.clock import FakeClock
from minik.testing.controllers import RecordingClient, StaticInformerFactory

OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}


class Harness:
    def __init__(self, pods: list[dict], nodes: list[dict], threshold: int = 12_500) -> None:
        self.client = RecordingClient([*pods, *nodes])
        self.factory = StaticInformerFactory(self.client, {"pods": pods, "nodes": nodes})
        self.clock = FakeClock(T0)
        self.controller = PodGCController(self.client, self.factory, clock=self.clock, terminated_threshold=threshold)

    async def collect(self) -> None:
        await self.controller.sync(PASS)

    def deleted(self) -> list[tuple[str, int | None]]:
        return [(a.name, a.options.get("grace_period_seconds")) for a in self.client.writes("delete")]


async def test_pods_on_a_node_that_is_gone_are_failed_and_deleted_after_the_quarantine() -> None:
    h = Harness([pod("web-1", node_name="gone", phase="Running"), pod("web-2", node_name="n1", phase="Running")],
                [node("n1")])
    await h.collect()
    assert h.deleted() == []  # the cache may lag: the node is quarantined first
    h.clock.step(39)
    await h.collect()
    assert h.deleted() == []
    h.clock.step(2)
    await h.collect()
    assert h.deleted() == [("web-1", 0)]
    status = h.client.writes("patch_status")[0].body["status"]
    assert status["phase"] == "Failed"
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("DisruptionTarget", "DeletionByPodGC", "PodGC: node no longer exists")]


async def test_a_node_only_missing_from_the_cache_keeps_its_pods() -> None:
    n1 = node("n1")
    h = Harness([pod("web-1", node_name="n1", phase="Running")], [])
    h.client.add(n1)  # the API has it; the cache has not caught up
    await h.collect()
    h.clock.step(60)
    await h.collect()
    assert h.deleted() == []


async def test_a_node_that_comes_back_in_time_keeps_its_pods() -> None:
    h = Harness([pod("web-1", node_name="n1", phase="Running")], [])
    await h.collect()
    h.factory.static("nodes").put(node("n1"))
    h.clock.step(30)
    await h.collect()
    h.factory.static("nodes").deleted(node("n1"))
    h.clock.step(30)
    await h.collect()  # missing again: a new quarantine starts
    assert h.deleted() == []


async def test_an_unscheduled_pod_being_deleted_is_deleted_at_once() -> None:
    h = Harness([pod("pending", deleting=True), pod("waiting")], [])
    await h.collect()
    assert h.deleted() == [("pending", 0)]


async def test_a_terminating_pod_on_an_out_of_service_node_is_failed_and_deleted() -> None:
    down = node("down", ready="False", taints=[OUT_OF_SERVICE])
    h = Harness([pod("stuck", node_name="down", phase="Running", deleting=True),
                 pod("running", node_name="down", phase="Running"),
                 pod("elsewhere", node_name="up", phase="Running", deleting=True)], [down, node("up")])
    await h.collect()
    assert h.deleted() == [("stuck", 0)]
    assert h.client.writes("patch_status")[0].body == {"status": {"phase": "Failed"}}


async def test_terminated_pods_over_the_threshold_go_oldest_first() -> None:
    pods = [pod(f"done-{i}", node_name="n1", phase="Succeeded" if i % 2 else "Failed", created=T0 + i)
            for i in range(5)]
    h = Harness([*reversed(pods), pod("live", node_name="n1", phase="Running", created=T0 - 100)], [node("n1")],
                threshold=3)
    await h.collect()
    assert h.deleted() == [("done-0", 0), ("done-1", 0)]


async def test_a_threshold_of_zero_keeps_every_terminated_pod() -> None:
    h = Harness([pod(f"done-{i}", node_name="n1", phase="Succeeded") for i in range(3)], [node("n1")], threshold=0)
    await h.collect()
    assert h.deleted() == []


async def test_each_pass_schedules_the_next_one() -> None:
    h = Harness([], [])
    await h.collect()
    assert len(h.controller.queue) == 0
    h.clock.step(20)
    assert len(h.controller.queue) == 1
