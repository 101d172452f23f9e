"""The scheduling queue with a hand-driven clock: priority then age, backoff doubling from 1 s to 10 s, and the
unschedulable pool that events (or 60 s) empty."""

from __future__ import annotations

from minik.scheduler.queue import ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE, NODE_ADD, QueueSettings, SchedulingQueue
from minik.testing.clock import FakeClock
from tests.scheduler.helpers import pod_info


def _queue() -> tuple[SchedulingQueue, FakeClock]:
    clock = FakeClock(1000.0)
    return SchedulingQueue(QueueSettings(), clock=clock), clock


async def test_pods_come_out_by_priority_then_age() -> None:
    queue, clock = _queue()
    for name, priority in (("old-low", 0), ("high", 100), ("new-low", 0), ("higher", 1000)):
        queue.add(pod_info(name, priority=priority))
        clock.step(1)
    order = [queue.pop_nowait() for _ in range(4)]
    assert [qp.key for qp in order if qp] == ["default/higher", "default/high", "default/old-low", "default/new-low"]
    assert queue.pop_nowait() is None


async def test_failed_attempts_back_off_from_one_second_doubling_to_ten() -> None:
    queue, clock = _queue()
    queue.add(pod_info("p"))
    qp = queue.pop_nowait()
    waits = []
    for _ in range(6):
        assert qp is not None
        queue.add_backoff(qp)
        started = clock.now()
        while (popped := queue.pop_nowait()) is None:
            clock.step(0.25)
            queue.flush()
        waits.append(clock.now() - started)
        qp = popped
    assert waits == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


async def test_unschedulable_pods_wait_for_an_event_that_could_help_them() -> None:
    queue, clock = _queue()
    queue.add(pod_info("tainted"))
    queue.add(pod_info("hungry"))
    tainted, hungry = queue.pop_nowait(), queue.pop_nowait()
    assert tainted is not None and hungry is not None
    queue.add_unschedulable(tainted, {"TaintToleration"})
    queue.add_unschedulable(hungry, {"NodeResourcesFit"})
    assert queue.counts() == {"active": 0, "backoff": 0, "unschedulable": 2}
    # a pod going away frees resources: only the pod short of them moves (to backoff: its 1 s is not over)
    assert queue.move_all(ASSIGNED_POD_DELETE) == 1
    assert queue.counts() == {"active": 0, "backoff": 1, "unschedulable": 1}
    assert queue.move_all(ASSIGNED_POD_ADD) == 0
    clock.step(1)
    assert queue.move_all(NODE_ADD) == 1  # a new node may help anyone; its backoff is over: active
    queue.flush()
    assert queue.counts() == {"active": 2, "backoff": 0, "unschedulable": 0}


async def test_unschedulable_pods_get_another_try_after_sixty_seconds_at_the_latest() -> None:
    queue, clock = _queue()
    queue.add(pod_info("stuck"))
    stuck = queue.pop_nowait()
    assert stuck is not None
    queue.add_unschedulable(stuck, {"NodeAffinity"})
    clock.step(59)
    queue.flush()
    assert queue.counts()["unschedulable"] == 1
    clock.step(1)
    queue.flush()
    assert queue.counts() == {"active": 1, "backoff": 0, "unschedulable": 0}


async def test_an_update_to_an_unschedulable_pod_gives_it_another_try() -> None:
    queue, clock = _queue()
    queue.add(pod_info("p"))
    qp = queue.pop_nowait()
    assert qp is not None
    queue.add_unschedulable(qp, {"NodeAffinity"})
    clock.step(2)
    queue.update(pod_info("p"), retry=False)  # only its status changed (the scheduler's own write)
    assert queue.counts()["unschedulable"] == 1
    queue.update(pod_info("p", nodeSelector={"disk": "ssd"}))
    popped = queue.pop_nowait()
    assert popped is not None and popped.info.node_selector == {"disk": "ssd"}


async def test_a_deleted_pod_leaves_the_queue_wherever_it_waits() -> None:
    queue, _ = _queue()
    queue.add(pod_info("a"))
    queue.add(pod_info("b"))
    queue.delete("default/a")
    popped = queue.pop_nowait()
    assert popped is not None and popped.key == "default/b"
    queue.add_unschedulable(popped, set())
    queue.delete("default/b")
    assert len(queue) == 0
