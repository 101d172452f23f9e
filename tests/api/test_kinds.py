"""The resource table, and the defaults, validation and update rules of the core and cluster kinds.

Pods, services and endpoints are in test_pods.py; controllers' kinds in test_workloads.py.
"""

from __future__ import annotations

import base64
import copy

import pytest
from kind_helpers import Obj, create, created, fields_of, resource, update

from minik.api.errors import Cause
from minik.api.resources import REGISTRY

# -- the registry ------------------------------------------------------------------------------------------------

def test_every_kind_is_registered_with_the_short_names_kubectl_shows() -> None:
    short = {t.plural: t.short_names for t in REGISTRY.types}
    assert short == {
        "namespaces": ("ns",), "nodes": ("no",), "pods": ("po",), "services": ("svc",), "endpoints": ("ep",),
        "events": ("ev",), "configmaps": ("cm",), "secrets": (), "serviceaccounts": ("sa",),
        "replicationcontrollers": ("rc",), "deployments": ("deploy",), "replicasets": ("rs",),
        "daemonsets": ("ds",), "statefulsets": ("sts",), "jobs": (), "cronjobs": ("cj",), "leases": (),
        "priorityclasses": ("pc",), "roles": (), "clusterroles": (), "rolebindings": (), "clusterrolebindings": (),
        "tokenreviews": (), "selfsubjectreviews": (), "subjectaccessreviews": (), "selfsubjectaccessreviews": (),
        "localsubjectaccessreviews": (), "selfsubjectrulesreviews": (),
        "mutatingwebhookconfigurations": (), "validatingwebhookconfigurations": (),
        "validatingadmissionpolicies": (), "validatingadmissionpolicybindings": (),
        "customresourcedefinitions": ("crd", "crds"),
        "limitranges": ("limits",),
        "resourcequotas": ("quota",), "podtemplates": (), "runtimeclasses": (), "apiservices": (),
        "certificatesigningrequests": ("csr",), "poddisruptionbudgets": ("pdb",),
        "controllerrevisions": (),
        "persistentvolumes": ("pv",), "persistentvolumeclaims": ("pvc",), "storageclasses": ("sc",),
    }
    assert REGISTRY.resolve("deploy") is resource("deployments")
    assert REGISTRY.resolve("pc") is resource("priorityclasses")
    assert REGISTRY.resolve("deploy.apps") is resource("deployments")
    assert REGISTRY.resolve("Deployment.v1.apps") is resource("deployments")
    assert REGISTRY.resolve("cj.batch") is resource("cronjobs")
    assert REGISTRY.resolve("deploy.batch") is None
    assert REGISTRY.by_kind("coordination.k8s.io/v1", "Lease") is resource("leases")


def test_the_all_category_holds_what_kubectl_get_all_lists() -> None:
    assert {t.plural for t in REGISTRY.types if "all" in t.categories} == {
        "pods", "services", "replicationcontrollers", "deployments", "replicasets", "daemonsets", "statefulsets",
        "jobs", "cronjobs"}


def test_subresources_are_those_kubernetes_serves() -> None:
    assert resource("pods").subresources == ("status", "binding", "log", "exec", "eviction", "portforward", "proxy",
                                             "attach", "ephemeralcontainers")
    for plural in ("deployments", "replicasets", "statefulsets", "replicationcontrollers"):
        assert set(resource(plural).subresources) == {"status", "scale"}
    assert resource("services").subresources == ("status", "proxy")
    for plural in ("nodes", "daemonsets", "jobs", "cronjobs"):
        assert resource(plural).subresources == ("status",)
    assert resource("namespaces").subresources == ("status", "finalize")
    assert resource("serviceaccounts").subresources == ("token",)
    for plural in ("events", "configmaps", "secrets", "leases", "priorityclasses", "endpoints"):
        assert resource(plural).subresources == ()
        assert not resource(plural).strategy.has_status


