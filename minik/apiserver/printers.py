"""What ``kubectl get`` shows for each kind: the column definitions and the cells Kubernetes' printers compute
(pkg/printers/internalversion), with every column filled (priority 1 marks those only ``-o wide`` shows).

Cells are computed from the stored JSON and tolerate missing or mistyped fields: anything that could be stored
prints. Kinds without a printer get Name and Age.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minik.api import jsonpath, schema
from minik.api.durations import human_duration
from minik.api.kinds.customresources import CustomResourceVersion, PrinterColumn
from minik.api.kinds.storage import access_modes_string, is_default_class
from minik.api.quantity import canonical_quantity
from minik.api.registry import ResourceType
from minik.api.timestamps import parse_time, rfc3339

Obj = dict[str, Any]
Cells = list[Any]

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
CORE = "io.k8s.api.core.v1"
APPS = "io.k8s.api.apps.v1"


# -- column definitions -------------------------------------------------------------------------------------
Column = tuple[str, str, str, int, str]  # name, type, description, priority, format


class Printer:
    """The columns of one kind and the function that computes a row's cells (and, for pods, row conditions)."""

    def __init__(self, columns: Callable[[], list[Column]],
                 cells: Callable[[Obj, float], Cells | tuple[Cells, list[Obj]]]) -> None:
        self._columns = columns
        self._cells = cells

    @functools.cached_property
    def _definitions(self) -> list[Obj]:
        return [{"name": name, "type": type_, "format": format_, "description": description, "priority": priority}
                for name, type_, description, priority, format_ in self._columns()]

    def columns(self) -> list[Obj]:
        """The Table's columnDefinitions (built on first use: descriptions come from the API schema)."""
        return self._definitions

    def cells(self, obj: Obj, now: float) -> tuple[Cells, list[Obj]]:
        result = self._cells(obj, now)
        if isinstance(result, tuple):
            return result
        return result, []


def doc(type_name: str, field: str) -> str:
    """A field's description from the API schema ('' when the schema does not know it)."""
    t = schema.load().types.get(type_name)
    prop = t.properties.get(field) if t is not None else None
    return prop.description if prop is not None else ""


def col(name: str, type_: str = "string", description: str = "", priority: int = 0, format_: str = "") -> Column:
    return (name, type_, description, priority, format_)


def name_col() -> Column:
    return col("Name", "string", doc(f"{META}.ObjectMeta", "name"), 0, "name")


def age_col() -> Column:
    return col("Age", "string", doc(f"{META}.ObjectMeta", "creationTimestamp"))


def _wide_template_cols(spec_type: str) -> list[Column]:
    return [col("Containers", description="Names of each container in the template.", priority=1),
            col("Images", description="Images referenced by each container in the template.", priority=1),
            col("Selector", description=doc(spec_type, "selector"), priority=1)]


# -- helpers shared by the printers ---------------------------------------------------------------------------
def since(value: Any, now: float) -> str:
    """translateTimestampSince: the age of a timestamp, ``<unknown>`` without one."""
    at = parse_time(value)
    return "<unknown>" if at is None else human_duration(now - at)


def _d(obj: Any, *path: str) -> Any:
    """obj[path[0]][path[1]]... or None; tolerant of missing or mistyped levels."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def format_labels(labels: Any) -> str:
    """labels.FormatLabels: ``a=b,c=d`` sorted by key, ``<none>`` when empty."""
    labels = _dict(labels)
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def selector_string(selector: Any) -> str:
    """A LabelSelector as kubectl shows it: requirements sorted by key (``app=web,tier in (a,b),!x``)."""
    if not isinstance(selector, dict):
        return ""
    requirements: list[tuple[str, str]] = []
    for key, value in _dict(selector.get("matchLabels")).items():
        requirements.append((key, f"{key}={value}"))
    for expr in _list(selector.get("matchExpressions")):
        if not isinstance(expr, dict):
            continue
        key, op = _str(expr.get("key")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in _list(expr.get("values"))))
        if op == "In":
            requirements.append((key, f"{key} in ({values})"))
        elif op == "NotIn":
            requirements.append((key, f"{key} notin ({values})"))
        elif op == "Exists":
            requirements.append((key, key))
        elif op == "DoesNotExist":
            requirements.append((key, f"!{key}"))
    requirements.sort(key=lambda r: r[0])
    return ",".join(text for _, text in requirements)


def container_cells(pod_spec: Any) -> list[str]:
    containers = [c for c in _list(_d(pod_spec, "containers")) if isinstance(c, dict)]
    return [",".join(_str(c.get("name")) for c in containers), ",".join(_str(c.get("image")) for c in containers)]


def _has_condition(conditions: Any, type_: str) -> bool:
    return any(isinstance(c, dict) and c.get("type") == type_ and c.get("status") == "True"
               for c in _list(conditions))


# -- pods -----------------------------------------------------------------------------------------------------
_POD_SUCCEEDED = [{"type": "Completed", "status": "True", "reason": "Succeeded",
                   "message": "The pod has completed successfully."}]
_POD_FAILED = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]


def _pod_columns() -> list[Column]:
    return [
        name_col(),
        col("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
        col("Status", description="The aggregate status of the containers in this pod."),
        col("Restarts", description="The number of times the containers in this pod have been restarted and when "
                                    "the last container in this pod has restarted."),
        age_col(),
        col("IP", description=doc(f"{CORE}.PodStatus", "podIP"), priority=1),
        col("Node", description=doc(f"{CORE}.PodSpec", "nodeName"), priority=1),
        col("Nominated Node", description=doc(f"{CORE}.PodStatus", "nominatedNodeName"), priority=1),
        col("Readiness Gates", description=doc(f"{CORE}.PodSpec", "readinessGates"), priority=1),
    ]


def _finished_at(status: Any) -> float | None:
    return parse_time(_d(status, "lastState", "terminated", "finishedAt"))


@dataclass
class _Restarts:
    """Containers' restarts added up, and when the latest of them last finished."""

    count: int = 0
    last: float | None = None

    def add(self, container: Obj) -> None:
        self.count += _int(container.get("restartCount"))
        finished = _finished_at(container)
        if finished is not None and (self.last is None or finished > self.last):
            self.last = finished

    def text(self, now: float) -> str:
        if self.count and self.last is not None:
            return f"{self.count} ({human_duration(now - self.last)} ago)"
        return str(self.count)


