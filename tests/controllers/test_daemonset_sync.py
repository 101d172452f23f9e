"""DaemonSet syncs against known caches (sample-controller style): the API calls one sync makes."""

from __future__ import annotations

from objects import T0, daemonset, node, pod

from minik.controllers.daemonset import DaemonSetController
from minik.controllers.daemonsetutil import REVISION_HASH_LABEL, revision_hash, target_node
from minik.testing.clock import FakeClock
from minik.testing.controllers import RecordingClient, StaticInformerFactory


def build(ds: dict, nodes: list[dict], pods: list[dict] | None = None) -> tuple[DaemonSetController, RecordingClient]:
    pods = pods or []
    client = RecordingClient([ds, *nodes, *pods])
    factory = StaticInformerFactory(client, {"daemonsets": [ds], "nodes": nodes, "pods": pods})
    return DaemonSetController(client, factory, clock=FakeClock(T0 + 100)), client


def daemon_pod(ds: dict, name: str, node_name: str, *, updated: bool = True, **kw: object) -> dict:
    labels = {"app": ds["metadata"]["name"], REVISION_HASH_LABEL: revision_hash(ds) if updated else "old"}
    return pod(name, labels=labels, owner=ds, node_name=node_name, **kw)  # type: ignore[arg-type]


async def test_each_eligible_node_gets_one_pod_pinned_to_it_with_the_daemon_tolerations() -> None:
    ds = daemonset("agent", nodeSelector={"disk": "ssd"})
    nodes = [node("a", labels={"disk": "ssd"}), node("b", labels={"disk": "ssd"}), node("c"),
             node("d", labels={"disk": "ssd"}, taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])]
    controller, client = build(ds, nodes)
    await controller.sync("default/agent")
    created = [a.body for a in client.writes("create", "pods")]
    assert sorted(target_node(p) for p in created) == ["a", "b"]
    for p in created:
        assert p["metadata"]["labels"] == {"app": "agent", REVISION_HASH_LABEL: revision_hash(ds)}
        assert p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
        terms = p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms["nodeSelectorTerms"][0]["matchFields"][0]["key"] == "metadata.name"
        assert {(t["key"], t["effect"]) for t in p["spec"]["tolerations"]} >= {
            ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"), ("node.kubernetes.io/disk-pressure", "NoSchedule")}
        assert "nodeName" not in p["spec"]  # the scheduler binds it
    status = client.writes("update_status", "daemonsets")[-1].body["status"]
    assert status["desiredNumberScheduled"] == 2 and status["currentNumberScheduled"] == 0


async def test_a_no_execute_taint_removes_the_pod_but_a_new_no_schedule_taint_does_not() -> None:
    ds = daemonset("agent")
    evicting = node("a", taints=[{"key": "gpu", "effect": "NoExecute"}])
    cordoned = node("b", taints=[{"key": "gpu", "effect": "NoSchedule"}])
    pods = [daemon_pod(ds, "agent-a", "a", phase="Running", ready=True),
            daemon_pod(ds, "agent-b", "b", phase="Running", ready=True)]
    controller, client = build(ds, [evicting, cordoned], pods)
    await controller.sync("default/agent")
    assert [a.name for a in client.writes("delete", "pods")] == ["agent-a"]
    assert not client.writes("create", "pods")
    status = client.writes("update_status", "daemonsets")[-1].body["status"]
    assert (status["desiredNumberScheduled"], status["numberMisscheduled"]) == (0, 2)


async def test_a_rolling_update_replaces_no_more_than_max_unavailable_old_pods() -> None:
    ds = daemonset("agent")
    nodes = [node(n) for n in "abc"]
    pods = [daemon_pod(ds, f"agent-{n}", n, updated=False, phase="Running", ready=True) for n in "abc"]
    controller, client = build(ds, nodes, pods)
    await controller.sync("default/agent")
    assert len(client.writes("delete", "pods")) == 1
    assert not client.writes("create", "pods")


async def test_unavailable_old_pods_are_replaced_without_counting_against_max_unavailable() -> None:
    ds = daemonset("agent")
    pods = [daemon_pod(ds, "agent-a", "a", updated=False, phase="Running", ready=True),
            daemon_pod(ds, "agent-b", "b", updated=False, phase="Running", ready=True),
            daemon_pod(ds, "agent-c", "c", updated=False, phase="Pending"),
            daemon_pod(ds, "agent-d", "d", updated=False, phase="Pending")]
    controller, client = build(ds, [node(n) for n in "abcd"], pods)
    await controller.sync("default/agent")
    deleted = sorted(a.name for a in client.writes("delete", "pods"))
    assert deleted[-2:] == ["agent-c", "agent-d"] and len(deleted) == 3  # both broken ones, one available one


async def test_on_delete_keeps_old_pods_and_gives_an_updated_pod_to_a_node_without_one() -> None:
    ds = daemonset("agent", strategy={"type": "OnDelete"})
    pods = [daemon_pod(ds, "agent-a", "a", updated=False, phase="Running", ready=True)]
    controller, client = build(ds, [node("a"), node("b")], pods)
    await controller.sync("default/agent")
    assert not client.writes("delete", "pods")
    [created] = [a.body for a in client.writes("create", "pods")]
    assert target_node(created) == "b" and created["metadata"]["labels"][REVISION_HASH_LABEL] == revision_hash(ds)
    status = client.writes("update_status", "daemonsets")[-1].body["status"]
    assert status["currentNumberScheduled"] == 1 and "updatedNumberScheduled" not in status


async def test_a_failed_daemon_pod_is_deleted_with_a_warning_and_repeated_failures_back_off() -> None:
    ds = daemonset("agent")
    controller, client = build(ds, [node("a")], [daemon_pod(ds, "agent-a", "a", phase="Failed")])
    events: list[tuple[str, str]] = []
    controller.event = lambda obj, type_, reason, message: events.append((type_, reason))  # type: ignore[method-assign]
    await controller.sync("default/agent")
    assert [a.name for a in client.writes("delete", "pods")] == ["agent-a"]
    assert ("Warning", "FailedDaemonPod") in events
    pods = controller.factory.static("pods")  # type: ignore[attr-defined]
    pods.remove(pods.get("default/agent-a"))
    pods.put(daemon_pod(ds, "agent-b", "a", phase="Failed"))  # its replacement failed too
    controller.expectations.forget("default/agent")
    client.actions.clear()
    await controller.sync("default/agent")
    assert not client.writes("delete", "pods")  # within the first second of back-off
    controller.clock.step(1.5)  # type: ignore[attr-defined]
    await controller.sync("default/agent")
    assert [a.name for a in client.writes("delete", "pods")] == ["agent-b"]


async def test_the_pods_of_a_node_that_left_are_deleted_without_waiting_for_its_kubelet() -> None:
    ds = daemonset("agent")
    pods = [daemon_pod(ds, "agent-a", "a", phase="Running", ready=True),
            daemon_pod(ds, "agent-gone", "gone", phase="Running", ready=True)]
    controller, client = build(ds, [node("a")], pods)
    await controller.sync("default/agent")
    [deleted] = client.writes("delete", "pods")
    assert deleted.name == "agent-gone" and deleted.options["grace_period_seconds"] == 0


async def test_status_counts_ready_available_and_updated_pods() -> None:
    ds = daemonset("agent")
    pods = [daemon_pod(ds, "agent-a", "a", phase="Running", ready=True),
            daemon_pod(ds, "agent-b", "b", phase="Running", ready=False),
            daemon_pod(ds, "agent-c", "c", updated=False, phase="Running", ready=True)]
    controller, client = build(ds, [node(n) for n in "abc"], pods)
    await controller.sync("default/agent")
    status = client.stored("daemonsets", "agent", "default")["status"]  # type: ignore[index]
    assert status == {"currentNumberScheduled": 3, "numberMisscheduled": 0, "desiredNumberScheduled": 3,
                      "numberReady": 2, "observedGeneration": 1, "updatedNumberScheduled": 2,
                      "numberAvailable": 2, "numberUnavailable": 1}