def test_each_strategy_knows_the_scope_the_registry_declares() -> None:
    for t in REGISTRY.types:
        assert t.strategy.namespace_scoped == t.namespaced, t.plural
    assert {t.plural for t in REGISTRY.types if not t.namespaced} == {
        "namespaces", "nodes", "priorityclasses", "clusterroles", "clusterrolebindings", "tokenreviews",
        "selfsubjectreviews", "subjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews",
        "mutatingwebhookconfigurations", "validatingwebhookconfigurations", "validatingadmissionpolicies",
        "validatingadmissionpolicybindings", "customresourcedefinitions", "runtimeclasses", "apiservices",
        "certificatesigningrequests", "persistentvolumes", "storageclasses"}


@pytest.mark.parametrize("plural, extra", [
    ("pods", {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
              "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"}),
    ("events", {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
                "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
                "reason", "reportingComponent", "source", "type"}),
    ("secrets", {"type"}), ("namespaces", {"status.phase"}), ("nodes", {"spec.unschedulable"}),
    ("replicasets", {"status.replicas"}), ("replicationcontrollers", {"status.replicas"}),
    ("jobs", {"status.successful"}), ("configmaps", set()), ("deployments", set()),
])
def test_field_selectors_offer_the_fields_kubernetes_supports(plural: str, extra: set[str]) -> None:
    # the API server asks an empty object which fields exist, so every field must be present even then
    assert set(resource(plural).strategy.field_set({"metadata": {}})) == {"metadata.name", "metadata.namespace"} | extra


@pytest.mark.parametrize("plural", [t.plural for t in REGISTRY.types])
@pytest.mark.parametrize("garbage", [
    {"spec": "x"}, {"spec": None}, {"spec": {"containers": "x", "template": 3, "selector": []}},
    {"metadata": {"labels": ["a"]}, "spec": {"template": {"spec": {"containers": [None, {"ports": "x"}]}}}},
    {"spec": {"ports": [1, {"port": "x"}], "jobTemplate": [], "strategy": "x", "updateStrategy": 1}},
    {"data": [1], "subsets": "x", "spec": {"taints": [{"key": 1}], "podCIDRs": [1]}, "value": "high"},
])
def test_malformed_objects_get_causes_not_exceptions(plural: str, garbage: Obj) -> None:
    obj = {"metadata": {"name": "x"}, **copy.deepcopy(garbage)}
    obj["metadata"] = {"name": "x", **obj["metadata"]}
    result, causes = create(plural, obj)
    assert isinstance(causes, list)
    resource(plural).strategy.validate_update(copy.deepcopy(result), result)
    resource(plural).strategy.field_set(result)


# -- namespaces, nodes, events ---------------------------------------------------------------------------------------

