"""A pod's status as Kubernetes reports it, computed from the spec, what the runtime holds and what the pod
worker knows (waiting reasons, probe results). Pure functions: the worker writes the result only when it differs
from what the API already has."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from minik.api.timestamps import now_rfc3339, rfc3339
from minik.kubelet.runtimes.base import ContainerInfo, PodRecord

Obj = dict[str, Any]

TERMINAL_PHASES = ("Succeeded", "Failed")


@dataclass
class WorkerView:
    """What the pod worker adds to the runtime's view."""

    runtime_name: str
    host_ip: str
    waiting: dict[str, tuple[str, str]] = field(default_factory=dict)
    """container name -> (reason, message) while it cannot run: ErrImagePull, CrashLoopBackOff..."""
    not_ready: set[str] = field(default_factory=set)
    """running containers whose readiness (or startup) probe has not succeeded"""
    not_started: set[str] = field(default_factory=set)
    """running containers whose startup probe has not succeeded"""


def _terminated(info: ContainerInfo, runtime: str) -> Obj:
    out: Obj = {"exitCode": info.exit_code if info.exit_code is not None else 0, "reason": info.reason or
                ("Completed" if info.exit_code == 0 else "Error")}
    if info.message:
        out["message"] = info.message
    out["startedAt"] = rfc3339(info.started_at) if info.started_at else None
    out["finishedAt"] = rfc3339(info.finished_at) if info.finished_at else None
    out["containerID"] = f"{runtime}://{info.id}"
    return out


def container_status(spec: Obj, record: PodRecord | None, view: WorkerView, default_waiting: str) -> Obj:
    name = spec.get("name", "")
    latest = record.latest(name) if record else None
    previous = record.previous(name) if record else None
    waiting = view.waiting.get(name)
    status: Obj = {"name": name, "image": spec.get("image", ""), "imageID": "", "ready": False,
                   "restartCount": latest.attempt if latest else 0, "started": False}
    last: Obj = {}
    if latest is None:
        reason, message = waiting or (default_waiting, "")
        state: Obj = {"waiting": {"reason": reason, **({"message": message} if message else {})}}
    else:
        status["imageID"] = latest.image_id
        status["containerID"] = f"{view.runtime_name}://{latest.id}"
        if latest.state == "running":
            started = latest.started_at
            state = {"running": {"startedAt": now_rfc3339() if started is None else rfc3339(started)}}
            status["started"] = name not in view.not_started
            status["ready"] = name not in view.not_ready
            if previous is not None and previous.state == "exited":
                last = {"terminated": _terminated(previous, view.runtime_name)}
        elif latest.state == "created":
            state = {"waiting": {"reason": "ContainerCreating"}}
        elif waiting is not None:  # exited, and not restarted yet (back-off)
            state = {"waiting": {"reason": waiting[0], "message": waiting[1]}}
            last = {"terminated": _terminated(latest, view.runtime_name)}
        else:
            state = {"terminated": _terminated(latest, view.runtime_name)}
            if previous is not None and previous.state == "exited":
                last = {"terminated": _terminated(previous, view.runtime_name)}
    status["state"] = state
    status["lastState"] = last
    return status


def is_sidecar(container: Obj) -> bool:
    """A native sidecar: an init container with restartPolicy Always, which runs beside the app containers."""
    return container.get("restartPolicy") == "Always"


def init_done(pod: Obj, record: PodRecord | None, not_started: set[str] | frozenset[str] = frozenset()) -> bool:
    """Every init container has completed, and every sidecar runs and has started; or the app containers
    began already (a sidecar restarting later does not take the pod back to initializing)."""
    spec = pod.get("spec") or {}
    if record is not None and any(record.latest(c["name"]) is not None for c in spec.get("containers") or []):
        return True
    for container in spec.get("initContainers") or []:
        latest = record.latest(container["name"]) if record else None
        if is_sidecar(container):
            if latest is None or latest.state != "running" or container["name"] in not_started:
                return False
        elif latest is None or latest.state != "exited" or latest.exit_code != 0:
            return False
    return True


def pod_phase(pod: Obj, record: PodRecord | None, terminating: bool = False) -> str:
    """Kubernetes' getPhase. A pod whose containers were stopped because it is being deleted (``terminating``)
    ends Succeeded when they all exited 0, else Failed, whatever its restartPolicy."""
    spec = pod.get("spec") or {}
    policy = spec.get("restartPolicy") or "Always"
    old = (pod.get("status") or {}).get("phase")
    if old in TERMINAL_PHASES:
        return str(old)
    if terminating:
        apps = [record.latest(c["name"]) if record else None for c in spec.get("containers") or []]
        if not any(a is not None and a.state == "running" for a in apps):
            return "Succeeded" if apps and all(a is not None and a.exit_code == 0 for a in apps) else "Failed"
    for init in spec.get("initContainers") or []:
        if is_sidecar(init):
            continue
        latest = record.latest(init["name"]) if record else None
        if latest is not None and latest.state == "exited" and latest.exit_code != 0 and policy == "Never":
            return "Failed"
    if not init_done(pod, record):
        return "Pending"
    waiting = running = succeeded = stopped = 0
    for container in spec.get("containers") or []:
        latest = record.latest(container["name"]) if record else None
        if latest is None or latest.state == "created":
            if latest is not None and latest.attempt > 0:
                stopped += 1  # restarting: it ran before
            else:
                waiting += 1
        elif latest.state == "running":
            running += 1
        else:
            stopped += 1
            succeeded += latest.exit_code == 0
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if policy == "Always":
        return "Running"
    if succeeded == stopped:
        return "Succeeded"
    return "Failed" if policy == "Never" else "Running"


