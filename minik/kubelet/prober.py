"""Liveness, readiness and startup probes: one task per running container and probe kind, as Kubernetes' prober
workers. Each waits initialDelaySeconds after the container started, then probes every periodSeconds with
timeoutSeconds, and flips its result after failureThreshold failures or successThreshold successes in a row.

Results start as Kubernetes starts them (liveness passing, readiness and startup not yet); readiness and
liveness wait until the startup probe has passed. A change of result wakes the pod's worker, which marks the
container ready or not, or restarts it when its liveness (or startup) probe failed. A failed probe is an
Unhealthy event ("Liveness probe failed: ...").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import structlog

from minik.aio import start_task, stop_task
from minik.events import WARNING, EventRecorder
from minik.kubelet.actions import Target, run_action
from minik.kubelet.runtimes.base import PodRecord, Runtime

log = structlog.get_logger("minik.kubelet.prober")

Obj = dict[str, Any]

LIVENESS, READINESS, STARTUP = "liveness", "readiness", "startup"
_FIELDS = {LIVENESS: "livenessProbe", READINESS: "readinessProbe", STARTUP: "startupProbe"}
_TITLES = {LIVENESS: "Liveness", READINESS: "Readiness", STARTUP: "Startup"}


@dataclass
class _Worker:
    uid: str
    container: str
    container_id: str
    kind: str
    result: bool
    gave_up: bool = False
    """a startup probe that reached failureThreshold: the container is to be restarted"""
    task: asyncio.Task[None] | None = None


@dataclass
class ProbeView:
    """What the probes say of one pod's running containers (by container name)."""

    not_ready: set[str] = field(default_factory=set)
    not_started: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    """container name -> the probe kind (liveness or startup) whose failure means: restart it"""


def pod_reference(pod: Obj) -> Obj:
    """What an event needs of a pod (objects from a list carry no kind)."""
    return {"kind": "Pod", "apiVersion": "v1", "metadata": pod.get("metadata") or {}}


def container_field(pod: Obj, name: str) -> str:
    """The event fieldPath of a container: spec.containers{NAME} or spec.initContainers{NAME}."""
    inits = {c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or []}
    return f"spec.{'initContainers' if name in inits else 'containers'}{{{name}}}"


