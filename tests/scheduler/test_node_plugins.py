"""Table tests for the plugins that read the node itself: NodeUnschedulable, NodeName, TaintToleration,
NodeAffinity and NodePorts (pod, nodes, existing pods -> each node's status or score)."""

from __future__ import annotations

from typing import Any

import pytest

from minik.scheduler.plugins.node_affinity import NodeAffinity
from minik.scheduler.plugins.node_name import NodeName
from minik.scheduler.plugins.node_ports import NodePorts
from minik.scheduler.plugins.node_unschedulable import NodeUnschedulable
from minik.scheduler.plugins.taint_toleration import TaintToleration
from tests.scheduler.helpers import filter_results, node_info, pod_info, pod_object, score_results

GPU = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
UNTOLERATED_GPU = "UNSCHEDULABLE_AND_UNRESOLVABLE: node(s) had untolerated taint {dedicated: gpu}"


# -- NodeUnschedulable --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tolerations, expected", [
    ([], {"cordoned": "UNSCHEDULABLE_AND_UNRESOLVABLE: node(s) were unschedulable", "open": "ok"}),
    ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
     {"cordoned": "ok", "open": "ok"}),
    ([{"operator": "Exists"}], {"cordoned": "ok", "open": "ok"}),
])
def test_node_unschedulable_keeps_pods_off_cordoned_nodes_unless_tolerated(tolerations: list, expected: dict) -> None:
    nodes = [node_info("cordoned", unschedulable=True), node_info("open")]
    assert filter_results(NodeUnschedulable(), pod_info(tolerations=tolerations), nodes) == expected


# -- NodeName ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("node_name, expected", [
    ("", {"a": "ok", "b": "ok"}),
    ("b", {"a": "UNSCHEDULABLE_AND_UNRESOLVABLE: node(s) didn't match the requested node name", "b": "ok"}),
])
def test_node_name_pins_a_pod_to_the_node_it_names(node_name: str, expected: dict) -> None:
    pod = pod_info(nodeName=node_name) if node_name else pod_info()
    assert filter_results(NodeName(), pod, [node_info("a"), node_info("b")]) == expected


# -- TaintToleration ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("taints, tolerations, expected", [
    ([GPU], [], UNTOLERATED_GPU),
    ([GPU], [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}], "ok"),
    ([GPU], [{"key": "dedicated", "value": "gpu"}], "ok"),  # Equal is the default operator, any effect
    ([GPU], [{"key": "dedicated", "value": "tpu", "effect": "NoSchedule"}], UNTOLERATED_GPU),
    ([GPU], [{"key": "dedicated", "operator": "Exists"}], "ok"),
    ([GPU], [{"operator": "Exists"}], "ok"),  # an empty key with Exists tolerates everything
    ([GPU], [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}], UNTOLERATED_GPU),
    ([{"key": "maintenance", "effect": "NoExecute"}], [],
     "UNSCHEDULABLE_AND_UNRESOLVABLE: node(s) had untolerated taint {maintenance: }"),
    ([{"key": "maintenance", "effect": "NoExecute"}],
     [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}], "ok"),
    ([{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}], [], "ok"),
])
def test_taint_toleration_filters_no_schedule_and_no_execute_taints(taints: list, tolerations: list,
                                                                     expected: str) -> None:
    result = filter_results(TaintToleration(), pod_info(tolerations=tolerations), [node_info("n", taints=taints)])
    assert result == {"n": expected}


def test_taint_toleration_prefers_nodes_with_fewer_untolerated_prefer_no_schedule_taints() -> None:
    soft = [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
            {"key": "old", "value": "true", "effect": "PreferNoSchedule"}]
    nodes = [node_info("clean"), node_info("one", taints=soft[:1]), node_info("two", taints=soft)]
    assert score_results(TaintToleration(), pod_info(), nodes) == {"clean": 100, "one": 50, "two": 0}
    tolerant = pod_info(tolerations=[{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}])
    assert score_results(TaintToleration(), tolerant, nodes) == {"clean": 100, "one": 100, "two": 0}
    assert score_results(TaintToleration(), pod_info(), [node_info("a"), node_info("b")]) == {}


# -- NodeAffinity ------------------------------------------------------------------------------------------------
def _required(*terms: dict) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def _expr(key: str, operator: str, *values: str) -> dict:
    return {"matchExpressions": [{"key": key, "operator": operator, **({"values": list(values)} if values else {})}]}