def _condition(old: list[Obj], type_: str, ok: bool, now: str, reason: str = "", message: str = "") -> Obj:
    value = "True" if ok else "False"
    previous = next((c for c in old if c.get("type") == type_), None)
    since = previous.get("lastTransitionTime") if previous and previous.get("status") == value else now
    condition: Obj = {"type": type_, "status": value, "lastProbeTime": None, "lastTransitionTime": since}
    if not ok and reason:
        condition["reason"] = reason
        if message:
            condition["message"] = message
    return condition


def pod_status(pod: Obj, record: PodRecord | None, view: WorkerView, now: float | None = None,
               terminating: bool = False) -> Obj:
    """The whole status the kubelet would write for ``pod`` now (``terminating``: its containers were stopped
    for its deletion)."""
    stamp = now_rfc3339() if now is None else rfc3339(now)
    spec, old = pod.get("spec") or {}, pod.get("status") or {}
    phase = pod_phase(pod, record, terminating)
    initialized = init_done(pod, record, view.not_started)
    inits = [container_status(c, record, view, "PodInitializing") for c in spec.get("initContainers") or []]
    apps = [container_status(c, record, view, "ContainerCreating" if initialized else "PodInitializing")
            for c in spec.get("containers") or []]
    old_conditions = [c for c in old.get("conditions") or [] if isinstance(c, dict)]
    sidecars = {c["name"] for c in spec.get("initContainers") or [] if is_sidecar(c)}
    unready = [c["name"] for c in inits if c["name"] in sidecars and not c["ready"]]
    unready += [c["name"] for c in apps if not c["ready"]]
    incomplete = [c["name"] for c in inits if ("terminated" not in c["state"] or
                  c["state"]["terminated"].get("exitCode") != 0) and
                  not (c["name"] in sidecars and c["started"])]
    if phase in TERMINAL_PHASES:
        ready_reason = "PodCompleted" if phase == "Succeeded" else "PodFailed"
        ready_message = ""
    else:
        ready_reason = "ContainersNotReady"
        ready_message = f"containers with unready status: [{' '.join(unready)}]"
    ready = not unready and phase not in TERMINAL_PHASES
    sandbox_up = bool(record and record.sandbox and record.sandbox.running)
    conditions = [
        _condition(old_conditions, "PodReadyToStartContainers", sandbox_up, stamp),
        _condition(old_conditions, "Initialized", initialized or phase == "Succeeded", stamp,
                   "ContainersNotInitialized", f"containers with incomplete status: [{' '.join(incomplete)}]"),
        _condition(old_conditions, "Ready", ready, stamp, ready_reason, ready_message),
        _condition(old_conditions, "ContainersReady", ready, stamp, ready_reason, ready_message),
    ]
    scheduled = next((c for c in old_conditions if c.get("type") == "PodScheduled"), None)
    conditions.append(scheduled or _condition([], "PodScheduled", True, stamp))
    kept = [c for c in old_conditions if c.get("type") not in {c["type"] for c in conditions}]
    status: Obj = {"phase": phase, "conditions": conditions + kept, "hostIP": view.host_ip,
                   "hostIPs": [{"ip": view.host_ip}],
                   "startTime": old.get("startTime") or stamp}
    ip = record.sandbox.ip if record and record.sandbox and record.sandbox.ip else old.get("podIP")
    if ip:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    if inits:
        status["initContainerStatuses"] = inits
    status["containerStatuses"] = apps
    ephemerals = [container_status(c, record, view, "ContainerCreating") for c in spec.get("ephemeralContainers")
                  or []]
    if ephemerals:
        for item in ephemerals:
            item["ready"] = False  # no probes: an ephemeral container is never part of the pod's readiness
        status["ephemeralContainerStatuses"] = ephemerals
    for key in ("qosClass", "nominatedNodeName"):
        if old.get(key):
            status[key] = old[key]
    return status


def status_patch(old: Obj, new: Obj) -> Obj | None:
    """A JSON merge patch turning status ``old`` into ``new`` (lists and nested objects replaced whole), or None
    when nothing changed."""
    patch: Obj = {k: v for k, v in new.items() if old.get(k) != v}
    patch.update({k: None for k in old if k not in new})
    return patch or None
