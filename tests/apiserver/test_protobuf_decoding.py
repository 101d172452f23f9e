"""The protobuf decoder on bytes built field by field: the envelope, Go's zeros, pointers, maps, special types,
inlined structs, and every way a body can be malformed."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from protobuf_wire import (
    KUBECTL_CREATE_NAMESPACE,
    encode_object,
    entry,
    envelope,
    fixed64,
    metadata,
    num,
    packed,
    raw,
    sub,
    text,
    varint,
)

from minik.api import schema
from minik.apiserver import protobuf
from minik.apiserver.protobuf import ProtobufError, decode, go_duration


def test_the_body_kubectl_sends_for_create_namespace_decodes_to_the_json_it_means() -> None:
    assert decode(KUBECTL_CREATE_NAMESPACE) == {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": "foo"}, "spec": {}, "status": {}}


def test_plain_zero_fields_are_unset_but_a_pointer_keeps_its_zero() -> None:
    body = envelope("apps/v1", "Deployment", metadata("web", "default"),
                    sub(2, num(1, 0), num(5, 0), num(7, False), num(6, 3)))
    spec = decode(body)["spec"]
    assert spec == {"replicas": 0, "revisionHistoryLimit": 3}  # minReadySeconds and paused were Go's zeros


def test_a_deployment_with_a_container_decodes_whole() -> None:
    container = sub(2, text(1, "web"), text(2, "busybox:1.36"), text(3, "sleep"), text(3, "3600"),
                    sub(6, text(1, ""), num(2, 0), num(3, 8080), text(4, "TCP"), text(5, "")),
                    sub(8, entry(1, "cpu", sub(2, text(1, "250m"))), entry(2, "memory", sub(2, text(1, "64Mi")))),
                    text(13, ""), text(14, ""), num(16, False))
    template = sub(3, sub(1, text(1, ""), entry(11, "app", text(2, "web"))), sub(2, container, text(3, ""), text(6, "")))
    body = envelope("apps/v1", "Deployment", metadata("web"),
                    sub(2, num(1, 2), sub(2, entry(1, "app", text(2, "web"))), template), sub(3))
    obj = decode(body)
    assert obj["spec"]["replicas"] == 2
    assert obj["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert obj["spec"]["template"]["metadata"] == {"labels": {"app": "web"}}
    assert obj["spec"]["template"]["spec"]["containers"] == [{
        "name": "web", "image": "busybox:1.36", "command": ["sleep", "3600"],
        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
        "resources": {"limits": {"cpu": "250m"}, "requests": {"memory": "64Mi"}}}]
    assert obj["status"] == {}


def test_map_values_keep_their_zeros_and_bytes_become_base64() -> None:
    body = envelope("v1", "Secret", metadata("s"), entry(2, "password", raw(2, b"hunter2")), entry(2, "empty", b""),
                    entry(4, "plain", text(2, "")), text(3, "Opaque"), num(5, False))
    obj = decode(body)
    assert obj["data"] == {"password": base64.b64encode(b"hunter2").decode(), "empty": ""}
    assert obj["stringData"] == {"plain": ""}
    assert obj["type"] == "Opaque" and obj["immutable"] is False


def test_a_config_map_keeps_empty_values_and_binary_data_is_base64() -> None:
    body = envelope("v1", "ConfigMap", metadata("cfg"), entry(2, "a", text(2, "1")), entry(2, "b", text(2, "")),
                    entry(3, "bin", raw(2, b"\x00\xff")))
    obj = decode(body)
    assert obj["data"] == {"a": "1", "b": ""}
    assert obj["binaryData"] == {"bin": "AP8="}


def test_times_are_rfc3339_as_minik_writes_them() -> None:
    seconds = 1_700_000_000  # 2023-11-14T22:13:20Z
    body = envelope("coordination.k8s.io/v1", "Lease",
                    sub(1, text(1, "l"), sub(8, num(1, seconds)), sub(9, num(1, seconds), num(2, 5))),
                    sub(2, text(1, "me"), num(2, 0), sub(3, num(1, seconds), num(2, 123_456_789)), sub(4)))
    obj = decode(body)
    assert obj["metadata"]["creationTimestamp"] == "2023-11-14T22:13:20Z"
    assert obj["metadata"]["deletionTimestamp"] == "2023-11-14T22:13:20Z"  # metav1.Time is to the second
    assert obj["spec"] == {"holderIdentity": "me", "leaseDurationSeconds": 0,
                           "acquireTime": "2023-11-14T22:13:20.123456Z"}  # an empty MicroTime is Go's zero: null


def test_int_or_string_is_a_number_or_a_string_and_an_unset_target_port_is_left_out() -> None:
    ports = [sub(1, text(1, "http"), num(3, 80), sub(4, num(1, 1), text(3, "web"))),
             sub(1, num(3, 81), sub(4, num(1, 0), num(2, 8081))),
             sub(1, num(3, 82), sub(4))]
    obj = decode(envelope("v1", "Service", metadata("svc"), sub(2, *ports, text(4, "ClusterIP"))))
    assert obj["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "web"},
                                    {"port": 81, "targetPort": 8081}, {"port": 82}]


def test_repeated_numbers_are_read_packed_or_one_by_one() -> None:
    def pod(groups: bytes) -> bytes:
        return envelope("v1", "Pod", metadata("p"), sub(2, sub(14, groups)))

    unpacked = decode(pod(num(4, 1000) + num(4, 2000)))
    packed_ = decode(pod(packed(4, [1000, 2000])))
    assert unpacked["spec"]["securityContext"]["supplementalGroups"] == [1000, 2000]
    assert packed_["spec"]["securityContext"]["supplementalGroups"] == [1000, 2000]


def test_negative_numbers_are_read_from_ten_byte_varints() -> None:
    obj = decode(envelope("scheduling.k8s.io/v1", "PriorityClass", metadata("low"), num(2, -5), num(3, False)))
    assert obj["value"] == -5 and "globalDefault" not in obj
    assert len(varint(-5)) == 10


def test_inlined_structs_are_merged_into_their_parent_as_json_has_them() -> None:
    volume = sub(1, text(1, "cfg"), sub(2, sub(19, sub(1, text(1, "my-config")), num(3, 0o644))))
    probe = sub(10, sub(1, sub(2, text(1, "/healthz"), sub(2, num(1, 0), num(2, 8080)), text(4, "HTTP"))),
                num(4, 10))
    env_from = sub(19, sub(2, sub(1, text(1, "settings"))))
    container = sub(2, text(1, "c"), text(2, "busybox"), probe, env_from)
    spec = decode(envelope("v1", "Pod", metadata("p"), sub(2, volume, container)))["spec"]
    assert spec["volumes"] == [{"name": "cfg", "configMap": {"name": "my-config", "defaultMode": 0o644}}]
    assert spec["containers"][0]["livenessProbe"] == {"httpGet": {"path": "/healthz", "port": 8080,
                                                                  "scheme": "HTTP"}, "periodSeconds": 10}
    assert spec["containers"][0]["envFrom"] == [{"configMapRef": {"name": "settings"}}]


def test_managed_fields_hold_their_json() -> None:
    managed = sub(17, text(1, "kubectl"), text(2, "Update"), text(3, "v1"), text(6, "FieldsV1"),
                  sub(7, raw(1, b'{"f:data":{"f:a":{}}}')))
    obj = decode(envelope("v1", "ConfigMap", sub(1, text(1, "cfg"), managed)))
    assert obj["metadata"]["managedFields"] == [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                                                 "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]


def test_delete_options_decode_whatever_group_version_they_name() -> None:
    for api_version in ("v1", "apps/v1", "meta.k8s.io/v1"):
        obj = decode(envelope(api_version, "DeleteOptions", num(1, 0), text(4, "Foreground"), text(5, "All")))
        assert obj == {"apiVersion": api_version, "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                       "propagationPolicy": "Foreground", "dryRun": ["All"]}


def test_an_eviction_carries_its_delete_options() -> None:
    obj = decode(envelope("policy/v1", "Eviction", metadata("p", "default"), sub(2, num(1, 30))))
    assert obj["deleteOptions"] == {"gracePeriodSeconds": 30}


def test_fields_the_table_does_not_know_are_skipped() -> None:
    obj = decode(envelope("v1", "ConfigMap", metadata("cfg"), text(99, "from the future"), fixed64(98, 1)))
    assert obj == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}}


def test_json_inside_the_envelope_is_read_as_json() -> None:
    body = protobuf.MAGIC + sub(1, text(1, "v1"), text(2, "ConfigMap")) + \
        raw(2, b'{"metadata":{"name":"cfg"}}') + text(4, "application/json")
    assert decode(body) == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}}


@pytest.mark.parametrize(("nanoseconds", "printed"), [
    (0, "0s"), (1, "1ns"), (1_500, "1.5µs"), (300_000_000, "300ms"), (1_000_000_000, "1s"),
    (90_000_000_000, "1m30s"), (3_600_000_000_000, "1h0m0s"), (3_723_500_000_000, "1h2m3.5s"), (-2_000_000_000, "-2s"),
])
def test_durations_print_as_go_prints_them(nanoseconds: int, printed: str) -> None:
    assert go_duration(nanoseconds) == printed


@pytest.mark.parametrize(("body", "message"), [
    (b'{"kind":"Namespace"}', "does not appear to be a protobuf message"),
    (protobuf.MAGIC + b"\x0a", "truncated varint"),
    (protobuf.MAGIC + b"\x0a\x10\x0a", "bytes long but only"),
    (protobuf.MAGIC + b"\x0b", "unsupported wire type 3"),
    (protobuf.MAGIC + b"\x00\x00", "field number 0"),
    (protobuf.MAGIC + b"\x0a" + b"\xff" * 11, "longer than 10 bytes"),
    (envelope("v1", "Nonsense", metadata("x")), 'no kind "Nonsense" is registered for version "v1"'),
    (envelope("", "", metadata("x")), "'Kind' is missing"),
    (envelope("v1", "ConfigMap", num(1, 5)), "expected a length-delimited field"),
    (envelope("v1", "ConfigMap", sub(1, raw(1, b"\xff\xfe"))), "not valid UTF-8"),
    (envelope("scheduling.k8s.io/v1", "PriorityClass", text(2, "high")), "int32 cannot have wire type 2"),
    (envelope("v1", "Service", sub(2, sub(1, sub(4, num(1, 7))))), "neither 0 (int) nor 1 (string)"),
    (envelope("v1", "ConfigMap", sub(1, sub(8, num(1, 10**15)))), "out of range"),
    (envelope("v1", "ConfigMap", sub(1, sub(17, sub(7, raw(1, b"{nope"))))), "not JSON"),
    (protobuf.MAGIC + sub(1, text(1, "v1"), text(2, "ConfigMap")) + text(3, "gzip"), "content encoding"),
    (protobuf.MAGIC + sub(1, text(1, "v1"), text(2, "ConfigMap")) + text(4, "application/cbor"), "content type"),
])
def test_a_malformed_body_is_a_protobuf_error_with_a_reason(body: bytes, message: str) -> None:
    with pytest.raises(ProtobufError) as caught:
        decode(body)
    assert message in str(caught.value)


def test_an_error_names_the_field_it_is_in_as_json_would() -> None:
    containers = sub(2, text(1, "ok"), text(2, "busybox")) + sub(2, text(1, "bad"), num(2, 5))
    body = envelope("apps/v1", "Deployment", metadata("web"), sub(2, sub(3, sub(2, containers))))
    with pytest.raises(ProtobufError) as caught:
        decode(body)
    assert str(caught.value) == ("spec.template.spec.containers[1].image: expected a length-delimited field, "
                                 "got wire type 0")
    with pytest.raises(ProtobufError) as caught:
        decode(envelope("v1", "ConfigMap", metadata("cfg"), entry(2, "key", num(2, 1))))
    assert str(caught.value).startswith("data[key]: ")


def test_every_json_name_in_the_table_is_a_field_minik_knows() -> None:
    """The table's JSON names (and inlined structs) agree with schema.json, which comes from another source."""
    table = protobuf.layouts()
    known = schema.load()

    def names(message: str) -> set[str]:
        out: set[str] = set()
        for json_name, type_, _mode in table.messages[message].values():
            out |= names(type_) if not json_name else {json_name}
        return out

    alpha = {("io.k8s.api.core.v1.NodeAllocatableResourceClaimStatus", "resources")}  # renamed in 1.37's alpha
    checked = 0
    for message in table.messages:
        type_name = "io.k8s." + message.removeprefix("k8s.io.")
        if type_name not in known.types:
            continue
        unknown = {n for n in names(message) if n not in known.types[type_name].properties} - \
            {n for t, n in alpha if t == type_name}
        assert not unknown, f"{message}: {unknown}"
        checked += 1
    assert checked > 150
    for kind in ("v1/Pod", "apps/v1/Deployment", "batch/v1/CronJob", "policy/v1/Eviction",
                 "meta.k8s.io/v1/DeleteOptions", "autoscaling/v1/Scale", "v1/Binding"):
        assert kind in table.kinds



