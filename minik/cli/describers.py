"""What `minik describe` shows for each kind, after kubectl's describers: the fields people look for first, in
kubectl's order and words. Kinds without a describer here get the generic one (every field, nested)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from typing import Any

from minik.api.errors import StatusError
from minik.api.registry import ResourceType
from minik.cli.describe_text import (
    NONE,
    Writer,
    controlled_by,
    generic,
    header,
    label_for,
    labels_and_annotations,
    scalar,
    timestamp,
)
from minik.cli.output import age
from minik.client import Client

Obj = dict[str, Any]
Describer = Callable[[Writer, Client, ResourceType, Obj], Awaitable[None]]


def _d(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def format_selector(selector: Obj | None) -> str:
    """A LabelSelector as text: ``app=web,tier in (a,b),!legacy``; ``<none>`` when it selects nothing."""
    if not selector:
        return NONE
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key", ""), e.get("operator", ""), e.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts) or NONE


def _map_selector(selector: Obj | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((selector or {}).items())) or NONE


# -- containers and pod templates -------------------------------------------------------------------------------
def _ports(w: Writer, level: int, ports: list[Obj]) -> None:
    def fmt(p: Obj, key: str) -> str:
        return f"{p.get(key, 0)}/{p.get('protocol', 'TCP')}"

    if not ports:
        w.kv(level, "Port", NONE)
        w.kv(level, "Host Port", NONE)
        return
    plural = "s" if len(ports) > 1 else ""
    w.kv(level, f"Port{plural}", ", ".join(fmt(p, "containerPort") for p in ports))
    w.kv(level, f"Host Port{plural}", ", ".join(fmt(p, "hostPort") for p in ports))


def _state(w: Writer, level: int, title: str, state: Obj | None) -> None:
    if not state:
        return
    name, details = next(iter(state.items()))
    w.kv(level, title, name[:1].upper() + name[1:])
    for key in ("reason", "message", "exitCode", "signal"):
        if _d(details, key) not in (None, ""):
            w.kv(level + 1, label_for(key), details[key])
    for key in ("startedAt", "finishedAt"):
        if _d(details, key):
            w.kv(level + 1, "Started" if key == "startedAt" else "Finished", timestamp(details[key]))


def _environment(w: Writer, level: int, env: list[Obj]) -> None:
    if not env:
        w.kv(level, "Environment", NONE)
        return
    w.title(level, "Environment:")
    for var in env:
        if "value" in var or "valueFrom" not in var:
            w.kv(level + 1, var.get("name", ""), var.get("value", ""))
        else:
            source = var["valueFrom"]
            kind = next(iter(source), "")
            ref = source.get(kind) or {}
            described = ", ".join(f"{k}: {v}" for k, v in ref.items())
            w.kv(level + 1, var.get("name", ""), f"<set from {kind} ({described})>")


def containers(w: Writer, level: int, title: str, specs: list[Obj], statuses: list[Obj] | None = None,
               indent: str = "") -> None:
    """A pod's or a template's containers, with their status when ``statuses`` is given."""
    if not specs:
        return
    w.title(level, f"{title}:")
    by_name = {s.get("name"): s for s in statuses or []}
    # a pod's containers sit one level under the title; a template's, as kubectl has them, one space in
    prefix = "  " * level + indent if indent else "  " * (level + 1)
    inner = level + 1 if indent else level + 2
    for c in specs:
        w.title(0, f"{prefix}{c.get('name', '')}:")
        status = by_name.get(c.get("name"))
        if status and status.get("containerID"):
            w.kv(inner, "Container ID", status["containerID"])
        w.kv(inner, "Image", c.get("image", ""))
        if status and status.get("imageID"):
            w.kv(inner, "Image ID", status["imageID"])
        _ports(w, inner, c.get("ports") or [])
        for key in ("command", "args"):
            if c.get(key):
                w.title(inner, f"{label_for(key)}:")
                for arg in c[key]:
                    w.title(inner + 1, str(arg))
        if status is not None:
            _state(w, inner, "State", status.get("state"))
            _state(w, inner, "Last State", status.get("lastState"))
            w.kv(inner, "Ready", "True" if status.get("ready") else "False")
            w.kv(inner, "Restart Count", status.get("restartCount", 0))
        for key in ("limits", "requests"):
            values = _d(c, "resources", key)
            if values:
                w.title(inner, f"{label_for(key)}:")
                for name, quantity in sorted(values.items()):
                    w.kv(inner + 1, name, quantity)
        _environment(w, inner, c.get("env") or [])
        mounts = c.get("volumeMounts") or []
        if not mounts:
            w.kv(inner, "Mounts", NONE)
        else:
            for i, m in enumerate(mounts):
                mode = "ro" if m.get("readOnly") else "rw"
                w.line(inner, "Mounts:" if i == 0 else "", f"{m.get('mountPath')} from {m.get('name')} ({mode})")


def _volumes(w: Writer, level: int, volumes: list[Obj]) -> None:
    if not volumes:
        w.kv(level, "Volumes", NONE)
        return
    w.title(level, "Volumes:")
    for volume in volumes:
        w.title(level + 1, f"{volume.get('name', '')}:")
        for kind, source in volume.items():
            if kind == "name":
                continue
            w.kv(level + 2, "Type", kind[:1].upper() + kind[1:])
            if isinstance(source, dict):
                for key, value in source.items():
                    w.kv(level + 2, label_for(key), scalar(value) if not isinstance(value, (dict, list))
                         else value)


def pod_template(w: Writer, level: int, template: Obj | None) -> None:
    template = template or {}
    w.title(level, "Pod Template:")
    w.mapping(level + 1, "Labels", _d(template, "metadata", "labels"))
    annotations = _d(template, "metadata", "annotations")
    if annotations:
        w.mapping(level + 1, "Annotations", annotations, sep=": ")
    spec = template.get("spec") or {}
    if spec.get("serviceAccountName"):
        w.kv(level + 1, "Service Account", spec["serviceAccountName"])
    containers(w, level + 1, "Init Containers", spec.get("initContainers") or [], indent=" ")
    containers(w, level + 1, "Containers", spec.get("containers") or [], indent=" ")
    _volumes(w, level + 1, spec.get("volumes") or [])
    w.mapping(level + 1, "Node-Selectors", spec.get("nodeSelector"))
    w.kv(level + 1, "Tolerations", _tolerations(spec.get("tolerations") or []) or NONE)


def _tolerations(tolerations: list[Obj]) -> str:
    out = []
    for t in tolerations:
        text = t.get("key", "")
        if t.get("value"):
            text += f"={t['value']}"
        if t.get("effect"):
            text += f":{t['effect']}"
        if t.get("operator") == "Exists" and not t.get("value"):
            text += " op=Exists"
        if t.get("tolerationSeconds") is not None:
            text += f" for {t['tolerationSeconds']}s"
        out.append(text.strip())
    return ", ".join(out)


def _conditions(w: Writer, conditions: list[Obj], *columns: str) -> None:
    if not conditions:
        return
    w.title(0, "Conditions:")
    titles = [label_for(c).replace(" ", "") if c in ("lastHeartbeatTime", "lastTransitionTime") else label_for(c)
              for c in columns]
    w.line(1, *titles)
    if len(columns) > 2:
        w.line(1, *("-" * len(t) for t in titles))
    for condition in conditions:
        cells = []
        for key in columns:
            value = condition.get(key, "")
            cells.append(timestamp(value) if key.endswith("Time") else scalar(value))
        w.line(1, *cells)


def _qos(spec: Obj) -> str:
    resources = [c.get("resources") or {} for c in spec.get("containers") or []]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        all((r.get("limits") or {}).get(k) and (r.get("limits") or {}).get(k) == (r.get("requests") or
                                                                                   r.get("limits") or {}).get(k)
            for k in ("cpu", "memory"))
        for r in resources)
    return "Guaranteed" if guaranteed else "Burstable"


# -- kinds ------------------------------------------------------------------------------------------------------
async def describe_pod(w: Writer, client: Client, rt: ResourceType, obj: Obj) -> None:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    w.kv(0, "Name", meta.get("name", ""))
    w.kv(0, "Namespace", meta.get("namespace", ""))
    w.kv(0, "Priority", spec.get("priority", 0))
    if spec.get("priorityClassName"):
        w.kv(0, "Priority Class Name", spec["priorityClassName"])
    w.kv(0, "Service Account", spec.get("serviceAccountName", "default"))
    node = spec.get("nodeName")
    w.kv(0, "Node", f"{node}/{status['hostIP']}" if node and status.get("hostIP") else node or NONE)
    if status.get("startTime"):
        w.kv(0, "Start Time", timestamp(status["startTime"]))
    labels_and_annotations(w, obj)
    phase = status.get("phase", "")
    if meta.get("deletionTimestamp"):
        w.kv(0, "Status", f"Terminating (lasts since {timestamp(meta['deletionTimestamp'])})")
        w.kv(0, "Termination Grace Period", f"{meta.get('deletionGracePeriodSeconds', 0)}s")
    else:
        w.kv(0, "Status", phase)
    if status.get("reason"):
        w.kv(0, "Reason", status["reason"])
    if status.get("message"):
        w.kv(0, "Message", status["message"])
    w.kv(0, "IP", status.get("podIP", ""))
    ips = [i.get("ip", "") for i in status.get("podIPs") or []]
    if ips:
        w.title(0, "IPs:")
        for ip in ips:
            w.kv(1, "IP", ip)
    else:
        w.kv(0, "IPs", NONE)
    controlled_by(w, obj)
    containers(w, 0, "Init Containers", spec.get("initContainers") or [], status.get("initContainerStatuses"))
    containers(w, 0, "Containers", spec.get("containers") or [], status.get("containerStatuses") or [])
    _conditions(w, status.get("conditions") or [], "type", "status")
    _volumes(w, 0, spec.get("volumes") or [])
    w.kv(0, "QoS Class", status.get("qosClass") or _qos(spec))
    w.mapping(0, "Node-Selectors", spec.get("nodeSelector"))
    w.kv(0, "Tolerations", _tolerations(spec.get("tolerations") or []) or NONE)


async def _owned(client: Client, resource: str, obj: Obj) -> list[Obj]:
    """The objects of ``resource`` selected by ``obj``'s selector that ``obj`` controls."""
    meta = obj.get("metadata") or {}
    selector = _d(obj, "spec", "selector") or {}
    text = format_selector(selector) if "matchLabels" in selector or "matchExpressions" in selector \
        else _map_selector(selector)
    if text == NONE:
        return []
    listing = await client.list_all(resource, meta.get("namespace"), label_selector=text)
    return [item for item in listing.get("items") or []
            if any(ref.get("uid") == meta.get("uid") for ref in _d(item, "metadata", "ownerReferences") or [])]


