"""Table tests for InterPodAffinity: required affinity and anti-affinity over hostnames and zones, the running
pods' anti-affinity, namespaces and namespaceSelector; preferred terms as scores."""

from __future__ import annotations

from typing import Any

import pytest

from minik.scheduler.objects import ClusterObjects
from minik.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from tests.scheduler.helpers import filter_results, node_info, pod_info, pod_object, score_results

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
AFFINITY = "UNSCHEDULABLE_AND_UNRESOLVABLE: node(s) didn't match pod affinity rules"
ANTI = "UNSCHEDULABLE: node(s) didn't match pod anti-affinity rules"
EXISTING = "UNSCHEDULABLE: node(s) didn't satisfy existing pods anti-affinity rules"


def term(key: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


def affinity(kind: str, *terms: dict, preferred: bool = False) -> dict[str, Any]:
    if preferred:
        return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": list(terms)}}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def cluster(running: dict[str, list[dict]], zones: dict[str, str | None] | None = None) -> list:
    """Nodes n1, n2 in zone a and n3 in zone b (unless ``zones`` says otherwise), with pods running."""
    zones = zones if zones is not None else {"n1": "a", "n2": "a", "n3": "b"}
    return [node_info(name, labels={ZONE: zone} if zone else {}, running=running.get(name, []))
            for name, zone in zones.items()]


DB = pod_object("db", labels={"app": "db"})


@pytest.mark.parametrize("spec, expected", [
    ({"affinity": affinity("podAffinity", term(HOST, {"app": "db"}))}, {"n1": "ok", "n2": AFFINITY, "n3": AFFINITY}),
    ({"affinity": affinity("podAffinity", term(ZONE, {"app": "db"}))}, {"n1": "ok", "n2": "ok", "n3": AFFINITY}),
    ({"affinity": affinity("podAntiAffinity", term(HOST, {"app": "db"}))}, {"n1": ANTI, "n2": "ok", "n3": "ok"}),
    ({"affinity": affinity("podAntiAffinity", term(ZONE, {"app": "db"}))}, {"n1": ANTI, "n2": ANTI, "n3": "ok"}),
    ({"affinity": affinity("podAffinity", term(HOST, {"app": "nothing-like-it"}))},
     {"n1": AFFINITY, "n2": AFFINITY, "n3": AFFINITY}),
    # both: near the db's zone, away from its node
    ({"affinity": {**affinity("podAffinity", term(ZONE, {"app": "db"})),
                   **affinity("podAntiAffinity", term(HOST, {"app": "db"}))}},
     {"n1": ANTI, "n2": "ok", "n3": AFFINITY}),
])
def test_required_affinity_and_anti_affinity_over_hostnames_and_zones(spec: dict, expected: dict) -> None:
    nodes = cluster({"n1": [DB]})
    assert filter_results(InterPodAffinity(), pod_info(labels={"app": "web"}, **spec), nodes) == expected


def test_the_running_pods_anti_affinity_keeps_the_pod_out_of_their_domains() -> None:
    for key, expected in ((HOST, {"n1": EXISTING, "n2": "ok", "n3": "ok"}),
                          (ZONE, {"n1": EXISTING, "n2": EXISTING, "n3": "ok"})):
        lonely = pod_object("lonely", labels={"app": "lonely"},
                            affinity=affinity("podAntiAffinity", term(key, {"app": "web"})))
        nodes = cluster({"n1": [lonely]})
        assert filter_results(InterPodAffinity(), pod_info(labels={"app": "web"}), nodes) == expected
        # a pod the term does not select is not kept out
        assert set(filter_results(InterPodAffinity(), pod_info(labels={"app": "api"}), nodes).values()) == {"ok"}


def test_the_first_pod_of_a_group_with_affinity_to_itself_may_start_it() -> None:
    spec = {"labels": {"app": "cache"}, "affinity": affinity("podAffinity", term(ZONE, {"app": "cache"}))}
    nodes = cluster({}, zones={"n1": "a", "n2": None})
    # no cache pod runs anywhere: any node with the topology key will do
    assert filter_results(InterPodAffinity(), pod_info(**spec), nodes) == {"n1": "ok", "n2": AFFINITY}
    # once one runs, the others follow it
    first = pod_object("cache-0", labels={"app": "cache"})
    nodes = cluster({"n3": [first]})
    assert filter_results(InterPodAffinity(), pod_info(**spec), nodes) == {"n1": AFFINITY, "n2": AFFINITY,
                                                                         "n3": "ok"}


@pytest.mark.parametrize("extra, namespace_labels, fits_n1", [
    ({}, {}, False),  # the pod's own namespace only: the db runs in another one
    ({"namespaces": ["data"]}, {}, True),
    ({"namespaces": ["elsewhere"]}, {}, False),
    ({"namespaceSelector": {"matchLabels": {"team": "storage"}}}, {"team": "storage"}, True),
    ({"namespaceSelector": {"matchLabels": {"team": "storage"}}}, {"team": "web"}, False),
    ({"namespaceSelector": {}}, {}, True),  # an empty namespaceSelector is every namespace
])
def test_terms_select_pods_in_the_namespaces_they_name_or_select(extra: dict, namespace_labels: dict,
                                                                  fits_n1: bool) -> None:
    objects = ClusterObjects()
    objects.set("namespaces", {"metadata": {"name": "data", "labels": namespace_labels}})
    objects.set("namespaces", {"metadata": {"name": "default", "labels": {}}})
    nodes = cluster({"n1": [pod_object("db", namespace="data", labels={"app": "db"})]})
    pod = pod_info(labels={"app": "web"}, affinity=affinity("podAffinity", term(HOST, {"app": "db"}, **extra)))
    assert filter_results(InterPodAffinity(), pod, nodes, objects)["n1"] == ("ok" if fits_n1 else AFFINITY)


def test_match_label_keys_narrow_a_term_to_pods_sharing_the_pods_value() -> None:
    old = pod_object("old", labels={"app": "web", "version": "1"})
    nodes = cluster({"n1": [old]})
    spec = {"labels": {"app": "web", "version": "2"},
            "affinity": affinity("podAntiAffinity", term(HOST, {"app": "web"}, matchLabelKeys=["version"]))}
    assert set(filter_results(InterPodAffinity(), pod_info(**spec), nodes).values()) == {"ok"}


def test_preferred_terms_score_domains_by_weight() -> None:
    nodes = cluster({"n1": [DB], "n2": [pod_object("web", labels={"app": "web"})]})
    preferred = {**affinity("podAffinity", {"weight": 10, "podAffinityTerm": term(ZONE, {"app": "db"})},
                            preferred=True),
                 **affinity("podAntiAffinity", {"weight": 5, "podAffinityTerm": term(HOST, {"app": "web"})},
                            preferred=True)}
    # raw: n1 +10 (db's zone), n2 +10 -5 (db's zone, a web pod on it), n3 0 -> normalized between 0 and 10
    assert score_results(InterPodAffinity(), pod_info(labels={"app": "web"}, affinity=preferred), nodes) == \
        {"n1": 100, "n2": 50, "n3": 0}


def test_running_pods_terms_that_select_the_pod_score_too() -> None:
    hungry = pod_object("hungry", labels={"app": "batch"},
                        affinity=affinity("podAffinity", term(HOST, {"app": "web"})))
    shy = pod_object("shy", labels={"app": "batch"},
                     affinity=affinity("podAntiAffinity", {"weight": 50, "podAffinityTerm": term(ZONE, {"app": "web"})},
                                       preferred=True))
    nodes = cluster({"n1": [hungry], "n3": [shy]})
    # n1: the running pod's required affinity selects the pod (+1); zone b: a running pod prefers it away (-50)
    assert score_results(InterPodAffinity(), pod_info(labels={"app": "web"}), nodes) == \
        {"n1": 100, "n2": 98, "n3": 0}
    assert score_results(InterPodAffinity(), pod_info(labels={"app": "api"}), nodes) == {}


def test_a_node_counts_only_the_running_pods_whose_terms_score_others() -> None:
    guard = pod_object("guard", labels={"app": "db"}, affinity=affinity("podAntiAffinity", term(HOST, {"app": "web"})))
    shy = pod_object("shy", labels={"app": "batch"},
                     affinity=affinity("podAntiAffinity", {"weight": 50, "podAffinityTerm": term(ZONE, {"app": "web"})},
                                       preferred=True))
    node = node_info("n1", labels={ZONE: "a"}, running=[guard, shy])
    assert node.scoring_affinity_pods == 1 and node.clone().scoring_affinity_pods == 1
    node.remove_pod("default/shy")
    assert node.scoring_affinity_pods == 0 and len(node.pods_with_affinity) == 1
    # a required anti-affinity term filters, it never scores: nothing to score here
    assert score_results(InterPodAffinity(), pod_info(labels={"app": "web"}), [node]) == {}
