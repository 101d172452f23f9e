"""Pod spec defaults and the QoS class, shared by pods and every workload's pod template.

As Kubernetes: SetDefaults_PodSpec / _Container / _ContainerPort / _Probe / _Volume apply to every pod spec
(pods and templates); SetDefaults_Pod adds what only a Pod gets (requests from limits, enableServiceLinks,
host ports on the host network).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

from minik.api.kinds.common import Obj, dict_at, dicts_at, ensure_dict, set_default
from minik.api.kinds.specmemo import SpecMemo, spec_key
from minik.api.quantity import parse_quantity

DEFAULT_SCHEDULER = "default-scheduler"
DEFAULT_TERMINATION_GRACE_PERIOD = 30
DEFAULT_FILE_MODE = 0o644  # 420: configMap, secret, downwardAPI and projected volumes

CONTAINER_LISTS = ("initContainers", "containers")

#: every field of a v1.VolumeSource; a volume naming none of them is an emptyDir
VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
    "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
    "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
)
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


def image_tag(image: str) -> str:
    """The tag of an image reference: "latest" when none is given, "" when pinned by digest only."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if digest else "latest"


def default_pull_policy(image: str) -> str:
    return "Always" if image_tag(image) == "latest" else "IfNotPresent"


def _default_http_get(handler: Obj) -> None:
    http = handler.get("httpGet")
    if isinstance(http, dict):
        set_default(http, "path", "/")
        set_default(http, "scheme", "HTTP")


def _default_probe(probe: Obj) -> None:
    set_default(probe, "timeoutSeconds", 1)
    set_default(probe, "periodSeconds", 10)
    set_default(probe, "successThreshold", 1)
    set_default(probe, "failureThreshold", 3)
    _default_http_get(probe)


def default_container(container: Obj) -> None:
    image = container.get("image")
    # an unparsable image has no "latest" tag (validation reports the image itself)
    set_default(container, "imagePullPolicy",
                default_pull_policy(image) if isinstance(image, str) and image else "IfNotPresent")
    set_default(container, "terminationMessagePath", "/dev/termination-log")
    set_default(container, "terminationMessagePolicy", "File")
    ensure_dict(container, "resources")
    for port in dicts_at(container, "ports"):
        set_default(port, "protocol", "TCP")
    for env in dicts_at(container, "env"):
        field_ref = dict_at(dict_at(env, "valueFrom"), "fieldRef")
        if field_ref:
            set_default(field_ref, "apiVersion", "v1")
    for name in PROBES:
        probe = container.get(name)
        if isinstance(probe, dict):
            _default_probe(probe)
    lifecycle = dict_at(container, "lifecycle")
    for hook in ("postStart", "preStop"):
        handler = lifecycle.get(hook)
        if isinstance(handler, dict):
            _default_http_get(handler)


#: a projected service account token's lifetime when its source names none (SetDefaults_ServiceAccountTokenProjection)
DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600


def _default_field_refs(items: Any) -> None:
    for item in items if isinstance(items, list) else []:
        field_ref = dict_at(item, "fieldRef") if isinstance(item, dict) else None
        if field_ref:
            set_default(field_ref, "apiVersion", "v1")


def default_volume(volume: Obj) -> None:
    if not any(volume.get(source) is not None for source in VOLUME_SOURCES):
        volume["emptyDir"] = {}
    for source in ("secret", "configMap", "downwardAPI", "projected"):
        body = volume.get(source)
        if isinstance(body, dict):
            set_default(body, "defaultMode", DEFAULT_FILE_MODE)
    _default_field_refs(dict_at(volume, "downwardAPI").get("items"))
    for projection in dicts_at(dict_at(volume, "projected"), "sources"):
        token = dict_at(projection, "serviceAccountToken")
        if token:
            set_default(token, "expirationSeconds", DEFAULT_TOKEN_EXPIRATION_SECONDS)
        _default_field_refs(dict_at(projection, "downwardAPI").get("items"))