class Prober:
    def __init__(self, runtime: Runtime, wake: Callable[[str], None], recorder: EventRecorder | None = None) -> None:
        self.runtime = runtime
        self.wake = wake
        self.recorder = recorder
        self._workers: dict[tuple[str, str, str], _Worker] = {}  # (uid, container, kind)
        self._session: aiohttp.ClientSession | None = None

    def http_session(self) -> aiohttp.ClientSession:
        """The session httpGet probes and hooks share (made on first use, closed by stop)."""
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=True))
        return self._session

    # -- what the pod worker asks -----------------------------------------------------------------------------
    async def sync(self, pod: Obj, record: PodRecord | None) -> ProbeView:
        """Start workers for the running app containers' probes, end those of containers that stopped, and say
        what the probes report now."""
        uid = pod["metadata"]["uid"]
        view = ProbeView()
        wanted: set[tuple[str, str, str]] = set()
        for container in probed_containers(pod):
            name = container["name"]
            latest = record.latest(name) if record else None
            if latest is None or latest.state != "running":
                continue
            for kind, key in _FIELDS.items():
                spec = container.get(key)
                if not spec or self.runtime.simulated:
                    continue
                wanted.add((uid, name, kind))
                worker = self._workers.get((uid, name, kind))
                if worker is not None and worker.container_id != latest.id:
                    await stop_task(worker.task)
                    worker = None
                if worker is None:
                    worker = _Worker(uid, name, latest.id, kind, result=kind == LIVENESS)
                    target = Target(self.runtime, latest.id, container, _pod_ip(pod, record))
                    worker.task = start_task(self._run(worker, pod, spec, target, latest.started_at),
                                             f"probe {kind} {uid}/{name}")
                    self._workers[(uid, name, kind)] = worker
            startup = self._workers.get((uid, name, STARTUP))
            readiness = self._workers.get((uid, name, READINESS))
            liveness = self._workers.get((uid, name, LIVENESS))
            if startup is not None and (uid, name, STARTUP) in wanted and not startup.result:
                view.not_started.add(name)
                view.not_ready.add(name)
                if startup.gave_up:
                    view.failed[name] = STARTUP
            if readiness is not None and (uid, name, READINESS) in wanted and not readiness.result:
                view.not_ready.add(name)
            if liveness is not None and (uid, name, LIVENESS) in wanted and not liveness.result:
                view.failed[name] = LIVENESS
        for worker_key in [k for k in self._workers if k[0] == uid and k not in wanted]:
            await stop_task(self._workers.pop(worker_key).task)
        return view

    def started(self, uid: str, container: str, container_id: str) -> bool:
        """Whether the startup probe of this container (this attempt) has passed."""
        startup = self._workers.get((uid, container, STARTUP))
        return startup is not None and startup.container_id == container_id and startup.result

    async def forget(self, uid: str) -> None:
        """The pod is gone or terminating: stop its probes."""
        for key in [k for k in self._workers if k[0] == uid]:
            await stop_task(self._workers.pop(key).task)

    async def stop(self) -> None:
        for worker in self._workers.values():
            await stop_task(worker.task)
        self._workers.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- one worker -------------------------------------------------------------------------------------------
    async def _run(self, worker: _Worker, pod: Obj, spec: Obj, target: Target, started_at: float | None) -> None:
        period = max(1.0, float(spec.get("periodSeconds") or 10))
        timeout = max(1.0, float(spec.get("timeoutSeconds") or 1))
        failure_threshold = max(1, int(spec.get("failureThreshold") or 3))
        success_threshold = max(1, int(spec.get("successThreshold") or 1))
        delay = float(spec.get("initialDelaySeconds") or 0) - (time.time() - (started_at or time.time()))
        if delay > 0:
            await asyncio.sleep(delay)
        successes = failures = 0
        title = _TITLES[worker.kind]
        while True:
            if worker.kind != STARTUP and not self._started(worker):
                await asyncio.sleep(min(period, 1.0))
                continue
            outcome = await run_action(target, spec, timeout, self.http_session())
            if outcome.ok:
                successes, failures = successes + 1, 0
            else:
                successes, failures = 0, failures + 1
                if self.recorder is not None:
                    self.recorder.event(pod_reference(pod), WARNING, "Unhealthy",
                                        f"{title} probe failed: {outcome.message}".rstrip(),
                                        field_path=container_field(pod, worker.container))
                log.info("probe failed", pod=worker.uid, container=worker.container, probe=worker.kind,
                         message=outcome.message)
            result = worker.result
            if outcome.ok and successes >= success_threshold:
                result = True
            elif not outcome.ok and failures >= failure_threshold:
                result = False
            if result != worker.result:
                worker.result = result
                self.wake(worker.uid)
            if worker.kind == STARTUP and worker.result:
                return  # started: liveness and readiness take over
            if worker.kind == STARTUP and failures >= failure_threshold:
                worker.gave_up = True
                self.wake(worker.uid)
                return  # the container is restarted; a new worker probes the next one
            if worker.kind == LIVENESS and not worker.result:
                return
            await asyncio.sleep(period)

    def _started(self, worker: _Worker) -> bool:
        startup = self._workers.get((worker.uid, worker.container, STARTUP))
        return startup is None or startup.result


def probed_containers(pod: Obj) -> list[Obj]:
    """The containers whose probes run: the app containers and the sidecars (init containers with
    restartPolicy Always)."""
    spec = pod.get("spec") or {}
    return [*(c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"),
            *(spec.get("containers") or [])]


def _pod_ip(pod: Obj, record: PodRecord | None) -> str:
    if record is not None and record.sandbox is not None and record.sandbox.ip:
        return record.sandbox.ip
    return str((pod.get("status") or {}).get("podIP") or "")
