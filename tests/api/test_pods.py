"""Pods, services and endpoints: defaults, validation, the pod update rule, field selectors, deletion."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kind_helpers import Obj, container, create, created, fields_of, pod, resource, update

from minik.api.errors import Cause
from minik.api.kinds.pods import POD_UPDATE_FORBIDDEN, assign_pod

# -- pods ---------------------------------------------------------------------------------------------------------

def test_a_pod_gets_kubernetes_defaults_and_a_pending_status() -> None:
    result = created("pods", pod(container(ports=[{"containerPort": 80}])))
    assert result["spec"] == {
        "containers": [{
            "name": "app", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
            "ports": [{"containerPort": 80, "protocol": "TCP"}], "resources": {},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        }],
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30, "securityContext": {}, "enableServiceLinks": True,
    }
    assert result["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_a_client_cannot_set_a_pods_status_on_create() -> None:
    body = pod()
    body["status"] = {"phase": "Running", "podIP": "10.0.0.1"}
    assert created("pods", body)["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_a_pod_naming_a_priority_class_leaves_priority_to_admission() -> None:
    spec = created("pods", pod(priorityClassName="high"))["spec"]
    assert "priority" not in spec and "preemptionPolicy" not in spec


@pytest.mark.parametrize("image, policy", [
    ("nginx", "Always"), ("nginx:latest", "Always"), ("nginx:1.27", "IfNotPresent"),
    ("localhost:5000/nginx", "Always"), ("localhost:5000/nginx:v2", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"), ("registry.k8s.io/pause:3.9", "IfNotPresent"),
])
def test_image_pull_policy_defaults_from_the_tag(image: str, policy: str) -> None:
    assert created("pods", pod(container(image=image)))["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_an_explicit_pull_policy_is_kept() -> None:
    result = created("pods", pod(container(image="nginx", imagePullPolicy="Never")))
    assert result["spec"]["containers"][0]["imagePullPolicy"] == "Never"


def test_limits_without_requests_become_requests_and_make_a_pod_guaranteed() -> None:
    limits = {"cpu": "500m", "memory": "128Mi"}
    result = created("pods", pod(container(resources={"limits": limits})))
    assert result["spec"]["containers"][0]["resources"]["requests"] == limits
    assert result["status"]["qosClass"] == "Guaranteed"


@pytest.mark.parametrize("resources, qos", [
    ({}, "BestEffort"),
    ({"requests": {"cpu": "100m"}}, "Burstable"),
    ({"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "200m", "memory": "1Gi"}}, "Burstable"),
    ({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1000m", "memory": "1024Mi"}}, "Guaranteed"),
    ({"limits": {"cpu": "1"}}, "Burstable"),
    ({"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}, "BestEffort"),
])
def test_the_qos_class_follows_cpu_and_memory(resources: Obj, qos: str) -> None:
    assert created("pods", pod(container(resources=resources)))["status"]["qosClass"] == qos


def test_a_pod_on_the_host_network_publishes_its_container_ports_on_the_host() -> None:
    result = created("pods", pod(container(ports=[{"containerPort": 8080}]), hostNetwork=True))
    assert result["spec"]["containers"][0]["ports"][0]["hostPort"] == 8080


def test_probes_and_volumes_get_their_defaults() -> None:
    probe = {"httpGet": {"port": 80}}
    result = created("pods", pod(container(livenessProbe=probe), volumes=[
        {"name": "scratch"}, {"name": "conf", "configMap": {"name": "c"}}]))
    assert result["spec"]["containers"][0]["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10,
        "successThreshold": 1, "failureThreshold": 3}
    assert result["spec"]["volumes"] == [{"name": "scratch", "emptyDir": {}},
                                         {"name": "conf", "configMap": {"name": "c", "defaultMode": 420}}]


def test_a_pod_needs_at_least_one_container() -> None:
    _, causes = create("pods", {"metadata": {"name": "web"}, "spec": {"containers": []}})
    assert causes == [Cause("spec.containers", "FieldValueRequired", "Required value")]


def test_container_names_must_be_unique_across_init_and_app_containers() -> None:
    _, causes = create("pods", pod(container(), initContainers=[container()]))
    assert causes == [Cause("spec.initContainers[0].name", "FieldValueDuplicate", 'Duplicate value: "app"')]


def test_containers_need_a_dns_label_name_and_an_image() -> None:
    _, causes = create("pods", pod({"name": "App_1"}, {"image": "x"}))
    assert fields_of(causes) == [("spec.containers[0].name", "FieldValueInvalid"),
                                 ("spec.containers[0].image", "FieldValueRequired"),
                                 ("spec.containers[1].name", "FieldValueRequired")]


def test_container_ports_are_checked_for_number_protocol_and_unique_names() -> None:
    _, causes = create("pods", pod(container(ports=[
        {"containerPort": 0}, {"containerPort": 70000, "protocol": "HTTP", "name": "web"},
        {"containerPort": 81, "name": "web"}, {"containerPort": 82, "name": "Web_"}])))
    assert [(c.field, c.message) for c in causes] == [
        ("spec.containers[0].ports[0].containerPort", "Required value"),
        ("spec.containers[0].ports[1].containerPort", "Invalid value: 70000: must be between 1 and 65535, inclusive"),
        ("spec.containers[0].ports[1].protocol", 'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"'),
        ("spec.containers[0].ports[2].name", 'Duplicate value: "web"'),
        ("spec.containers[0].ports[3].name", 'Invalid value: "Web_": must contain only alpha-numeric characters '
                                             '(a-z, 0-9), and hyphens (-)'),
    ]


def test_restart_and_dns_policies_are_enumerations() -> None:
    _, causes = create("pods", pod(restartPolicy="Sometimes", dnsPolicy="Google"))
    assert [(c.field, c.message) for c in causes] == [
        ("spec.restartPolicy", 'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'),
        ("spec.dnsPolicy", 'Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", '
                           '"ClusterFirst", "Default", "None"'),
    ]


def test_requests_may_not_exceed_limits_and_quantities_must_parse() -> None:
    _, causes = create("pods", pod(container(resources={"requests": {"cpu": "2", "memory": "lots"},
                                                        "limits": {"cpu": "1"}})))
    assert [(c.field, c.message) for c in causes] == [
        ("spec.containers[0].resources.requests[memory]", 'Invalid value: "lots": quantities must match the regular '
                                                          "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
        ("spec.containers[0].resources.requests", 'Invalid value: "2": must be less than or equal to cpu limit of 1'),
    ]


def test_extended_resources_need_equal_requests_and_limits_and_names_need_a_domain() -> None:
    _, causes = create("pods", pod(container(resources={"requests": {"example.com/gpu": "1", "gpu": "1"}})))
    assert [(c.field, c.message) for c in causes] == [
        ("spec.containers[0].resources.requests[gpu]", 'Invalid value: "gpu": must be a standard resource for '
                                                       "containers"),
        ("spec.containers[0].resources.limits", "Required value: Limit must be set for non overcommitable resources"),
    ]


def test_env_var_names_and_sources_are_validated() -> None:
    _, causes = create("pods", pod(container(env=[
        {"name": "1BAD", "value": "x"}, {"name": "OK", "valueFrom": {}},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s"}}}])))
    assert fields_of(causes) == [("spec.containers[0].env[0].name", "FieldValueInvalid"),
                                 ("spec.containers[0].env[1].valueFrom", "FieldValueInvalid"),
                                 ("spec.containers[0].env[3].valueFrom.secretKeyRef.key", "FieldValueRequired")]


def test_volume_names_are_unique_and_mounts_must_name_a_volume() -> None:
    _, causes = create("pods", pod(container(volumeMounts=[{"name": "missing", "mountPath": "/a"},
                                                           {"name": "data", "mountPath": "/a"}]),
                                   volumes=[{"name": "data"}, {"name": "data"}]))
    assert [(c.field, c.reason, c.message) for c in causes] == [
        ("spec.volumes[1].name", "FieldValueDuplicate", 'Duplicate value: "data"'),
        ("spec.containers[0].volumeMounts[0].name", "FieldValueNotFound", 'Not found: "missing"'),
        ("spec.containers[0].volumeMounts[1].mountPath", "FieldValueInvalid", 'Invalid value: "/a": must be unique'),
    ]


def test_a_volume_may_have_only_one_source() -> None:
    _, causes = create("pods", pod(volumes=[{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]))
    # Kubernetes counts sources in VolumeSource order, so the second one it meets is reported
    assert causes == [Cause("spec.volumes[0].emptyDir", "FieldValueForbidden",
                            "Forbidden: may not specify more than 1 volume type")]


def test_tolerations_follow_operator_rules() -> None:
    _, causes = create("pods", pod(tolerations=[{"operator": "Equal", "value": "x"},
                                                {"key": "k", "operator": "Exists", "value": "v"},
                                                {"key": "k", "tolerationSeconds": 5, "effect": "NoSchedule"}]))
    assert fields_of(causes) == [("spec.tolerations[0].operator", "FieldValueInvalid"),
                                 ("spec.tolerations[1].operator", "FieldValueInvalid"),
                                 ("spec.tolerations[2].effect", "FieldValueInvalid")]


def test_ephemeral_containers_cannot_be_set_on_create() -> None:
    _, causes = create("pods", pod(ephemeralContainers=[{"name": "debug", "image": "busybox"}]))
    assert causes == [Cause("spec.ephemeralContainers", "FieldValueForbidden", "Forbidden: cannot be set on create")]


def test_a_pod_update_may_change_images_and_metadata() -> None:
    old = created("pods", pod())
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "nginx:1.28"
    new["metadata"]["labels"] = {"version": "2"}
    new["status"] = {"phase": "Running"}
    result, causes = update("pods", new, old)
    assert causes == []
    assert result["status"] == old["status"]


def test_a_pod_update_that_changes_another_spec_field_is_forbidden() -> None:
    old = created("pods", pod())
    new = copy.deepcopy(old)
    new["spec"]["restartPolicy"] = "Never"
    _, causes = update("pods", new, old)
    assert causes == [Cause("spec", "FieldValueForbidden", f"Forbidden: {POD_UPDATE_FORBIDDEN}")]
    assert POD_UPDATE_FORBIDDEN.startswith("pod updates may not change fields other than `spec.containers[*].image`")


def test_a_pod_update_cannot_set_the_node_name() -> None:
    old = created("pods", pod())
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "node-a"
    _, causes = update("pods", new, old)
    assert fields_of(causes) == [("spec", "FieldValueForbidden")]


def test_a_pod_update_cannot_add_containers() -> None:
    old = created("pods", pod())
    new = copy.deepcopy(old)
    new["spec"]["containers"].append(container("sidecar"))
    _, causes = update("pods", new, old)
    assert causes == [Cause("spec.containers", "FieldValueForbidden",
                            "Forbidden: pod updates may not add or remove containers")]


def test_a_pod_update_may_add_tolerations_but_not_remove_them() -> None:
    old = created("pods", pod(tolerations=[{"key": "a", "operator": "Exists"}]))
    added = copy.deepcopy(old)
    added["spec"]["tolerations"].append({"key": "b", "operator": "Exists"})
    assert update("pods", added, old)[1] == []
    removed = copy.deepcopy(old)
    removed["spec"]["tolerations"] = []
    assert update("pods", removed, old)[1] == [Cause(
        "spec.tolerations", "FieldValueForbidden",
        "Forbidden: existing toleration can not be modified except its tolerationSeconds")]


def test_a_pod_update_may_shorten_but_not_extend_the_active_deadline() -> None:
    old = created("pods", pod(activeDeadlineSeconds=100))
    shorter, longer = copy.deepcopy(old), copy.deepcopy(old)
    shorter["spec"]["activeDeadlineSeconds"] = 50
    longer["spec"]["activeDeadlineSeconds"] = 200
    assert update("pods", shorter, old)[1] == []
    assert update("pods", longer, old)[1] == [Cause(
        "spec.activeDeadlineSeconds", "FieldValueInvalid", "Invalid value: 200: must be less than or equal to "
                                                           "previous value")]


def test_a_pod_update_keeps_the_priority_admission_resolved() -> None:
    old = created("pods", pod(priorityClassName="high"))
    old["spec"]["priority"] = 1000
    new = copy.deepcopy(old)
    del new["spec"]["priority"]
    result, causes = update("pods", new, old)
    assert causes == [] and result["spec"]["priority"] == 1000


def test_pod_field_selectors_read_spec_and_status() -> None:
    obj = created("pods", pod(nodeName="node-a", hostNetwork=True))
    obj["status"] = {"phase": "Running", "podIPs": [{"ip": "10.1.0.5"}], "podIP": "10.1.0.5"}
    fields = resource("pods").strategy.field_set(obj)
    assert fields["spec.nodeName"] == "node-a"
    assert fields["spec.hostNetwork"] == "true"
    assert fields["spec.restartPolicy"] == "Always"
    assert fields["status.phase"] == "Running"
    assert fields["status.podIP"] == "10.1.0.5"
    assert fields["metadata.namespace"] == "default"


def test_pods_wait_their_grace_period_only_once_they_reach_a_node() -> None:
    strategy = resource("pods").strategy
    unscheduled = created("pods", pod())
    assert strategy.deletion_grace_period(unscheduled, None) == 0
    scheduled = created("pods", pod(nodeName="n1", terminationGracePeriodSeconds=45))
    assert strategy.deletion_grace_period(scheduled, None) == 45
    assert strategy.deletion_grace_period(scheduled, 5) == 5
    assert strategy.deletion_grace_period(scheduled, -3) == 1
    scheduled["status"]["phase"] = "Succeeded"
    assert strategy.deletion_grace_period(scheduled, None) == 0
    assert strategy.return_deleted_object


def test_binding_assigns_a_pod_to_a_node_exactly_once() -> None:
    obj = created("pods", pod())
    assign_pod(obj, "node-a", "2026-01-01T00:00:00Z")
    assert obj["spec"]["nodeName"] == "node-a"
    assert {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
            "lastTransitionTime": "2026-01-01T00:00:00Z"} in obj["status"]["conditions"]
    with pytest.raises(ValueError, match='pod web is already assigned to node "node-a"'):
        assign_pod(obj, "node-b", "2026-01-01T00:00:00Z")


# -- services and endpoints -------------------------------------------------------------------------------------

def service(**spec: Any) -> Obj:
    return {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], **spec}}


def test_a_service_gets_kubernetes_defaults() -> None:
    result = created("services", service())
    assert result["spec"] == {
        "selector": {"app": "web"}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
        "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
        "ipFamilyPolicy": "SingleStack",
    }
    assert result["status"] == {"loadBalancer": {}}


def test_a_node_port_service_defaults_its_external_traffic_policy() -> None:
    spec = created("services", service(type="NodePort", ports=[{"port": 80, "nodePort": 30080}]))["spec"]
    assert spec["externalTrafficPolicy"] == "Cluster"


def test_service_names_are_dns_1035_labels() -> None:
    _, causes = create("services", {**service(), "metadata": {"name": "1web"}})
    assert fields_of(causes) == [("metadata.name", "FieldValueInvalid")]
    assert "a DNS-1035 label must consist of lower case alphanumeric" in causes[0].message


def test_services_need_ports_unless_headless() -> None:
    assert fields_of(create("services", service(ports=[]))[1]) == [("spec.ports", "FieldValueRequired")]
    assert create("services", service(ports=[], clusterIP="None"))[1] == []


def test_service_ports_need_names_when_there_are_several() -> None:
    _, causes = create("services", service(ports=[{"port": 80}, {"port": 443, "name": "https"},
                                                  {"port": 0, "name": "https"}]))
    assert fields_of(causes) == [("spec.ports[0].name", "FieldValueRequired"),
                                 ("spec.ports[2].name", "FieldValueDuplicate"),
                                 ("spec.ports[2].port", "FieldValueInvalid"),
                                 ("spec.ports[2].targetPort", "FieldValueInvalid")]  # defaulted from port


def test_node_ports_must_be_in_range_and_not_on_cluster_ip_services() -> None:
    _, causes = create("services", service(type="NodePort", ports=[{"port": 80, "nodePort": 80}]))
    assert [(c.field, c.message) for c in causes] == [
        ("spec.ports[0].nodePort", "Invalid value: 80: provided port is not in the valid range. The range of valid "
                                   "ports is 30000-32767")]
    _, causes = create("services", service(ports=[{"port": 80, "nodePort": 30001}]))
    assert causes == [Cause("spec.ports[0].nodePort", "FieldValueForbidden",
                            "Forbidden: may not be used when `type` is 'ClusterIP'")]


def test_an_unknown_service_type_is_not_supported() -> None:
    _, causes = create("services", service(type="Magic"))
    assert causes == [Cause("spec.type", "FieldValueNotSupported", 'Unsupported value: "Magic": supported values: '
                                                                   '"ClusterIP", "ExternalName", "LoadBalancer", '
                                                                   '"NodePort"')]


def test_an_external_name_service_needs_a_name_and_no_ports() -> None:
    assert create("services", {"metadata": {"name": "db"},
                               "spec": {"type": "ExternalName", "externalName": "db.example.com"}})[1] == []
    _, causes = create("services", {"metadata": {"name": "db"}, "spec": {"type": "ExternalName"}})
    assert fields_of(causes) == [("spec.externalName", "FieldValueRequired")]


def test_a_service_update_keeps_its_cluster_ip_and_cannot_change_it() -> None:
    old = created("services", service())
    old["spec"]["clusterIP"] = "10.96.0.10"
    resent = {**service(), "metadata": old["metadata"]}
    result, causes = update("services", resent, old)
    assert causes == [] and result["spec"]["clusterIP"] == "10.96.0.10"
    changed = {**service(clusterIP="10.96.0.11"), "metadata": old["metadata"]}
    _, causes = update("services", changed, old)
    assert causes == [Cause("spec.clusterIP", "FieldValueInvalid", 'Invalid value: "10.96.0.11": field is immutable')]


def test_endpoints_default_port_protocols_and_check_addresses() -> None:
    body = {"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "10.1.0.5"}], "ports": [{"port": 80}]}]}
    assert created("endpoints", body)["subsets"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]
    bad = {"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "nope"}], "ports": [{"port": 80}]}, {}]}
    _, causes = create("endpoints", bad)
    assert fields_of(causes) == [("subsets[0].addresses[0].ip", "FieldValueInvalid"),
                                 ("subsets[1]", "FieldValueRequired")]