def _pod_cells(pod: Obj, now: float) -> tuple[Cells, list[Obj]]:
    """kubectl's printPod: the pod's name, ready containers, status reason, restarts, age, and the wide columns."""
    spec, status, meta = _dict(pod.get("spec")), _dict(pod.get("status")), _dict(pod.get("metadata"))
    init_specs = {c.get("name"): c for c in _list(spec.get("initContainers")) if isinstance(c, dict)}
    restartable = {name for name, c in init_specs.items() if c.get("restartPolicy") == "Always"}
    phase = _str(status.get("phase"))
    everything, sidecars = _Restarts(), _Restarts()
    init_reason, ready = _init_containers(status, len(init_specs), restartable, everything, sidecars)
    reason = init_reason or _pod_reason(status, phase)
    restarts = everything
    if init_reason is None or _has_condition(status.get("conditions"), "Initialized"):
        restarts = sidecars  # the sidecars' restarts, and then every app container's
        reason, running = _app_containers(status, reason, restarts)
        ready += running
    total = len(_list(spec.get("containers"))) + len(restartable)
    pod_ips = [p for p in _list(status.get("podIPs")) if isinstance(p, dict)]
    cells = [meta.get("name", ""), f"{ready}/{total}", _deleted_reason(meta, status, phase, reason),
             restarts.text(now), since(meta.get("creationTimestamp"), now),
             (_str(pod_ips[0].get("ip")) if pod_ips else "") or "<none>", _str(spec.get("nodeName")) or "<none>",
             _str(status.get("nominatedNodeName")) or "<none>", _readiness_gates(spec, status)]
    return cells, _POD_SUCCEEDED if phase == "Succeeded" else _POD_FAILED if phase == "Failed" else []


def _pod_reason(status: Obj, phase: str) -> str:
    """The pod's own reason, else its phase; SchedulingGated while a scheduling gate holds it."""
    for condition in _list(status.get("conditions")):
        if isinstance(condition, dict) and condition.get("type") == "PodScheduled" and \
                condition.get("reason") == "SchedulingGated":
            return "SchedulingGated"
    return _str(status.get("reason")) or phase


def _exit_reason(terminated: Obj) -> str:
    """Why a container terminated: its reason, else the signal or the exit code."""
    if terminated.get("reason"):
        return _str(terminated.get("reason"))
    signal = _int(terminated.get("signal"))
    return f"Signal:{signal}" if signal else f"ExitCode:{_int(terminated.get('exitCode'))}"


def _init_containers(status: Obj, count: int, restartable: set[Any], restarts: _Restarts,
                     sidecars: _Restarts) -> tuple[str | None, int]:
    """The init containers' restarts (``restarts``, and the sidecars' in ``sidecars`` too), how many started
    sidecars are ready, and the ``Init:...`` reason of the first init container not done (None when all are)."""
    ready = 0
    statuses = [c for c in _list(status.get("initContainerStatuses")) if isinstance(c, dict)]
    for i, container in enumerate(statuses):
        restarts.add(container)
        is_sidecar = container.get("name") in restartable
        if is_sidecar:
            sidecars.add(container)
        terminated = _d(container, "state", "terminated")
        if isinstance(terminated, dict) and _int(terminated.get("exitCode")) == 0:
            continue
        if is_sidecar and container.get("started") is True:
            if container.get("ready") is True:
                ready += 1
            continue
        waiting = _d(container, "state", "waiting")
        if isinstance(terminated, dict):
            return "Init:" + _exit_reason(terminated), ready
        if isinstance(waiting, dict) and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            return "Init:" + _str(waiting.get("reason")), ready
        return f"Init:{i}/{count}", ready
    return None, ready


def _app_containers(status: Obj, reason: str, restarts: _Restarts) -> tuple[str, int]:
    """The reason the app containers give (the first container's, read last to first), how many are running and
    ready, and their restarts added to ``restarts``."""
    ready = 0
    for container in reversed([c for c in _list(status.get("containerStatuses")) if isinstance(c, dict)]):
        restarts.add(container)
        waiting = _d(container, "state", "waiting")
        terminated = _d(container, "state", "terminated")
        if isinstance(waiting, dict) and waiting.get("reason"):
            reason = _str(waiting.get("reason"))
        elif isinstance(terminated, dict):
            reason = _exit_reason(terminated)
        elif container.get("ready") is True and isinstance(_d(container, "state", "running"), dict):
            ready += 1
    if reason == "Completed" and ready:
        reason = "Running" if _has_condition(status.get("conditions"), "Ready") else "NotReady"
    return reason, ready


def _deleted_reason(meta: Obj, status: Obj, phase: str, reason: str) -> str:
    """Unknown for a pod whose node was lost, Terminating for one still running while deleted."""
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        return "Unknown"
    if meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        return "Terminating"
    return reason


def _readiness_gates(spec: Obj, status: Obj) -> str:
    """How many of the pod's readiness gates hold, as "true/all"."""
    gates = _list(spec.get("readinessGates"))
    if not gates:
        return "<none>"
    true_count = 0
    for gate in gates:
        wanted = _d(gate, "conditionType")
        for condition in _list(status.get("conditions")):
            if isinstance(condition, dict) and condition.get("type") == wanted:
                true_count += condition.get("status") == "True"
                break
    return f"{true_count}/{len(gates)}"


# -- nodes and namespaces -------------------------------------------------------------------------------------
def _node_columns() -> list[Column]:
    info = f"{CORE}.NodeSystemInfo"
    addresses = doc(f"{CORE}.NodeStatus", "addresses")
    return [name_col(), col("Status", description="The status of the node"),
            col("Roles", description="The roles of the node"), age_col(),
            col("Version", description=doc(info, "kubeletVersion")),
            col("Internal-IP", description=addresses, priority=1),
            col("External-IP", description=addresses, priority=1),
            col("OS-Image", description=doc(info, "osImage"), priority=1),
            col("Kernel-Version", description=doc(info, "kernelVersion"), priority=1),
            col("Container-Runtime", description=doc(info, "containerRuntimeVersion"), priority=1)]