AFFINITY_NODES = [("ssd-a", {"disk": "ssd", "zone": "a", "cores": "8"}),
                  ("ssd-b", {"disk": "ssd", "zone": "b", "cores": "32"}),
                  ("hdd-a", {"disk": "hdd", "zone": "a"})]
MISMATCH = "UNSCHEDULABLE_AND_UNRESOLVABLE: node(s) didn't match Pod's node affinity/selector"


@pytest.mark.parametrize("spec, fits", [
    ({"nodeSelector": {"disk": "ssd"}}, {"ssd-a", "ssd-b"}),
    ({"nodeSelector": {"disk": "ssd", "zone": "a"}}, {"ssd-a"}),
    ({"affinity": _required(_expr("zone", "In", "a", "c"))}, {"ssd-a", "hdd-a"}),
    ({"affinity": _required(_expr("zone", "NotIn", "a"))}, {"ssd-b"}),
    ({"affinity": _required(_expr("cores", "Exists"))}, {"ssd-a", "ssd-b"}),
    ({"affinity": _required(_expr("cores", "DoesNotExist"))}, {"hdd-a"}),
    ({"affinity": _required(_expr("cores", "Gt", "10"))}, {"ssd-b"}),
    ({"affinity": _required(_expr("cores", "Lt", "10"))}, {"ssd-a"}),
    ({"affinity": _required(_expr("disk", "In", "hdd"), _expr("zone", "In", "b"))}, {"hdd-a", "ssd-b"}),  # OR
    ({"affinity": _required({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["ssd-b"]}]})},
     {"ssd-b"}),
    ({"affinity": _required({"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]},
                                                  {"key": "zone", "operator": "In", "values": ["b"]}]})}, {"ssd-b"}),
    ({"affinity": _required()}, set()),  # no terms match no node
    ({"nodeSelector": {"disk": "ssd"}, "affinity": _required(_expr("zone", "In", "a"))}, {"ssd-a"}),  # both hold
])
def test_node_affinity_filters_by_node_selector_and_required_terms(spec: dict, fits: set) -> None:
    nodes = [node_info(name, labels=labels) for name, labels in AFFINITY_NODES]
    expected = {name: "ok" if name in fits else MISMATCH for name, _ in AFFINITY_NODES}
    assert filter_results(NodeAffinity(), pod_info(**spec), nodes) == expected


def test_node_affinity_scores_preferred_terms_by_weight() -> None:
    nodes = [node_info(name, labels=labels) for name, labels in AFFINITY_NODES]
    preferred = [{"weight": 80, "preference": _expr("disk", "In", "ssd")},
                 {"weight": 20, "preference": _expr("zone", "In", "a")}]
    pod = pod_info(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}})
    assert score_results(NodeAffinity(), pod, nodes) == {"ssd-a": 100, "ssd-b": 80, "hdd-a": 20}
    assert score_results(NodeAffinity(), pod_info(), nodes) == {}


# -- NodePorts ---------------------------------------------------------------------------------------------------
PORT_TAKEN = "UNSCHEDULABLE: node(s) didn't have free ports for the requested pod ports"


@pytest.mark.parametrize("existing, wanted, expected", [
    ({"hostPort": 8080}, {"hostPort": 8080}, PORT_TAKEN),
    ({"hostPort": 8080}, {"hostPort": 8081}, "ok"),
    ({"hostPort": 8080, "protocol": "UDP"}, {"hostPort": 8080}, "ok"),
    ({"hostPort": 8080, "hostIP": "10.0.0.1"}, {"hostPort": 8080, "hostIP": "10.0.0.2"}, "ok"),
    ({"hostPort": 8080, "hostIP": "10.0.0.1"}, {"hostPort": 8080}, PORT_TAKEN),  # 0.0.0.0 takes every address
    ({"hostPort": 8080}, {"hostPort": 8080, "hostIP": "10.0.0.2"}, PORT_TAKEN),
    ({}, {"hostPort": 8080}, "ok"),  # a container port alone holds no host port
])
def test_node_ports_refuse_a_host_port_already_taken(existing: dict, wanted: dict, expected: str) -> None:
    running = pod_object("running", ports=[{"containerPort": 80, **existing}])
    pod = pod_info(ports=[{"containerPort": 80, **wanted}])
    assert filter_results(NodePorts(), pod, [node_info("n", running=[running])]) == {"n": expected}