async def describe_deployment(w: Writer, client: Client, rt: ResourceType, obj: Obj) -> None:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    header(w, obj, rt, created=True)
    w.kv(0, "Selector", format_selector(spec.get("selector")))
    replicas = spec.get("replicas", 1)
    w.kv(0, "Replicas", f"{replicas} desired | {status.get('updatedReplicas', 0)} updated | "
                        f"{status.get('replicas', 0)} total | {status.get('availableReplicas', 0)} available | "
                        f"{status.get('unavailableReplicas', 0)} unavailable")
    strategy = spec.get("strategy") or {}
    w.kv(0, "StrategyType", strategy.get("type", "RollingUpdate"))
    w.kv(0, "MinReadySeconds", spec.get("minReadySeconds", 0))
    rolling = strategy.get("rollingUpdate")
    if rolling:
        w.kv(0, "RollingUpdateStrategy", f"{rolling.get('maxUnavailable', '25%')} max unavailable, "
                                         f"{rolling.get('maxSurge', '25%')} max surge")
    pod_template(w, 0, spec.get("template"))
    _conditions(w, status.get("conditions") or [], "type", "status", "reason")
    revision = _d(obj, "metadata", "annotations", "deployment.kubernetes.io/revision")
    sets = await _owned(client, "replicasets", obj)
    new = [rs for rs in sets if revision and _d(rs, "metadata", "annotations",
                                                 "deployment.kubernetes.io/revision") == revision]
    old = [rs for rs in sets if rs not in new and (_d(rs, "spec", "replicas") or _d(rs, "status", "replicas"))]

    def created(rs: Obj) -> str:
        return (f"{_d(rs, 'metadata', 'name')} ({_d(rs, 'status', 'replicas') or 0}/"
                f"{_d(rs, 'spec', 'replicas') or 0} replicas created)")

    w.kv(0, "OldReplicaSets", ", ".join(created(rs) for rs in old) or NONE)
    w.kv(0, "NewReplicaSet", created(new[0]) if new else NONE)


