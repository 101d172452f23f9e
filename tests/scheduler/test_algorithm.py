"""One scheduling decision over a fixed set of nodes: the bounded sample of feasible nodes, random tie-breaking,
Kubernetes' failure message, nominated pods, and the weighted sum of the default profile's scores."""

from __future__ import annotations

import random

import pytest

from minik.scheduler.algorithm import Algorithm, Diagnosis, FitError, num_feasible_nodes_to_find
from minik.scheduler.framework import SUCCESS, CycleState, NodeInfo, PodInfo, StaticNodes, Status, unschedulable
from minik.scheduler.plugins.registry import Profile, build_profile
from tests.scheduler.helpers import node_info, pod_info, pod_object

GPU = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize("nodes, percentage, wanted", [
    (50, 0, 50),        # small clusters: every node
    (99, 30, 99),
    (100, 0, 100),      # 50% of 100 is below the floor of 100
    (1000, 0, 420),     # adaptive: 50% less 1% per 125 nodes
    (5000, 0, 500),     # 10%
    (10000, 0, 500),    # never below 5%
    (5000, 30, 1500),   # configured
    (200, 10, 100),     # at least 100 nodes
    (5000, 100, 5000),
])
def test_how_many_feasible_nodes_are_found_before_scoring(nodes: int, percentage: int, wanted: int) -> None:
    assert num_feasible_nodes_to_find(nodes, percentage) == wanted


def test_large_clusters_are_sampled_from_a_rotating_start() -> None:
    nodes = StaticNodes([node_info(f"n{i:04d}") for i in range(1000)])
    algorithm = Algorithm(build_profile(), rng=random.Random(1))
    first = algorithm.schedule(pod_info("a"), nodes)
    assert (first.evaluated_nodes, first.feasible_nodes) == (420, 420)
    assert algorithm.next_start_node_index == 420
    algorithm.schedule(pod_info("b"), nodes)
    assert algorithm.next_start_node_index == 840
    with_all = Algorithm(build_profile(), percentage_of_nodes_to_score=100)
    assert with_all.schedule(pod_info("c"), nodes).feasible_nodes == 1000


@pytest.mark.parametrize("ports", [False, True])  # the column filters alone, or a per-node filter after them
def test_the_sample_is_the_first_feasible_nodes_from_the_rotating_start_wrapping_around(ports: bool) -> None:
    rng = random.Random(3)
    infos = [node_info(f"n{i:03d}", cpu=rng.choice(["1", "4"]), unschedulable=rng.random() < 0.2,
                       running=[pod_object("web", ports=[{"containerPort": 80, "hostPort": 8080}])]
                       if rng.random() < 0.2 else [])
             for i in range(300)]
    nodes = StaticNodes(infos)
    algorithm = Algorithm(build_profile(), percentage_of_nodes_to_score=10)  # 100 of 300 nodes
    pod = pod_info("p", cpu="2", ports=[{"containerPort": 80, "hostPort": 8080}] if ports else [])
    for start in (0, 1, 150, 250, 299):
        algorithm.next_start_node_index = start
        state = algorithm.new_state(nodes)
        assert algorithm.run_pre_filters(state, pod) is None
        order = infos[start:] + infos[:start]
        expected = [n.name for n in order if algorithm.run_filters(state, pod, n).ok][:100]
        feasible, rows = algorithm.find_feasible(state, pod, infos, Diagnosis(len(infos)))
        assert [n.name for n in feasible] == expected
        assert [infos[r].name for r in rows.tolist()] == expected
        last = infos.index(feasible[-1]) if len(expected) == 100 else start - 1
        assert algorithm.next_start_node_index == (last + 1) % 300


def test_ties_are_broken_at_random_among_the_best_nodes() -> None:
    nodes = StaticNodes([node_info("a"), node_info("b"), node_info("c"), node_info("small", cpu="1")])
    algorithm = Algorithm(build_profile(), rng=random.Random(7))
    chosen = {algorithm.schedule(pod_info(f"p{i}", cpu="100m"), nodes).node for i in range(60)}
    assert chosen == {"a", "b", "c"}