def default_pod_spec(spec: Obj) -> None:
    """Defaults every pod spec gets, in a Pod or in a template."""
    set_default(spec, "dnsPolicy", "ClusterFirst")
    set_default(spec, "restartPolicy", "Always")
    ensure_dict(spec, "securityContext")
    set_default(spec, "terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD)
    set_default(spec, "schedulerName", DEFAULT_SCHEDULER)
    # serviceAccount is the deprecated alias of serviceAccountName; Kubernetes keeps the two equal
    if not spec.get("serviceAccountName") and isinstance(spec.get("serviceAccount"), str) and spec["serviceAccount"]:
        spec["serviceAccountName"] = spec["serviceAccount"]
    if isinstance(spec.get("serviceAccountName"), str) and spec["serviceAccountName"]:
        spec["serviceAccount"] = spec["serviceAccountName"]
    for list_name in CONTAINER_LISTS:
        for container in dicts_at(spec, list_name):
            default_container(container)
    for volume in dicts_at(spec, "volumes"):
        default_volume(volume)


def default_pod_template(owner_spec: Obj, key: str = "template") -> None:
    """Default ``owner_spec[key]`` as a PodTemplateSpec (creating it, and its spec, when missing)."""
    template = ensure_dict(owner_spec, key)
    if template is None:
        return
    spec = ensure_dict(template, "spec")
    if spec is not None:
        default_pod_spec(spec)


#: a pod spec's JSON -> its JSON once defaulted
_DEFAULTED: SpecMemo[bytes] = SpecMemo()


def default_pod(pod: Obj) -> None:
    """SetDefaults_Pod on top of the pod spec defaults. A spec seen before gets the defaulted copy remembered for
    it (minik.api.kinds.specmemo)."""
    spec = ensure_dict(pod, "spec")
    if spec is None:
        return
    key = _DEFAULTED.key(spec)
    if key is not None:
        defaulted = _DEFAULTED.get(key)
        if defaulted is not None:
            spec.clear()
            spec.update(orjson.loads(defaulted))
            return
    _default_pod(spec)
    if key is not None and (after := spec_key(spec)) is not None:
        _DEFAULTED.put(key, after)


def _default_pod(spec: Obj) -> None:
    default_pod_spec(spec)
    for list_name in CONTAINER_LISTS:
        for container in dicts_at(spec, list_name):
            resources = dict_at(container, "resources")
            limits = resources.get("limits")
            if isinstance(limits, dict) and limits:
                requests = ensure_dict(resources, "requests")
                if requests is not None:
                    for name, value in limits.items():
                        requests.setdefault(name, value)
            if spec.get("hostNetwork") is True:
                for port in dicts_at(container, "ports"):
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")
    set_default(spec, "enableServiceLinks", True)
    # spec.priority and spec.preemptionPolicy are not defaults: the Priority admission plugin sets them from the
    # pod's class or the global default class, and refuses a pod that sets them otherwise


# -- QoS ----------------------------------------------------------------------------------------------------------

_QOS_RESOURCES = ("cpu", "memory")


def _quantity(value: Any) -> Decimal:
    try:
        return parse_quantity(value)
    except ValueError:
        return Decimal(0)


#: a pod spec's JSON -> its QoS class
_QOS: SpecMemo[str] = SpecMemo()


def pod_qos_class(spec: Obj) -> str:
    """Guaranteed, Burstable or BestEffort, computed from cpu and memory as Kubernetes' GetPodQOS does. A limit
    without a request counts as that request (the defaulting Kubernetes applies first)."""
    key = _QOS.key(spec)
    if key is None:
        return _pod_qos_class(spec)
    qos = _QOS.get(key)
    if qos is None:
        qos = _pod_qos_class(spec)
        _QOS.put(key, qos)
    return qos


def _pod_qos_class(spec: Obj) -> str:
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for list_name in CONTAINER_LISTS:
        for container in dicts_at(spec, list_name):
            resources = dict_at(container, "resources")
            own_limits = dict_at(resources, "limits")
            own_requests = {**own_limits, **dict_at(resources, "requests")}
            for name in _QOS_RESOURCES:
                if name in own_requests and (q := _quantity(own_requests[name])) > 0:
                    requests[name] = requests.get(name, Decimal(0)) + q
            found = set()
            for name in _QOS_RESOURCES:
                if name in own_limits and (q := _quantity(own_limits[name])) > 0:
                    found.add(name)
                    limits[name] = limits.get(name, Decimal(0)) + q
            if found != set(_QOS_RESOURCES):
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(name) == q for name, q in requests.items()) and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"
