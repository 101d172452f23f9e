"""Table tests for NodeResourcesFit (filter; LeastAllocated and MostAllocated scores) and
NodeResourcesBalancedAllocation."""

from __future__ import annotations

import pytest

from minik.scheduler.framework import PodInfo
from minik.scheduler.plugins.balanced_allocation import BalancedAllocation
from minik.scheduler.plugins.node_resources_fit import MOST_ALLOCATED, NodeResourcesFit
from tests.scheduler.helpers import filter_results, node_info, pod_info, pod_object, score_results


def _container(name: str, **requests: str) -> dict:
    return {"name": name, "image": "app", "resources": {"requests": requests}}


@pytest.mark.parametrize("spec, node, existing, expected", [
    ({"containers": [_container("a", cpu="500m", memory="1Gi")]}, {"cpu": "1", "memory": "2Gi"}, [], "ok"),
    ({"containers": [_container("a", cpu="1500m")]}, {"cpu": "1"}, [], "Insufficient cpu"),
    ({"containers": [_container("a", cpu="600m"), _container("b", cpu="600m")]}, {"cpu": "1"}, [],
     "Insufficient cpu"),  # containers add up
    ({"containers": [_container("a", memory="1e3")]}, {"memory": "1000"}, [], "ok"),  # 1e3 bytes
    ({"containers": [_container("a", memory="1001")]}, {"memory": "1e3"}, [], "Insufficient memory"),
    ({"containers": [_container("a", cpu="2", memory="16Gi")]}, {"cpu": "1", "memory": "8Gi"}, [],
     "Insufficient cpu, Insufficient memory"),
    ({"containers": [_container("a", cpu="500m")]}, {"cpu": "1"}, [{"cpu": "600m"}], "Insufficient cpu"),
    ({"containers": [_container("a")]}, {"pods": "1"}, [{}], "Too many pods"),
    ({"containers": [_container("a", **{"ephemeral-storage": "200Gi"})]}, {}, [], "Insufficient ephemeral-storage"),
    ({"containers": [_container("a", **{"example.com/gpu": "2"})]}, {"extra": {"example.com/gpu": "1"}}, [],
     "Insufficient example.com/gpu"),
    ({"containers": [_container("a", **{"example.com/gpu": "1"})]}, {"extra": {"example.com/gpu": "1"}}, [], "ok"),
    ({"containers": [_container("a", **{"example.com/gpu": "1"})]}, {}, [], "Insufficient example.com/gpu"),
    # the largest init container counts when it exceeds the containers' sum
    ({"containers": [_container("a", cpu="500m")], "initContainers": [_container("init", cpu="3")]}, {"cpu": "2"},
     [], "Insufficient cpu"),
    ({"containers": [_container("a", cpu="1500m")], "initContainers": [_container("init", cpu="1")]},
     {"cpu": "2"}, [], "ok"),
    # a sidecar (an init container that keeps running) adds to the containers
    ({"containers": [_container("a", cpu="1500m")],
      "initContainers": [{**_container("proxy", cpu="1"), "restartPolicy": "Always"}]}, {"cpu": "2"}, [],
     "Insufficient cpu"),
    ({"containers": [_container("a", cpu="500m")], "overhead": {"cpu": "600m"}}, {"cpu": "1"}, [],
     "Insufficient cpu"),
])
def test_node_resources_fit_counts_every_resource_the_pod_requests(spec: dict, node: dict, existing: list,
                                                                     expected: str) -> None:
    pod = PodInfo({"metadata": {"name": "p", "namespace": "default"}, "spec": spec})
    running = [pod_object(f"r{i}", **requests) for i, requests in enumerate(existing)]
    result = filter_results(NodeResourcesFit(), pod, [node_info("n", running=running, **node)])["n"]
    assert result == (expected if expected == "ok" else f"UNSCHEDULABLE: {expected}")


def test_least_allocated_prefers_emptier_nodes_and_most_allocated_fuller_ones() -> None:
    nodes = [node_info("empty", cpu="4", memory="8Gi"),
             node_info("half", cpu="4", memory="8Gi", running=[pod_object("r", cpu="1", memory="2Gi")])]
    pod = pod_info(cpu="1", memory="2Gi")
    # (4000 - 1000) / 4000 and (8Gi - 2Gi) / 8Gi -> 75; with the running pod: 50
    assert score_results(NodeResourcesFit(), pod, nodes) == {"empty": 75, "half": 50}
    assert score_results(NodeResourcesFit(MOST_ALLOCATED), pod, nodes) == {"empty": 25, "half": 50}


def test_pods_without_requests_count_as_kubernetes_non_zero_defaults_when_scoring() -> None:
    # 100m and 200Mi: (1000 - 100) / 1000 -> 90, (1000Mi - 200Mi) / 1000Mi -> 80, averaged 85
    node = node_info("n", cpu="1", memory="1000Mi")
    assert score_results(NodeResourcesFit(), pod_info(), [node]) == {"n": 85}


@pytest.mark.parametrize("cpu, memory, score", [
    ("1", "4Gi", 87),   # fractions 0.25 and 0.5: 1 - |0.25 - 0.5| / 2
    ("2", "4Gi", 100),  # both 0.5
    ("4", "0", 50),     # 1.0 and 0.0
    ("8", "16Gi", 100),  # both capped at 1.0
])
def test_balanced_allocation_prefers_equal_cpu_and_memory_fractions(cpu: str, memory: str, score: int) -> None:
    nodes = [node_info("n", cpu="4", memory="8Gi")]
    pod = pod_info(cpu=cpu, memory=memory) if memory != "0" else pod_info(cpu=cpu)
    assert score_results(BalancedAllocation(), pod, nodes) == {"n": score}