ROUND_TRIPS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Pod",
     "metadata": {"name": "full", "namespace": "default", "labels": {"app": "full"},
                  "annotations": {"note": ""}, "finalizers": ["example.com/keep"],
                  "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-1",
                                       "controller": True, "blockOwnerDeletion": True}],
                  "creationTimestamp": "2024-02-29T12:00:00Z"},
     "spec": {
         "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
                     {"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "a.txt"}]}},
                     {"name": "token", "projected": {"sources": [{"serviceAccountToken": {
                         "path": "token", "expirationSeconds": 3600}}]}}],
         "initContainers": [{"name": "init", "image": "busybox:1.36", "command": ["true"]}],
         "containers": [{
             "name": "app", "image": "busybox:1.36", "args": ["sleep", "1d"],
             "env": [{"name": "A", "value": "1"},
                     {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                     {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": False}}}],
             "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "0"}},
             "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
             "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True}],
             "readinessProbe": {"tcpSocket": {"port": "http"}, "initialDelaySeconds": 2},
             "livenessProbe": {"exec": {"command": ["cat", "/tmp/ok"]}, "failureThreshold": 5},
             "lifecycle": {"preStop": {"sleep": {"seconds": 3}}},
             "securityContext": {"runAsUser": 0, "privileged": False, "capabilities": {"add": ["NET_ADMIN"]}}}],
         "restartPolicy": "Always", "terminationGracePeriodSeconds": 0, "nodeSelector": {"disk": "ssd"},
         "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                          "tolerationSeconds": 300}],
         "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
             "weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {
                 "matchExpressions": [{"key": "app", "operator": "In", "values": ["full"]}]}}}]}},
         "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
         "priority": 0, "enableServiceLinks": False, "automountServiceAccountToken": False,
         "securityContext": {"fsGroup": 2000, "supplementalGroups": [1, 2], "sysctls": [{"name": "a", "value": "b"}]}},
     "status": {"phase": "Running", "podIP": "10.0.0.7", "startTime": "2024-02-29T12:00:01Z",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-02-29T12:00:02Z"}]}},
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
     "spec": {"replicas": 0, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
              "template": {"metadata": {"labels": {"app": "db"}},
                           "spec": {"containers": [{"name": "db", "image": "busybox:1.36"}]}},
              "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": "50%"}},
              "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                  "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}},
    {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
     "spec": {"schedule": "*/5 * * * *", "timeZone": "Etc/UTC", "suspend": True, "successfulJobsHistoryLimit": 0,
              "jobTemplate": {"spec": {"backoffLimit": 0, "completionMode": "Indexed", "template": {"spec": {
                  "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
     "spec": {"type": "NodePort", "selector": {"app": "web"}, "clusterIP": "None",
              "ports": [{"name": "web", "port": 80, "targetPort": "http", "nodePort": 30080, "protocol": "TCP"}],
              "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
              "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Local"}},
    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "node-1"},
     "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40, "renewTime": "2024-02-29T12:00:00.250000Z"}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
     "spec": {"podCIDR": "10.244.0.0/24", "taints": [{"key": "k", "value": "v", "effect": "NoSchedule",
                                                      "timeAdded": "2024-02-29T12:00:00Z"}]},
     "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                "nodeInfo": {"kubeletVersion": "v1.32.0", "architecture": "amd64"}}},
    {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
     "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"}, "reason": "Pulled", "count": 2,
     "eventTime": "2024-02-29T12:00:00.000001Z", "type": "Normal", "source": {"component": "kubelet"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "managedFields": [{
        "manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": "2024-02-29T12:00:00Z",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]},
     "data": {"a": "1"}, "binaryData": {"b": "AAEC"}, "immutable": False},
]


@pytest.mark.parametrize("obj", ROUND_TRIPS, ids=[o["kind"] for o in ROUND_TRIPS])
def test_objects_of_every_shape_come_back_as_the_json_they_were(obj: dict[str, Any]) -> None:
    assert decode(encode_object(obj)) == obj
