"""Table tests for PodTopologySpread: maxSkew over zones and hostnames with DoNotSchedule, a node missing the
key, minDomains, the node inclusion policies; ScheduleAnyway and the default constraints as scores."""

from __future__ import annotations

from typing import Any

import pytest

from minik.scheduler.framework import PodInfo
from minik.scheduler.objects import ClusterObjects
from minik.scheduler.plugins.pod_topology_spread import PodTopologySpread
from tests.scheduler.helpers import filter_results, node_info, pod_info, pod_object, score_results

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
SKEWED = "UNSCHEDULABLE: node(s) didn't match pod topology spread constraints"
MISSING = ("UNSCHEDULABLE_AND_UNRESOLVABLE: node(s) didn't match pod topology spread constraints "
           "(missing required label)")
ZONES = {"n1": "a", "n2": "a", "n3": "b", "n4": "b"}


def constraint(key: str, max_skew: int = 1, when: str = "DoNotSchedule", **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}}, **extra}


def web(i: int) -> dict:
    return pod_object(f"web-{i}", labels={"app": "web"})


def nodes_with(counts: dict[str, int], zones: dict[str, str | None] = ZONES) -> list:
    """Nodes (n1, n2 in zone a; n3, n4 in zone b) running ``counts[node]`` web pods each."""
    running = 0
    nodes = []
    for name, zone in zones.items():
        pods = [web(running + i) for i in range(counts.get(name, 0))]
        running += len(pods)
        nodes.append(node_info(name, labels={ZONE: zone} if zone else {}, running=pods))
    return nodes


@pytest.mark.parametrize("constraints, counts, expected", [
    # zone a runs 2, zone b none: a third in zone a would make the skew 3
    ([constraint(ZONE)], {"n1": 1, "n2": 1}, {"n1": SKEWED, "n2": SKEWED, "n3": "ok", "n4": "ok"}),
    ([constraint(ZONE, max_skew=3)], {"n1": 1, "n2": 1}, {"n1": "ok", "n2": "ok", "n3": "ok", "n4": "ok"}),
    ([constraint(HOST)], {"n1": 1, "n2": 1}, {"n1": SKEWED, "n2": SKEWED, "n3": "ok", "n4": "ok"}),
    ([constraint(HOST)], {"n1": 1, "n2": 1, "n3": 1, "n4": 1}, {"n1": "ok", "n2": "ok", "n3": "ok", "n4": "ok"}),
    # every constraint must hold
    ([constraint(ZONE), constraint(HOST)], {"n1": 1, "n3": 1}, {"n1": SKEWED, "n2": "ok", "n3": SKEWED, "n4": "ok"}),
    # with two zones of 2 and 1 pods, maxSkew 2 holds... unless minDomains 3 makes the minimum 0
    ([constraint(ZONE, max_skew=2)], {"n1": 2, "n3": 1}, {"n1": "ok", "n2": "ok", "n3": "ok", "n4": "ok"}),
    ([constraint(ZONE, max_skew=2, minDomains=3)], {"n1": 2, "n3": 1},
     {"n1": SKEWED, "n2": SKEWED, "n3": "ok", "n4": "ok"}),
    # ScheduleAnyway constraints never filter
    ([constraint(ZONE, when="ScheduleAnyway")], {"n1": 5}, {"n1": "ok", "n2": "ok", "n3": "ok", "n4": "ok"}),
])
def test_do_not_schedule_constraints_keep_the_skew_within_max_skew(constraints: list, counts: dict,
                                                                    expected: dict) -> None:
    pod = pod_info(labels={"app": "web"}, topologySpreadConstraints=constraints)
    assert filter_results(PodTopologySpread(), pod, nodes_with(counts)) == expected


def test_a_node_without_the_topology_key_cannot_take_a_spread_pod() -> None:
    pod = pod_info(labels={"app": "web"}, topologySpreadConstraints=[constraint(ZONE)])
    nodes = nodes_with({}, {"n1": "a", "bare": None})
    assert filter_results(PodTopologySpread(), pod, nodes) == {"n1": "ok", "bare": MISSING}