def test_the_best_node_by_weighted_scores_wins() -> None:
    nodes = StaticNodes([node_info("busy", running=[pod_object("r", cpu="3")]), node_info("idle"),
                         node_info("spot", taints=[{"key": "spot", "effect": "PreferNoSchedule"}])])
    # idle and spot fit equally; spot's PreferNoSchedule taint (weight 3) decides
    assert Algorithm(build_profile()).schedule(pod_info(cpu="1"), nodes).node == "idle"


def test_the_failure_message_counts_each_reason_as_kubernetes_does() -> None:
    nodes = StaticNodes([node_info("gpu-1", taints=[GPU]), node_info("gpu-2", taints=[GPU]),
                         node_info("small", cpu="1")])
    with pytest.raises(FitError) as caught:
        Algorithm(build_profile()).schedule(pod_info(cpu="2"), nodes)
    assert str(caught.value) == ("0/3 nodes are available: 1 Insufficient cpu, "
                                 "2 node(s) had untolerated taint {dedicated: gpu}.")
    assert caught.value.diagnosis.unschedulable_plugins == {"NodeResourcesFit", "TaintToleration"}
    with pytest.raises(FitError) as none:
        Algorithm(build_profile()).schedule(pod_info(), StaticNodes([]))
    assert str(none.value) == "no nodes available to schedule pods"


class RefuseAll:
    """A plugin whose pre-filter rules out every node at once."""

    name = "RefuseAll"

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        return unschedulable("pod is not welcome here")

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS


def test_a_pre_filter_failure_is_said_once_not_once_per_node() -> None:
    profile = build_profile()
    algorithm = Algorithm(Profile((RefuseAll(), *profile.plugins), profile.weights))
    with pytest.raises(FitError) as caught:
        algorithm.schedule(pod_info(), StaticNodes([node_info("a"), node_info("b")]))
    assert str(caught.value) == "0/2 nodes are available: pod is not welcome here."


def test_pods_leave_room_for_more_important_pods_nominated_to_a_node() -> None:
    nominee = pod_info("nominee", cpu="3", priority=100)

    def node_b() -> StaticNodes:
        return StaticNodes([node_info("b", cpu="8")], nominations={"b": [nominee]})

    algorithm = Algorithm(build_profile())
    # 8 cpus, 3 promised to the nominee: 3 more fit, 6 more do not...
    assert algorithm.schedule(pod_info("small", cpu="3"), node_b()).node == "b"
    with pytest.raises(FitError) as caught:
        algorithm.schedule(pod_info("big", cpu="6"), node_b())
    assert str(caught.value) == "0/1 nodes are available: 1 Insufficient cpu."
    # ...unless the pod is more important than the nominee
    assert algorithm.schedule(pod_info("urgent", cpu="6", priority=200), node_b()).node == "b"


def test_a_nominated_pod_goes_to_its_node_when_it_fits() -> None:
    nodes = StaticNodes([node_info(f"n{i}") for i in range(5)])
    algorithm = Algorithm(build_profile())
    assert algorithm.schedule(pod_info(), nodes, nominated_node="n3").node == "n3"
    full = StaticNodes([node_info("n0"), node_info("n1", running=[pod_object("r", cpu="4")])])
    assert algorithm.schedule(pod_info(cpu="1"), full, nominated_node="n1").node == "n0"


def test_explain_gives_every_node_its_verdict_and_every_feasible_node_its_scores() -> None:
    nodes = StaticNodes([node_info("gpu", taints=[GPU]), node_info("big", cpu="16", memory="64Gi"),
                         node_info("medium", cpu="8", memory="16Gi")])
    explained = Algorithm(build_profile()).explain(pod_info(cpu="2", memory="1Gi"), nodes)
    verdicts = {e.node: e for e in explained.nodes}
    assert verdicts["gpu"].status.plugin == "TaintToleration"
    assert not verdicts["gpu"].scores
    assert set(verdicts["big"].scores) == {"NodeResourcesFit", "NodeResourcesBalancedAllocation"}
    assert verdicts["big"].total == sum(verdicts["big"].scores.values())
    assert (explained.chosen, explained.message) == ("big", "2/3 nodes are feasible")