async def describe_replicaset(w: Writer, client: Client, rt: ResourceType, obj: Obj) -> None:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    meta = obj.get("metadata") or {}
    w.kv(0, "Name", meta.get("name", ""))
    w.kv(0, "Namespace", meta.get("namespace", ""))
    selector = spec.get("selector")
    w.kv(0, "Selector", format_selector(selector) if rt.kind == "ReplicaSet" else _map_selector(selector))
    labels_and_annotations(w, obj)
    controlled_by(w, obj)
    w.kv(0, "Replicas", f"{status.get('replicas', 0)} current / {spec.get('replicas', 1)} desired")
    phases = [_d(p, "status", "phase") for p in await _owned(client, "pods", obj)]
    w.kv(0, "Pods Status", f"{phases.count('Running')} Running / {phases.count('Pending')} Waiting / "
                           f"{phases.count('Succeeded')} Succeeded / {phases.count('Failed')} Failed")
    pod_template(w, 0, spec.get("template"))
    _conditions(w, status.get("conditions") or [], "type", "status", "reason")


async def describe_service(w: Writer, client: Client, rt: ResourceType, obj: Obj) -> None:
    spec = obj.get("spec") or {}
    header(w, obj, rt)
    w.kv(0, "Selector", _map_selector(spec.get("selector")))
    w.kv(0, "Type", spec.get("type", "ClusterIP"))
    if spec.get("ipFamilyPolicy"):
        w.kv(0, "IP Family Policy", spec["ipFamilyPolicy"])
    if spec.get("ipFamilies"):
        w.kv(0, "IP Families", ",".join(spec["ipFamilies"]))
    w.kv(0, "IP", spec.get("clusterIP") or NONE)
    w.kv(0, "IPs", ",".join(spec.get("clusterIPs") or []) or NONE)
    if spec.get("externalName"):
        w.kv(0, "External Name", spec["externalName"])
    endpoints: Obj = {}
    try:
        endpoints = await client.get("endpoints", _d(obj, "metadata", "name"), _d(obj, "metadata", "namespace"))
    except StatusError as exc:
        if exc.code != 404:
            raise
    for port in spec.get("ports") or []:
        protocol = port.get("protocol", "TCP")
        w.line(0, "Port:", port.get("name") or "<unset>", f"{port.get('port')}/{protocol}")
        w.kv(0, "TargetPort", f"{port.get('targetPort', port.get('port'))}/{protocol}")
        if port.get("nodePort"):
            w.line(0, "NodePort:", port.get("name") or "<unset>", f"{port['nodePort']}/{protocol}")
        addresses = []
        for subset in endpoints.get("subsets") or []:
            numbers = [p.get("port") for p in subset.get("ports") or []
                       if not port.get("name") or p.get("name") == port.get("name")]
            addresses += [f"{a.get('ip')}:{n}" for a in subset.get("addresses") or [] for n in numbers]
        w.kv(0, "Endpoints", ",".join(addresses))
    w.kv(0, "Session Affinity", spec.get("sessionAffinity", "None"))
    if spec.get("externalTrafficPolicy"):
        w.kv(0, "External Traffic Policy", spec["externalTrafficPolicy"])