def test_a_pod_its_selector_does_not_select_does_not_count_itself() -> None:
    pod = pod_info(labels={"app": "api"}, topologySpreadConstraints=[constraint(ZONE)])
    # zone a runs 1 web pod, zone b none: 1 + 0 - 0 is within maxSkew 1
    assert set(filter_results(PodTopologySpread(), pod, nodes_with({"n1": 1})).values()) == {"ok"}


def test_only_nodes_the_pod_may_use_count_unless_the_policy_says_ignore() -> None:
    counts = {"n1": 1, "n2": 1}
    only_a = {"nodeSelector": {ZONE: "a"}, "labels": {"app": "web"}}
    honored = pod_info(topologySpreadConstraints=[constraint(ZONE)], **only_a)
    # zone b is not a domain the pod can use: the minimum is zone a's own count
    assert filter_results(PodTopologySpread(), honored, nodes_with(counts))["n1"] == "ok"
    ignored = pod_info(topologySpreadConstraints=[constraint(ZONE, nodeAffinityPolicy="Ignore")], **only_a)
    assert filter_results(PodTopologySpread(), ignored, nodes_with(counts))["n1"] == SKEWED


def test_schedule_anyway_scores_nodes_in_emptier_domains_higher() -> None:
    nodes = nodes_with({"n1": 2, "n3": 1})
    zone_only = pod_info(labels={"app": "web"}, topologySpreadConstraints=[constraint(ZONE, when="ScheduleAnyway")])
    # zone a: 2 x log(2 zones + 2) -> 3, zone b: 1 x log(4) -> 1; normalized 100 x (3 + 1 - score) / 3
    assert score_results(PodTopologySpread(), zone_only, nodes) == {"n1": 33, "n2": 33, "n3": 100, "n4": 100}
    both = pod_info(labels={"app": "web"}, topologySpreadConstraints=[constraint(ZONE, when="ScheduleAnyway"),
                                                                      constraint(HOST, when="ScheduleAnyway")])
    # plus each node's own count x log(4 nodes + 2): raw 6, 3, 3, 1
    assert score_results(PodTopologySpread(), both, nodes) == {"n1": 16, "n2": 66, "n3": 66, "n4": 100}
    do_not_schedule_only = pod_info(labels={"app": "web"}, topologySpreadConstraints=[constraint(ZONE)])
    assert score_results(PodTopologySpread(), do_not_schedule_only, nodes) == {}


def _replica(name: str, rs: str = "web") -> dict:
    pod = pod_object(name, labels={"app": "web"})
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                                           "uid": f"uid-{rs}", "controller": True}]
    return pod


def test_replicas_of_one_controller_spread_by_default_over_hostnames_and_zones() -> None:
    objects = ClusterObjects()
    objects.set("replicasets", {"metadata": {"name": "web", "namespace": "default"},
                                "spec": {"selector": {"matchLabels": {"app": "web"}}}})
    zones = {"n1": "a", "n2": "a", "n3": "b"}
    nodes = [node_info(n, labels={ZONE: z}, running=[_replica("web-0")] if n == "n1" else [])
             for n, z in zones.items()]
    pod = PodInfo(_replica("web-1"))
    # hostname (maxSkew 3, weight log 5) and zone (maxSkew 5, weight log 4): raw 9, 7, 6
    assert score_results(PodTopologySpread(), pod, nodes, objects) == {"n1": 66, "n2": 88, "n3": 100}
    # a Service that selects the pod groups it the same way
    services = ClusterObjects()
    services.set("services", {"metadata": {"name": "web", "namespace": "default"},
                              "spec": {"selector": {"app": "web"}}})
    assert score_results(PodTopologySpread(), pod_info(labels={"app": "web"}), nodes, services) == \
        {"n1": 66, "n2": 88, "n3": 100}
    # nothing groups a lone pod: no default spreading
    assert score_results(PodTopologySpread(), pod_info(labels={"app": "web"}), nodes, ClusterObjects()) == {}