def test_a_namespace_is_active_with_the_kubernetes_finalizer_and_name_label() -> None:
    result = created("namespaces", {"metadata": {"name": "team-a"}})
    assert result["spec"] == {"finalizers": ["kubernetes"]}
    assert result["status"] == {"phase": "Active"}
    assert result["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert "namespace" not in result["metadata"]


def test_namespace_names_are_dns_labels() -> None:
    _, causes = create("namespaces", {"metadata": {"name": "team.a"}})
    assert fields_of(causes) == [("metadata.name", "FieldValueInvalid")]


def test_a_namespace_update_keeps_its_spec_and_its_name_label() -> None:
    old = created("namespaces", {"metadata": {"name": "team-a"}})
    new = {"metadata": {**old["metadata"], "labels": {"kubernetes.io/metadata.name": "other"}}, "spec": {}}
    result, causes = update("namespaces", new, old)
    assert causes == []
    assert result["spec"] == {"finalizers": ["kubernetes"]}
    assert result["metadata"]["labels"]["kubernetes.io/metadata.name"] == "team-a"


def test_a_deleted_namespace_turns_terminating_and_is_held_by_its_spec_finalizers() -> None:
    strategy = resource("namespaces").strategy
    ns = created("namespaces", {"metadata": {"name": "team-a"}})
    assert strategy.prepare_for_delete(ns) is True
    assert ns["status"]["phase"] == "Terminating"
    finalized = copy.deepcopy(ns)
    finalized["spec"]["finalizers"] = []
    strategy.prepare_for_finalize(finalized, ns)
    assert finalized["spec"] == {"finalizers": []} and finalized["status"]["phase"] == "Terminating"
    assert not strategy.holds_deletion(finalized)
    assert resource("configmaps").strategy.prepare_for_delete({"metadata": {"name": "c"}}) is False

def test_namespace_finalizers_must_be_standard_or_qualified() -> None:
    obj = {"metadata": {"name": "n"}, "spec": {"finalizers": ["custom"]}}
    _, causes = create("namespaces", obj)
    assert causes == [Cause("spec.finalizers", "FieldValueInvalid",
                            'Invalid value: "custom": name is neither a standard finalizer name nor is it fully '
                            'qualified')]


def test_a_node_keeps_the_status_its_kubelet_registers_with() -> None:
    status = {"capacity": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}
    result = created("nodes", {"metadata": {"name": "node-a.example"}, "status": status})
    assert result["status"] == status


def test_node_updates_may_only_change_labels_taints_and_schedulability() -> None:
    old = created("nodes", {"metadata": {"name": "n1"}, "spec": {"podCIDR": "10.1.0.0/24"}})
    cordoned = copy.deepcopy(old)
    cordoned["spec"]["unschedulable"] = True
    cordoned["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    assert update("nodes", cordoned, old)[1] == []
    moved = copy.deepcopy(old)
    moved["spec"]["podCIDR"] = "10.2.0.0/24"
    moved["spec"]["externalID"] = "x"
    assert fields_of(update("nodes", moved, old)[1]) == [("spec.podCIDRs", "FieldValueForbidden"),
                                                         ("", "FieldValueForbidden")]


def test_node_taints_need_a_key_an_effect_and_uniqueness() -> None:
    _, causes = create("nodes", {"metadata": {"name": "n1"}, "spec": {"taints": [
        {"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "Never"}]}})
    assert fields_of(causes) == [("spec.taints[1]", "FieldValueDuplicate"), ("spec.taints[2].effect",
                                                                             "FieldValueNotSupported")]
    assert causes[0].message.endswith("taints must be unique by key and effect pair")


def test_an_event_must_live_in_its_involved_objects_namespace() -> None:
    event = {"metadata": {"name": "web.1"}, "involvedObject": {"kind": "Pod", "namespace": "other", "name": "web"},
             "reason": "Started", "type": "Normal", "source": {"component": "kubelet"}}
    _, causes = create("events", event)
    assert causes == [Cause("involvedObject.namespace", "FieldValueInvalid",
                            'Invalid value: "other": does not match event.namespace')]
    ok = created("events", {**event, "involvedObject": {**event["involvedObject"], "namespace": "default"}})
    fields = resource("events").strategy.field_set(ok)
    assert fields["involvedObject.name"] == "web" and fields["source"] == "kubelet" and fields["type"] == "Normal"


# -- configmaps, secrets, service accounts ---------------------------------------------------------------------------

def test_config_map_keys_must_be_valid_and_not_in_both_maps() -> None:
    binary = base64.b64encode(b"x").decode()
    _, causes = create("configmaps", {"metadata": {"name": "c"}, "data": {"a/b": "1", "dup": "x"},
                                      "binaryData": {"dup": binary}})
    assert [(c.field, c.reason) for c in causes] == [("data[a/b]", "FieldValueInvalid"),
                                                     ("data[dup]", "FieldValueInvalid")]
    assert causes[0].message.startswith('Invalid value: "a/b": a valid config key must consist of alphanumeric')
    assert causes[1].message == 'Invalid value: "dup": duplicate of key present in binaryData'


def test_a_config_map_holds_at_most_one_mebibyte() -> None:
    _, causes = create("configmaps", {"metadata": {"name": "c"}, "data": {"big": "x" * (1024 * 1024 + 1)}})
    assert causes == [Cause("", "FieldValueTooLong", "Too long: must have at most 1048576 bytes")]


def test_an_immutable_config_map_keeps_its_data() -> None:
    old = created("configmaps", {"metadata": {"name": "c"}, "data": {"a": "1"}, "immutable": True})
    new = {**copy.deepcopy(old), "data": {"a": "2"}}
    assert update("configmaps", new, old)[1] == [Cause("data", "FieldValueForbidden",
                                                      "Forbidden: field is immutable when `immutable` is set")]


def test_a_secret_is_opaque_and_string_data_is_merged_into_data() -> None:
    result = created("secrets", {"metadata": {"name": "s"}, "data": {"a": base64.b64encode(b"1").decode()},
                                 "stringData": {"b": "two"}})
    assert result["type"] == "Opaque"
    assert "stringData" not in result
    assert base64.b64decode(result["data"]["b"]) == b"two"
    assert resource("secrets").strategy.field_set(result)["type"] == "Opaque"


def test_secret_data_must_be_base64_and_small() -> None:
    _, causes = create("secrets", {"metadata": {"name": "s"}, "data": {"a": "not base64!"}})
    assert fields_of(causes) == [("data[a]", "FieldValueInvalid")]
    big = base64.b64encode(b"x" * (1024 * 1024 + 1)).decode()
    _, causes = create("secrets", {"metadata": {"name": "s"}, "data": {"a": big}})
    assert causes == [Cause("data", "FieldValueTooLong", "Too long: must have at most 1048576 bytes")]


def test_typed_secrets_need_their_keys_and_keep_their_type() -> None:
    _, causes = create("secrets", {"metadata": {"name": "s"}, "type": "kubernetes.io/tls"})
    assert fields_of(causes) == [("data[tls.crt]", "FieldValueRequired"), ("data[tls.key]", "FieldValueRequired")]
    old = created("secrets", {"metadata": {"name": "s"}})
    _, causes = update("secrets", {**copy.deepcopy(old), "type": "example.com/other"}, old)
    assert fields_of(causes) == [("type", "FieldValueInvalid")]


def test_service_account_names_are_subdomains() -> None:
    assert create("serviceaccounts", {"metadata": {"name": "builder.ci"}})[1] == []
    assert fields_of(create("serviceaccounts", {"metadata": {"name": "Builder"}})[1]) == [
        ("metadata.name", "FieldValueInvalid")]


# -- leases and priority classes -----------------------------------------------------------------------------------

def test_a_lease_duration_must_be_positive() -> None:
    lease = {"metadata": {"name": "kube-scheduler"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                                                            "renewTime": "2025-01-01T00:00:00.000000Z"}}
    assert create("leases", lease)[1] == []
    lease["spec"]["leaseDurationSeconds"] = 0
    assert create("leases", lease)[1] == [Cause("spec.leaseDurationSeconds", "FieldValueInvalid",
                                                "Invalid value: 0: must be greater than 0")]


def test_a_priority_class_defaults_its_preemption_policy_and_needs_a_value() -> None:
    result = created("priorityclasses", {"metadata": {"name": "high"}, "value": 1000})
    assert result["preemptionPolicy"] == "PreemptLowerPriority"
    assert fields_of(create("priorityclasses", {"metadata": {"name": "high"}})[1]) == [("value", "FieldValueRequired")]


def test_user_priority_classes_stay_below_one_billion_and_system_names_are_reserved() -> None:
    _, causes = create("priorityclasses", {"metadata": {"name": "high"}, "value": 1_000_000_001})
    assert causes == [Cause("value", "FieldValueForbidden",
                            "Forbidden: maximum allowed value of a user defined priority is 1000000000")]
    _, causes = create("priorityclasses", {"metadata": {"name": "system-mine"}, "value": 1})
    assert causes == [Cause("metadata.name", "FieldValueForbidden",
                            "Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
                            "error: system-mine is not a known system priority class")]
    assert create("priorityclasses", {"metadata": {"name": "system-node-critical"}, "value": 2000001000})[1] == []


def test_a_priority_class_value_never_changes() -> None:
    old = created("priorityclasses", {"metadata": {"name": "high"}, "value": 1000})
    _, causes = update("priorityclasses", {**copy.deepcopy(old), "value": 2000}, old)
    assert causes == [Cause("value", "FieldValueForbidden", "Forbidden: may not be changed in an update.")]