async def describe_node(w: Writer, client: Client, rt: ResourceType, obj: Obj) -> None:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    w.kv(0, "Name", meta.get("name", ""))
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix):] for k in meta.get("labels") or {} if k.startswith(prefix))
    w.kv(0, "Roles", ",".join(roles) or NONE)
    labels_and_annotations(w, obj)
    w.kv(0, "CreationTimestamp", timestamp(meta.get("creationTimestamp")))
    taints = [f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
              for t in spec.get("taints") or []]
    w.kv(0, "Taints", taints[0] if taints else NONE)
    for taint in taints[1:]:
        w.line(0, "", taint)
    w.kv(0, "Unschedulable", "true" if spec.get("unschedulable") else "false")
    _conditions(w, status.get("conditions") or [], "type", "status", "lastHeartbeatTime", "lastTransitionTime",
                "reason", "message")
    w.title(0, "Addresses:")
    for address in status.get("addresses") or []:
        w.kv(1, address.get("type", ""), address.get("address", ""))
    for key in ("capacity", "allocatable"):
        if status.get(key):
            w.title(0, f"{label_for(key)}:")
            for name, quantity in sorted(status[key].items()):
                w.kv(1, name, quantity)
    if status.get("nodeInfo"):
        w.title(0, "System Info:")
        for key, value in status["nodeInfo"].items():
            w.kv(1, label_for(key), value)
    if spec.get("podCIDR"):
        w.kv(0, "PodCIDR", spec["podCIDR"])
    pods = await client.list_all("pods", field_selector=f"spec.nodeName={meta.get('name', '')},"
                                                        "status.phase!=Succeeded,status.phase!=Failed")
    items = pods.get("items") or []
    w.title(0, f"Non-terminated Pods:  ({len(items)} in total)")
    if items:
        w.line(1, "Namespace", "Name", "Age")
        w.line(1, "---------", "----", "---")
        for pod in items:
            w.line(1, _d(pod, "metadata", "namespace"), _d(pod, "metadata", "name"),
                   age(_d(pod, "metadata", "creationTimestamp")))