def node_roles(labels: Any) -> list[str]:
    roles: set[str] = set()
    for key, value in _dict(labels).items():
        if key.startswith("node-role.kubernetes.io/"):
            role = key[len("node-role.kubernetes.io/"):]
            if role:
                roles.add(role)
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    return sorted(roles)


def _node_address(status: Obj, type_: str) -> str:
    for address in _list(status.get("addresses")):
        if isinstance(address, dict) and address.get("type") == type_:
            return _str(address.get("address")) or "<none>"
    return "<none>"


def _node_cells(node: Obj, now: float) -> Cells:
    meta, spec, status = _dict(node.get("metadata")), _dict(node.get("spec")), _dict(node.get("status"))
    states: list[str] = []
    for condition in _list(status.get("conditions")):
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            states = ["Ready" if condition.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if spec.get("unschedulable") is True:
        states.append("SchedulingDisabled")
    info = _dict(status.get("nodeInfo"))
    return [meta.get("name", ""), ",".join(states), ",".join(node_roles(meta.get("labels"))) or "<none>",
            since(meta.get("creationTimestamp"), now), _str(info.get("kubeletVersion")),
            _node_address(status, "InternalIP"), _node_address(status, "ExternalIP"),
            _str(info.get("osImage")) or "<unknown>", _str(info.get("kernelVersion")) or "<unknown>",
            _str(info.get("containerRuntimeVersion")) or "<unknown>"]


def _namespace_columns() -> list[Column]:
    return [name_col(), col("Status", description="The status of the namespace"), age_col()]


def _namespace_cells(ns: Obj, now: float) -> Cells:
    meta = _dict(ns.get("metadata"))
    return [meta.get("name", ""), _str(_d(ns, "status", "phase")), since(meta.get("creationTimestamp"), now)]


# -- workloads ------------------------------------------------------------------------------------------------
def _deployment_columns() -> list[Column]:
    status = f"{APPS}.DeploymentStatus"
    return [name_col(), col("Ready", description="Number of the pod with ready state"),
            col("Up-to-date", description=doc(status, "updatedReplicas")),
            col("Available", description=doc(status, "availableReplicas")), age_col(),
            *_wide_template_cols(f"{APPS}.DeploymentSpec")]


def _deployment_cells(d: Obj, now: float) -> Cells:
    meta, spec, status = _dict(d.get("metadata")), _dict(d.get("spec")), _dict(d.get("status"))
    return [meta.get("name", ""), f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'), 1)}",
            _int(status.get("updatedReplicas")), _int(status.get("availableReplicas")),
            since(meta.get("creationTimestamp"), now), *container_cells(_d(spec, "template", "spec")),
            selector_string(spec.get("selector"))]


def _replica_columns(group_pkg: str, kind: str) -> Callable[[], list[Column]]:
    def columns() -> list[Column]:
        spec, status = f"{group_pkg}.{kind}Spec", f"{group_pkg}.{kind}Status"
        return [name_col(), col("Desired", "integer", doc(spec, "replicas")),
                col("Current", "integer", doc(status, "replicas")),
                col("Ready", "integer", doc(status, "readyReplicas")), age_col(), *_wide_template_cols(spec)]
    return columns


def _replica_cells(obj: Obj, now: float) -> Cells:
    meta, spec, status = _dict(obj.get("metadata")), _dict(obj.get("spec")), _dict(obj.get("status"))
    selector = spec.get("selector")
    if obj.get("kind") == "ReplicationController":
        selector_text = ",".join(f"{k}={v}" for k, v in sorted(_dict(selector).items()))
    else:
        selector_text = selector_string(selector)
    return [meta.get("name", ""), _int(spec.get("replicas"), 1), _int(status.get("replicas")),
            _int(status.get("readyReplicas")), since(meta.get("creationTimestamp"), now),
            *container_cells(_d(spec, "template", "spec")), selector_text]


def _daemonset_columns() -> list[Column]:
    status = f"{APPS}.DaemonSetStatus"
    return [name_col(), col("Desired", "integer", doc(status, "desiredNumberScheduled")),
            col("Current", "integer", doc(status, "currentNumberScheduled")),
            col("Ready", "integer", doc(status, "numberReady")),
            col("Up-to-date", "integer", doc(status, "updatedNumberScheduled")),
            col("Available", "integer", doc(status, "numberAvailable")),
            col("Node Selector", description=doc(f"{CORE}.PodSpec", "nodeSelector")), age_col(),
            *_wide_template_cols(f"{APPS}.DaemonSetSpec")]


def _daemonset_cells(ds: Obj, now: float) -> Cells:
    meta, spec, status = _dict(ds.get("metadata")), _dict(ds.get("spec")), _dict(ds.get("status"))
    return [meta.get("name", ""), _int(status.get("desiredNumberScheduled")),
            _int(status.get("currentNumberScheduled")), _int(status.get("numberReady")),
            _int(status.get("updatedNumberScheduled")), _int(status.get("numberAvailable")),
            format_labels(_d(spec, "template", "spec", "nodeSelector")), since(meta.get("creationTimestamp"), now),
            *container_cells(_d(spec, "template", "spec")), selector_string(spec.get("selector"))]


def _statefulset_columns() -> list[Column]:
    return [name_col(), col("Ready", description="Number of the pod with ready state"), age_col(),
            col("Containers", description="Names of each container in the template.", priority=1),
            col("Images", description="Images referenced by each container in the template.", priority=1)]


def _statefulset_cells(sts: Obj, now: float) -> Cells:
    meta, spec, status = _dict(sts.get("metadata")), _dict(sts.get("spec")), _dict(sts.get("status"))
    return [meta.get("name", ""), f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'), 1)}",
            since(meta.get("creationTimestamp"), now), *container_cells(_d(spec, "template", "spec"))]


def _job_columns() -> list[Column]:
    return [name_col(), col("Status", description="Status of the job."),
            col("Completions", description=doc("io.k8s.api.batch.v1.JobStatus", "succeeded")),
            col("Duration", description="Time required to complete the job."), age_col(),
            *_wide_template_cols("io.k8s.api.batch.v1.JobSpec")]


def _job_cells(job: Obj, now: float) -> Cells:
    meta, spec, status = _dict(job.get("metadata")), _dict(job.get("spec")), _dict(job.get("status"))
    succeeded = _int(status.get("succeeded"))
    completions = spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        completions_text = f"{succeeded}/{completions}"
    else:
        parallelism = _int(spec.get("parallelism"))
        completions_text = f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
    started, finished = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    duration = ""
    if started is not None:
        duration = human_duration((finished if finished is not None else now) - started)
    conditions = status.get("conditions")
    if _has_condition(conditions, "Complete"):
        state = "Complete"
    elif _has_condition(conditions, "Failed"):
        state = "Failed"
    elif meta.get("deletionTimestamp"):
        state = "Terminating"
    elif _has_condition(conditions, "Suspended"):
        state = "Suspended"
    elif _has_condition(conditions, "FailureTarget"):
        state = "FailureTarget"
    elif _has_condition(conditions, "SuccessCriteriaMet"):
        state = "SuccessCriteriaMet"
    else:
        state = "Running"
    return [meta.get("name", ""), state, completions_text, duration, since(meta.get("creationTimestamp"), now),
            *container_cells(_d(spec, "template", "spec")), selector_string(spec.get("selector"))]


def _cronjob_columns() -> list[Column]:
    spec = "io.k8s.api.batch.v1.CronJobSpec"
    status = "io.k8s.api.batch.v1.CronJobStatus"
    return [name_col(), col("Schedule", description=doc(spec, "schedule")),
            col("Timezone", description=doc(spec, "timeZone")),
            col("Suspend", "boolean", doc(spec, "suspend")),
            col("Active", "integer", doc(status, "active")),
            col("Last Schedule", description=doc(status, "lastScheduleTime")), age_col(),
            *_wide_template_cols("io.k8s.api.batch.v1.JobSpec")]


def _cronjob_cells(cj: Obj, now: float) -> Cells:
    meta, spec, status = _dict(cj.get("metadata")), _dict(cj.get("spec")), _dict(cj.get("status"))
    suspend = spec.get("suspend")
    last = status.get("lastScheduleTime")
    job_spec = _d(spec, "jobTemplate", "spec")
    return [meta.get("name", ""), _str(spec.get("schedule")), _str(spec.get("timeZone")) or "<none>",
            "<unset>" if not isinstance(suspend, bool) else ("True" if suspend else "False"),
            len(_list(status.get("active"))), since(last, now) if last else "<none>",
            since(meta.get("creationTimestamp"), now), *container_cells(_d(job_spec, "template", "spec")),
            selector_string(_d(job_spec, "selector"))]


# -- services and endpoints -----------------------------------------------------------------------------------
def _service_columns() -> list[Column]:
    spec = f"{CORE}.ServiceSpec"
    return [name_col(), col("Type", description=doc(spec, "type")),
            col("Cluster-IP", description=doc(spec, "clusterIP")),
            col("External-IP", description=doc(spec, "externalIPs")),
            col("Port(s)", description=doc(spec, "ports")), age_col(),
            col("Selector", description=doc(spec, "selector"), priority=1)]


def _load_balancer_ips(status: Any) -> str:
    ingress = _list(_d(status, "loadBalancer", "ingress"))
    values = [_str(i.get("ip")) or _str(i.get("hostname")) for i in ingress if isinstance(i, dict)]
    return ",".join(v for v in values if v)


def _service_external_ip(svc: Obj) -> str:
    spec = _dict(svc.get("spec"))
    kind = spec.get("type")
    external = [str(ip) for ip in _list(spec.get("externalIPs"))]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "LoadBalancer":
        lb = _load_balancer_ips(svc.get("status"))
        if external:
            return ",".join(([*lb.split(",")] if lb else []) + external)
        return lb or "<pending>"
    if kind == "ExternalName":
        return _str(spec.get("externalName"))
    return "<unknown>"


def port_string(ports: Any) -> str:
    pieces = []
    for port in _list(ports):
        if not isinstance(port, dict):
            continue
        protocol = _str(port.get("protocol")) or "TCP"
        node_port = _int(port.get("nodePort"))
        pieces.append(f"{_int(port.get('port'))}:{node_port}/{protocol}" if node_port > 0
                      else f"{_int(port.get('port'))}/{protocol}")
    return ",".join(pieces)


def _service_cells(svc: Obj, now: float) -> Cells:
    meta, spec = _dict(svc.get("metadata")), _dict(svc.get("spec"))
    cluster_ips = _list(spec.get("clusterIPs"))
    internal = str(cluster_ips[0]) if cluster_ips else (_str(spec.get("clusterIP")) or "<none>")
    return [meta.get("name", ""), _str(spec.get("type")), internal, _service_external_ip(svc),
            port_string(spec.get("ports")) or "<none>", since(meta.get("creationTimestamp"), now),
            format_labels(spec.get("selector"))]


def _endpoints_columns() -> list[Column]:
    return [name_col(), col("Endpoints", description=doc(f"{CORE}.Endpoints", "subsets")), age_col()]


def format_endpoints(endpoints: Obj) -> str:
    subsets = [s for s in _list(endpoints.get("subsets")) if isinstance(s, dict)]
    if not subsets:
        return "<none>"
    shown: list[str] = []
    limit, more, count = 3, False, 0
    for subset in subsets:
        addresses = [_str(a.get("ip")) for a in _list(subset.get("addresses")) if isinstance(a, dict)]
        ports = [p for p in _list(subset.get("ports")) if isinstance(p, dict)]
        if not ports:
            count += len(addresses)
            for ip in addresses:
                if len(shown) == limit:
                    more = True
                    break
                shown.append(ip)
            continue
        for port in ports:
            count += len(addresses)
            for ip in addresses:
                if len(shown) == limit:
                    more = True
                    break
                host = f"[{ip}]" if ":" in ip else ip
                shown.append(f"{host}:{_int(port.get('port'))}")
    text = ",".join(shown)
    if more:
        return f"{text} + {count - limit} more..."
    return text or "<none>"


def _endpoints_cells(ep: Obj, now: float) -> Cells:
    meta = _dict(ep.get("metadata"))
    return [meta.get("name", ""), format_endpoints(ep), since(meta.get("creationTimestamp"), now)]


# -- events ---------------------------------------------------------------------------------------------------
def _event_columns() -> list[Column]:
    event = f"{CORE}.Event"
    return [col("Last Seen", description=doc(event, "lastTimestamp")),
            col("Type", description=doc(event, "type")),
            col("Reason", description=doc(event, "reason")),
            col("Object", description=doc(event, "involvedObject")),
            col("Subobject", description=doc(f"{CORE}.ObjectReference", "fieldPath"), priority=1),
            col("Source", description=doc(event, "source"), priority=1),
            col("Message", description=doc(event, "message")),
            col("First Seen", description=doc(event, "firstTimestamp"), priority=1),
            col("Count", description=doc(event, "count"), priority=1),
            col("Name", description=doc(f"{META}.ObjectMeta", "name"), priority=1, format_="name")]


def _event_cells(ev: Obj, now: float) -> Cells:
    """kubectl's printEvent, for core/v1 Events and their events.k8s.io/v1 view alike (which names the same
    fields note, regarding, deprecatedSource...)."""
    meta = _dict(ev.get("metadata"))

    def field(core: str, view: str) -> Any:
        value = ev.get(core)
        return value if value is not None else ev.get(view)

    first_at, last_at = field("firstTimestamp", "deprecatedFirstTimestamp"), field("lastTimestamp",
                                                                                   "deprecatedLastTimestamp")
    first = since(first_at, now) if first_at else since(ev.get("eventTime"), now)
    last = since(last_at, now) if last_at else first
    count = _int(field("count", "deprecatedCount"))
    series = ev.get("series")
    if isinstance(series, dict):
        last = since(series.get("lastObservedTime"), now)
        count = _int(series.get("count"))
    elif count == 0:
        count = 1
    involved = _dict(field("involvedObject", "regarding"))
    kind = _str(involved.get("kind")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = _dict(field("source", "deprecatedSource"))
    component = _str(source.get("component")) or _str(field("reportingComponent", "reportingController"))
    host = _str(source.get("host")) or _str(ev.get("reportingInstance"))
    return [last, _str(ev.get("type")), _str(ev.get("reason")), target, _str(involved.get("fieldPath")),
            f"{component}, {host}" if host else component, _str(field("message", "note")).strip(), first, count,
            meta.get("name", "")]


# -- configuration and the rest -------------------------------------------------------------------------------
def _configmap_columns() -> list[Column]:
    return [name_col(), col("Data", "integer", doc(f"{CORE}.ConfigMap", "data")), age_col()]


def _configmap_cells(cm: Obj, now: float) -> Cells:
    meta = _dict(cm.get("metadata"))
    return [meta.get("name", ""), len(_dict(cm.get("data"))) + len(_dict(cm.get("binaryData"))),
            since(meta.get("creationTimestamp"), now)]


def _secret_columns() -> list[Column]:
    return [name_col(), col("Type", description=doc(f"{CORE}.Secret", "type")),
            col("Data", "integer", doc(f"{CORE}.Secret", "data")), age_col()]


def _secret_cells(secret: Obj, now: float) -> Cells:
    meta = _dict(secret.get("metadata"))
    keys = set(_dict(secret.get("data"))) | set(_dict(secret.get("stringData")))
    return [meta.get("name", ""), _str(secret.get("type")), len(keys), since(meta.get("creationTimestamp"), now)]


def _serviceaccount_columns() -> list[Column]:
    return [name_col(), col("Secrets", "integer", doc(f"{CORE}.ServiceAccount", "secrets")), age_col()]


def _serviceaccount_cells(sa: Obj, now: float) -> Cells:
    meta = _dict(sa.get("metadata"))
    return [meta.get("name", ""), len(_list(sa.get("secrets"))), since(meta.get("creationTimestamp"), now)]


def _lease_columns() -> list[Column]:
    return [name_col(), col("Holder", description=doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")),
            age_col()]


def _lease_cells(lease: Obj, now: float) -> Cells:
    meta = _dict(lease.get("metadata"))
    return [meta.get("name", ""), _str(_d(lease, "spec", "holderIdentity")), since(meta.get("creationTimestamp"), now)]


def _priorityclass_columns() -> list[Column]:
    pc = "io.k8s.api.scheduling.v1.PriorityClass"
    return [name_col(), col("Value", "integer", doc(pc, "value")),
            col("Global-Default", "boolean", doc(pc, "globalDefault")), age_col(),
            col("PreemptionPolicy", description=doc(pc, "preemptionPolicy"))]


def _priorityclass_cells(pc: Obj, now: float) -> Cells:
    meta = _dict(pc.get("metadata"))
    return [meta.get("name", ""), _int(pc.get("value")), pc.get("globalDefault") is True,
            since(meta.get("creationTimestamp"), now), _str(pc.get("preemptionPolicy"))]


def _role_columns() -> list[Column]:
    return [name_col(), col("Created At", "date", doc(f"{META}.ObjectMeta", "creationTimestamp"))]


def _role_cells(role: Obj, now: float) -> Cells:
    meta = _dict(role.get("metadata"))
    return [meta.get("name", ""), _str(meta.get("creationTimestamp"))]


def _binding_columns() -> list[Column]:
    rbac = "io.k8s.api.rbac.v1"
    return [name_col(), col("Role", description=doc(f"{rbac}.RoleBinding", "roleRef")), age_col(),
            col("Users", description="Users in the roleBinding", priority=1),
            col("Groups", description="Groups in the roleBinding", priority=1),
            col("ServiceAccounts", description="ServiceAccounts in the roleBinding", priority=1)]


def _binding_cells(binding: Obj, now: float) -> Cells:
    meta = _dict(binding.get("metadata"))
    ref = _dict(binding.get("roleRef"))
    subjects = [s for s in _list(binding.get("subjects")) if isinstance(s, dict)]

    def named(kind: str) -> str:
        return ", ".join(_str(s.get("name")) for s in subjects if s.get("kind") == kind)

    accounts = ", ".join(f"{_str(s.get('namespace'))}/{_str(s.get('name'))}" for s in subjects
                         if s.get("kind") == "ServiceAccount")
    return [meta.get("name", ""), f"{_str(ref.get('kind'))}/{_str(ref.get('name'))}",
            since(meta.get("creationTimestamp"), now), named("User"), named("Group"), accounts]


def _webhook_configuration_columns() -> list[Column]:
    return [name_col(), col("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this "
                                                   "configuration"), age_col()]


def _webhook_configuration_cells(config: Obj, now: float) -> Cells:
    meta = _dict(config.get("metadata"))
    return [meta.get("name", ""), len(_list(config.get("webhooks"))), since(meta.get("creationTimestamp"), now)]


def _policy_columns() -> list[Column]:
    return [name_col(), col("Validations", "integer", "Validations indicates the number of validation expressions"),
            col("ParamKind", description="ParamKind specifies the kind of resources used to parameterize this "
                                         "policy"), age_col()]


def _policy_cells(policy: Obj, now: float) -> Cells:
    meta, spec = _dict(policy.get("metadata")), _dict(policy.get("spec"))
    kind = _dict(spec.get("paramKind"))
    param_kind = f"{_str(kind.get('apiVersion'))}/{_str(kind.get('kind'))}" if kind else "<unset>"
    return [meta.get("name", ""), len(_list(spec.get("validations"))), param_kind,
            since(meta.get("creationTimestamp"), now)]


def _policy_binding_columns() -> list[Column]:
    return [name_col(), col("PolicyName", description="PolicyName indicates the policy definition which the policy "
                                                      "binding binded to"),
            col("ParamRef", description="ParamRef indicates the param resource which sets the configration param"),
            age_col()]


def _policy_binding_cells(binding: Obj, now: float) -> Cells:
    meta, spec = _dict(binding.get("metadata")), _dict(binding.get("spec"))
    ref = _dict(spec.get("paramRef"))
    param = "<unset>"
    if ref.get("name"):
        param = f"{_str(ref.get('namespace')) or '*'}/{_str(ref.get('name'))}"
    elif ref.get("selector") is not None:
        param = selector_string(ref.get("selector"))
    return [meta.get("name", ""), _str(spec.get("policyName")), param, since(meta.get("creationTimestamp"), now)]
def _podtemplate_columns() -> list[Column]:
    return [name_col(),
            col("Containers", description="Names of each container in the template."),
            col("Images", description="Images referenced by each container in the template."),
            col("Pod Labels", description="The labels for the pod template.")]


def _podtemplate_cells(template: Obj, now: float) -> Cells:
    meta = _dict(template.get("metadata"))
    return [meta.get("name", ""), *container_cells(_d(template, "template", "spec")),
            format_labels(_d(template, "template", "metadata", "labels"))]


def _runtimeclass_columns() -> list[Column]:
    return [name_col(), col("Handler", description=doc("io.k8s.api.node.v1.RuntimeClass", "handler")), age_col()]


def _runtimeclass_cells(rc: Obj, now: float) -> Cells:
    meta = _dict(rc.get("metadata"))
    return [meta.get("name", ""), _str(rc.get("handler")), since(meta.get("creationTimestamp"), now)]


def _apiservice_columns() -> list[Column]:
    spec = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceSpec"
    return [name_col(), col("Service", description=doc(spec, "service")),
            col("Available", description="Whether this service is available."), age_col()]


def _apiservice_cells(api: Obj, now: float) -> Cells:
    """kubectl's printAPIService: Local without a service; True, or the condition's status and reason."""
    meta = _dict(api.get("metadata"))
    service = _d(api, "spec", "service")
    where = f"{_str(_d(service, 'namespace'))}/{_str(_d(service, 'name'))}" if isinstance(service, dict) else "Local"
    available = "Unknown"
    for condition in _list(_d(api, "status", "conditions")):
        if isinstance(condition, dict) and condition.get("type") == "Available":
            status, reason = _str(condition.get("status")), _str(condition.get("reason"))
            available = f"{status} ({reason})" if status != "True" and reason else status
    return [meta.get("name", ""), where, available, since(meta.get("creationTimestamp"), now)]


def _pdb_columns() -> list[Column]:
    return [name_col(), col("Min Available", description="The minimum number of pods that must be available."),
            col("Max Unavailable", description="The maximum number of pods that may be unavailable."),
            col("Allowed Disruptions", "integer",
                description="Calculated number of pods that may be disrupted at this time."),
            age_col()]


def _pdb_cells(pdb: Obj, now: float) -> Cells:
    """printPodDisruptionBudget: each budget as given (N/A when unset), and the disruptions the status allows."""
    meta, spec = _dict(pdb.get("metadata")), _dict(pdb.get("spec"))
    budgets = ["N/A" if spec.get(f) is None else str(spec[f]) for f in ("minAvailable", "maxUnavailable")]
    return [meta.get("name", ""), *budgets, _int(_d(pdb, "status", "disruptionsAllowed")),
            since(meta.get("creationTimestamp"), now)]


def _csr_columns() -> list[Column]:
    spec = "io.k8s.api.certificates.v1.CertificateSigningRequestSpec"
    return [name_col(), age_col(), col("SignerName", description=doc(spec, "signerName")),
            col("Requestor", description="Name of the user which made this request."),
            col("RequestedDuration", description="Expiration time requested for the certificate."),
            col("Condition", description="State of this request.")]


def _csr_cells(csr: Obj, now: float) -> Cells:
    """kubectl's printCertificateSigningRequest: Denied, Approved or Pending, then Failed and Issued."""
    meta, spec = _dict(csr.get("metadata")), _dict(csr.get("spec"))
    types = {_str(c.get("type")) for c in _list(_d(csr, "status", "conditions")) if isinstance(c, dict)}
    condition = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        condition += ",Failed"
    if _d(csr, "status", "certificate"):
        condition += ",Issued"
    seconds = spec.get("expirationSeconds")
    duration = human_duration(float(seconds)) if isinstance(seconds, int) else "<none>"
    return [meta.get("name", ""), since(meta.get("creationTimestamp"), now), _str(spec.get("signerName")) or "<none>",
            _str(spec.get("username")), duration, condition]


def _quota_columns() -> list[Column]:
    return [name_col(), age_col(),
            col("Request", description="Request represents a minimum amount of cpu/memory that a container may "
                                       "consume."),
            col("Limit", description="Limits control the maximum amount of cpu/memory that a container may use "
                                     "independent of contention on the node.")]


def _quota_cells(quota: Obj, now: float) -> Cells:
    """``pods: 1/2, requests.cpu: 500m/1`` (used/hard, sorted by name), limits.* in the Limit column."""
    meta = _dict(quota.get("metadata"))
    used, hard = _dict(_d(quota, "status", "used")), _dict(_d(quota, "status", "hard"))
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(_dict(_d(quota, "spec", "hard"))):
        column = limits if name.split(".")[0] == "limits" and "." in name else requests
        column.append(f"{name}: {_quantity(used.get(name))}/{_quantity(hard.get(name))}")
    return [meta.get("name", ""), since(meta.get("creationTimestamp"), now), ", ".join(requests), ", ".join(limits)]


# -- issue 21's storage kinds ------------------------------------------------------------------------------------
def _pv_columns() -> list[Column]:
    spec = f"{CORE}.PersistentVolumeSpec"
    return [name_col(), col("Capacity", description=doc(spec, "capacity")),
            col("Access Modes", description=doc(spec, "accessModes")),
            col("Reclaim Policy", description=doc(spec, "persistentVolumeReclaimPolicy")),
            col("Status", description=doc(f"{CORE}.PersistentVolumeStatus", "phase")),
            col("Claim", description=doc(spec, "claimRef")),
            col("StorageClass", description="StorageClass of the pv"),
            col("VolumeAttributesClass", description="VolumeAttributesClass of the pv"),
            col("Reason", description=doc(f"{CORE}.PersistentVolumeStatus", "reason")),
            age_col(), col("VolumeMode", description=doc(spec, "volumeMode"), priority=1)]


def _pv_cells(pv: Obj, now: float) -> Cells:
    """kubectl's printPersistentVolume: Terminating while deleted, the claim as NAMESPACE/NAME."""
    meta, spec = _dict(pv.get("metadata")), _dict(pv.get("spec"))
    claim = _dict(spec.get("claimRef"))
    phase = "Terminating" if meta.get("deletionTimestamp") else _str(_d(pv, "status", "phase"))
    return [meta.get("name", ""), _storage_cell(_d(spec, "capacity", "storage")),
            access_modes_string(spec.get("accessModes")), _str(spec.get("persistentVolumeReclaimPolicy")), phase,
            f"{_str(claim.get('namespace'))}/{_str(claim.get('name'))}" if claim else "",
            _str(spec.get("storageClassName")), _str(spec.get("volumeAttributesClassName")) or "<unset>",
            _str(_d(pv, "status", "reason")), since(meta.get("creationTimestamp"), now),
            _str(spec.get("volumeMode")) or "<unset>"]


def _pvc_columns() -> list[Column]:
    spec = f"{CORE}.PersistentVolumeClaimSpec"
    return [name_col(), col("Status", description=doc(f"{CORE}.PersistentVolumeClaimStatus", "phase")),
            col("Volume", description=doc(spec, "volumeName")),
            col("Capacity", description=doc(f"{CORE}.PersistentVolumeClaimStatus", "capacity")),
            col("Access Modes", description=doc(f"{CORE}.PersistentVolumeClaimStatus", "accessModes")),
            col("StorageClass", description="StorageClass of the pvc"),
            col("VolumeAttributesClass", description="VolumeAttributesClass of the pvc"), age_col(),
            col("VolumeMode", description=doc(spec, "volumeMode"), priority=1)]


def _pvc_cells(claim: Obj, now: float) -> Cells:
    """kubectl's printPersistentVolumeClaim: capacity and access modes from the status once bound to a volume."""
    meta, spec = _dict(claim.get("metadata")), _dict(claim.get("spec"))
    phase = "Terminating" if meta.get("deletionTimestamp") else _str(_d(claim, "status", "phase"))
    capacity = modes = ""
    if spec.get("volumeName"):
        capacity = _storage_cell(_d(claim, "status", "capacity", "storage"))
        modes = access_modes_string(_d(claim, "status", "accessModes"))
    return [meta.get("name", ""), phase, _str(spec.get("volumeName")), capacity, modes,
            _str(spec.get("storageClassName")), _str(spec.get("volumeAttributesClassName")) or "<unset>",
            since(meta.get("creationTimestamp"), now), _str(spec.get("volumeMode")) or "<unset>"]


def _storageclass_columns() -> list[Column]:
    sc = "io.k8s.api.storage.v1.StorageClass"
    return [name_col(), col("Provisioner", description=doc(sc, "provisioner")),
            col("ReclaimPolicy", description=doc(sc, "reclaimPolicy")),
            col("VolumeBindingMode", description=doc(sc, "volumeBindingMode")),
            col("AllowVolumeExpansion", description=doc(sc, "allowVolumeExpansion")), age_col()]


def _storageclass_cells(sc: Obj, now: float) -> Cells:
    """kubectl's printStorageClass: ``(default)`` after the default class's name."""
    meta = _dict(sc.get("metadata"))
    name = meta.get("name", "") + (" (default)" if is_default_class(sc) else "")
    return [name, _str(sc.get("provisioner")), _str(sc.get("reclaimPolicy")) or "Delete",
            _str(sc.get("volumeBindingMode")) or "Immediate", sc.get("allowVolumeExpansion") is True,
            since(meta.get("creationTimestamp"), now)]


def _storage_cell(value: Any) -> str:
    return _quantity(value) if value is not None else "0"


def _quantity(value: Any) -> str:
    try:
        return canonical_quantity(value) if value is not None else "0"
    except ValueError:
        return str(value)


def _default_columns() -> list[Column]:
    return [name_col(), age_col()]


def _default_cells(obj: Obj, now: float) -> Cells:
    meta = _dict(obj.get("metadata"))
    return [meta.get("name", ""), since(meta.get("creationTimestamp"), now)]


_PRINTERS: dict[str, Printer] = {
    "Pod": Printer(_pod_columns, _pod_cells),
    "Node": Printer(_node_columns, _node_cells),
    "Namespace": Printer(_namespace_columns, _namespace_cells),
    "Deployment": Printer(_deployment_columns, _deployment_cells),
    "ReplicaSet": Printer(_replica_columns(APPS, "ReplicaSet"), _replica_cells),
    "ReplicationController": Printer(_replica_columns(CORE, "ReplicationController"), _replica_cells),
    "DaemonSet": Printer(_daemonset_columns, _daemonset_cells),
    "StatefulSet": Printer(_statefulset_columns, _statefulset_cells),
    "Job": Printer(_job_columns, _job_cells),
    "CronJob": Printer(_cronjob_columns, _cronjob_cells),
    "Service": Printer(_service_columns, _service_cells),
    "Endpoints": Printer(_endpoints_columns, _endpoints_cells),
    "Event": Printer(_event_columns, _event_cells),
    "ConfigMap": Printer(_configmap_columns, _configmap_cells),
    "Secret": Printer(_secret_columns, _secret_cells),
    "ServiceAccount": Printer(_serviceaccount_columns, _serviceaccount_cells),
    "Lease": Printer(_lease_columns, _lease_cells),
    "PriorityClass": Printer(_priorityclass_columns, _priorityclass_cells),
    "Role": Printer(_role_columns, _role_cells),
    "ClusterRole": Printer(_role_columns, _role_cells),
    "RoleBinding": Printer(_binding_columns, _binding_cells),
    "ClusterRoleBinding": Printer(_binding_columns, _binding_cells),
    "MutatingWebhookConfiguration": Printer(_webhook_configuration_columns, _webhook_configuration_cells),
    "ValidatingWebhookConfiguration": Printer(_webhook_configuration_columns, _webhook_configuration_cells),
    "ValidatingAdmissionPolicy": Printer(_policy_columns, _policy_cells),
    "ValidatingAdmissionPolicyBinding": Printer(_policy_binding_columns, _policy_binding_cells),
    # issue 20's kinds
    "LimitRange": Printer(_role_columns, _role_cells),
    "ResourceQuota": Printer(_quota_columns, _quota_cells),
    "PodTemplate": Printer(_podtemplate_columns, _podtemplate_cells),
    "RuntimeClass": Printer(_runtimeclass_columns, _runtimeclass_cells),
    "APIService": Printer(_apiservice_columns, _apiservice_cells),
    "CertificateSigningRequest": Printer(_csr_columns, _csr_cells),
    # issue 21's kinds
    "PodDisruptionBudget": Printer(_pdb_columns, _pdb_cells),
    # issue 21's storage kinds
    "PersistentVolume": Printer(_pv_columns, _pv_cells),
    "PersistentVolumeClaim": Printer(_pvc_columns, _pvc_cells),
    "StorageClass": Printer(_storageclass_columns, _storageclass_cells),
}
_DEFAULT = Printer(_default_columns, _default_cells)


def _crd_columns() -> list[Column]:
    return [name_col(), col("Created At", "date", doc(f"{META}.ObjectMeta", "creationTimestamp"))]


def _crd_cells(crd: Obj, now: float) -> Cells:
    meta = _dict(crd.get("metadata"))
    at = parse_time(meta.get("creationTimestamp"))
    return [meta.get("name", ""), rfc3339(at) if at is not None else None]


_PRINTERS["CustomResourceDefinition"] = Printer(_crd_columns, _crd_cells)


def printer_for(kind: str) -> Printer:
    """The printer of a built-in kind; kinds without one get Name and Age."""
    return _PRINTERS.get(kind, _DEFAULT)


def printer_of(resource: ResourceType) -> Printer:
    """The printer of a resource: a custom resource's comes from its CRD's additionalPrinterColumns."""
    if resource.custom is not None:
        return custom_printer(resource.custom)
    return printer_for(resource.kind)


# -- custom resources ---------------------------------------------------------------------------------------------
_AGE = PrinterColumn("Age", "date", "", "", 0, ".metadata.creationTimestamp")


@functools.lru_cache(maxsize=256)
def custom_printer(info: CustomResourceVersion) -> Printer:
    """Name, then the version's additionalPrinterColumns (Age when it has none, as Kubernetes serves them): each
    cell the first value its JSONPath finds, typed as the column says (a date as the time since)."""
    columns = info.columns or (_AGE,)
    paths = [jsonpath.parse(column.json_path) for column in columns]

    def definitions() -> list[Column]:
        out = [name_col()]
        for column in columns:
            description = column.description or (doc(f"{META}.ObjectMeta", "creationTimestamp") if column is _AGE
                                                  else f"Custom resource definition column (in JSONPath format): "
                                                       f"{column.json_path}")
            out.append(col(column.name, column.type, description, column.priority, column.format))
        return out

    def cells(obj: Obj, now: float) -> Cells:
        row: Cells = [_dict(obj.get("metadata")).get("name", "")]
        for column, steps in zip(columns, paths):
            found = jsonpath.find(steps, obj)
            row.append(_typed_cell(column.type, found[0], now) if found else None)
        return row

    return Printer(definitions, cells)


def _typed_cell(type_: str, value: Any, now: float) -> Any:
    """A printer column's cell (Kubernetes' cellForJSONValue): None when the value does not have the column's type."""
    if value is None:
        return None
    if type_ == "string":
        return jsonpath.text(value)
    if type_ == "integer":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return int(value)
    if type_ == "number":
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if type_ == "boolean":
        return value if isinstance(value, bool) else None
    if type_ == "date":
        if not isinstance(value, str):
            return None
        return "<invalid>" if parse_time(value) is None else since(value, now)
    return None


def _controllerrevision_columns() -> list[Column]:
    return [name_col(), col("Controller", description="Controller of the object"),
            col("Revision", description=doc(f"{APPS}.ControllerRevision", "revision")), age_col()]


def _controllerrevision_cells(revision: Obj, now: float) -> Cells:
    """The controller as kubectl names a resource: ``statefulset.apps/web`` (kind.group, lower case)."""
    meta = _dict(revision.get("metadata"))
    controller = "<none>"
    for ref in _list(meta.get("ownerReferences")):
        if isinstance(ref, dict) and ref.get("controller"):
            group = str(ref.get("apiVersion") or "").rpartition("/")[0]
            kind = str(ref.get("kind") or "")
            controller = f"{kind}.{group}".lower().rstrip(".") + f"/{ref.get('name', '')}"
            break
    return [meta.get("name", ""), controller, _int(revision.get("revision")), since(meta.get("creationTimestamp"), now)]


_PRINTERS["ControllerRevision"] = Printer(_controllerrevision_columns, _controllerrevision_cells)
