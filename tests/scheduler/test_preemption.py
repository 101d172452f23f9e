"""Preemption's dry run: which node and which victims (fewest, least important), and Kubernetes' message when
preemption cannot help."""

from __future__ import annotations

import random

import pytest

from minik.scheduler.algorithm import Algorithm, Diagnosis, FitError
from minik.scheduler.framework import NodeInfo, PodInfo, StaticNodes
from minik.scheduler.plugins.registry import build_profile
from minik.scheduler.preemption import find_victims, num_candidates
from tests.scheduler.helpers import node_info, pod_info, pod_object

HOST = "kubernetes.io/hostname"


def running(name: str, priority: int, cpu: str = "1", **spec: object) -> dict:
    return pod_object(name, cpu=cpu, priority=priority, **spec)


def dry_run(pod: PodInfo, nodes: list[NodeInfo]) -> tuple[str | None, list[str], str]:
    """(node, victims, the diagnosis message) for a pod no node fits."""
    node_list = StaticNodes(nodes)
    algorithm = Algorithm(build_profile())
    with pytest.raises(FitError) as caught:
        algorithm.schedule(pod, node_list)
    diagnosis: Diagnosis = caught.value.diagnosis
    found = find_victims(algorithm, pod, node_list, diagnosis, random.Random(3))
    if found is None:
        return None, [], diagnosis.message()
    node, victims = found
    return node.name, sorted(v.name for v in victims), diagnosis.message()


def test_the_node_whose_victims_matter_least_is_chosen() -> None:
    nodes = [node_info("a", cpu="2", running=[running("a-important", 50, cpu="2")]),
             node_info("b", cpu="2", running=[running("b-minor", 10, cpu="2")])]
    assert dry_run(pod_info(cpu="2", priority=100), nodes)[:2] == ("b", ["b-minor"])


def test_the_node_with_the_fewest_victims_is_chosen_among_equals() -> None:
    nodes = [node_info("a", cpu="2", running=[running("a-1", 10), running("a-2", 10)]),
             node_info("b", cpu="2", running=[running("b-1", 10, cpu="2")])]
    assert dry_run(pod_info(cpu="2", priority=100), nodes)[:2] == ("b", ["b-1"])


def test_only_as_many_pods_as_needed_are_evicted_the_least_important_first() -> None:
    pods = [running("keep-high", 40), running("evict-low", 5), running("keep-mid", 20), running("keep-other", 20)]
    nodes = [node_info("a", cpu="4", running=pods)]
    assert dry_run(pod_info(cpu="1", priority=100), nodes)[:2] == ("a", ["evict-low"])


def test_pods_of_equal_or_higher_priority_are_never_victims() -> None:
    nodes = [node_info("a", cpu="2", running=[running("peer", 100, cpu="2")])]
    node, victims, message = dry_run(pod_info(cpu="2", priority=100), nodes)
    assert (node, victims) == (None, [])
    assert message == ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
                       "1 No preemption victims found for incoming pod.")


def test_nodes_that_evictions_cannot_fix_are_not_helpful() -> None:
    nodes = [node_info("tainted", taints=[{"key": "gpu", "effect": "NoSchedule"}],
                       running=[running("low", 0, cpu="4")]),
             node_info("full", cpu="2", running=[running("same", 100, cpu="2")])]
    node, _, message = dry_run(pod_info(cpu="2", priority=100), nodes)
    assert node is None
    assert message.endswith("preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
                            "1 Preemption is not helpful for scheduling.")


def test_a_pod_that_may_not_preempt_says_so() -> None:
    nodes = [node_info("a", cpu="1", running=[running("low", 0)])]
    _, _, message = dry_run(pod_info(cpu="1", priority=100, preemptionPolicy="Never"), nodes)
    assert message == ("0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to "
                       "preemptionPolicy=Never.")


def test_evicting_a_pod_the_preemptor_has_anti_affinity_to_makes_room() -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "noisy"}}, "topologyKey": HOST}]}}
    nodes = [node_info("a", running=[running("noisy", 0, cpu="100m", labels={"app": "noisy"}),
                                     running("quiet", 0, cpu="100m", labels={"app": "quiet"})])]
    node, victims, _ = dry_run(pod_info(cpu="100m", priority=100, affinity=anti), nodes)
    assert (node, victims) == ("a", ["noisy"])


@pytest.mark.parametrize("nodes, candidates", [(5, 5), (500, 100), (5000, 500)])
def test_the_dry_run_looks_for_a_bounded_number_of_candidates(nodes: int, candidates: int) -> None:
    assert num_candidates(nodes) == candidates