async def describe_namespace(w: Writer, client: Client, rt: ResourceType, obj: Obj) -> None:
    header(w, obj, rt)
    w.kv(0, "Status", _d(obj, "status", "phase") or "Active")
    w.blank()
    w.title(0, "No resource quota.")
    w.blank()
    w.title(0, "No LimitRange resource.")


async def describe_configmap(w: Writer, client: Client, rt: ResourceType, obj: Obj) -> None:
    header(w, obj, rt)
    w.blank()
    w.title(0, "Data")
    w.title(0, "====")
    for key, value in sorted((obj.get("data") or {}).items()):
        w.title(0, f"{key}:")
        w.title(0, "----")
        for line in str(value).removesuffix("\n").split("\n"):
            w.title(0, line)
        w.blank()
    w.title(0, "BinaryData")
    w.title(0, "====")
    for key, value in sorted((obj.get("binaryData") or {}).items()):
        w.title(0, f"{key}: {_decoded_size(value)} bytes")
    w.blank()


def _decoded_size(value: Any) -> int:
    try:
        return len(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError):
        return len(str(value))


async def describe_secret(w: Writer, client: Client, rt: ResourceType, obj: Obj) -> None:
    header(w, obj, rt)
    w.blank()
    w.kv(0, "Type", obj.get("type", "Opaque"))
    w.blank()
    w.title(0, "Data")
    w.title(0, "====")
    for key, value in sorted((obj.get("data") or {}).items()):
        w.line(0, f"{key}:", f"{_decoded_size(value)} bytes")
    w.blank()


async def describe_workload(w: Writer, client: Client, rt: ResourceType, obj: Obj) -> None:
    """DaemonSets, StatefulSets and Jobs: the selector, the other spec fields, the pod template, the status."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    header(w, obj, rt, created=True)
    controlled_by(w, obj)
    w.kv(0, "Selector", format_selector(spec.get("selector")))
    for key, value in spec.items():
        if key not in ("selector", "template"):
            generic(w, 0, value, label_for(key))
    pod_template(w, 0, spec.get("template"))
    conditions = status.get("conditions") or []
    rest = {k: v for k, v in status.items() if k != "conditions"}
    if rest:
        generic(w, 0, rest, "Status")
    _conditions(w, conditions, "type", "status", "reason")


async def describe_generic(w: Writer, client: Client, rt: ResourceType, obj: Obj) -> None:
    """Any kind: the header, then every field, nested as kubectl's generic describer does."""
    header(w, obj, rt)
    w.kv(0, "API Version", obj.get("apiVersion", rt.api_version))
    w.kv(0, "Kind", obj.get("kind", rt.kind))
    shown = ("name", "namespace", "labels", "annotations", "managedFields")
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in shown}
    if metadata:
        generic(w, 0, metadata, "Metadata")
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata"):
            generic(w, 0, value, label_for(key))


DESCRIBERS: dict[str, Describer] = {
    "Pod": describe_pod,
    "Deployment": describe_deployment,
    "ReplicaSet": describe_replicaset,
    "ReplicationController": describe_replicaset,
    "Service": describe_service,
    "Node": describe_node,
    "Namespace": describe_namespace,
    "ConfigMap": describe_configmap,
    "Secret": describe_secret,
    "DaemonSet": describe_workload,
    "StatefulSet": describe_workload,
    "Job": describe_workload,
}
