"""Pod workers: for one pod uid at a time, bring what the runtime runs in line with what the API wants, then
report the pod's status (only when it changed).

A sync is idempotent and never waits long: it starts what is missing (the sandbox, the next init container, the
app containers), restarts what exited per restartPolicy with Kubernetes' back-off (10 s doubling to 5 min:
CrashLoopBackOff; image pulls the same: ErrImagePull then ImagePullBackOff), and returns when it wants to run
again (a back-off ending). Probes run beside it (prober.py) and wake it when a result changes: readiness marks
containers ready, a failed liveness or startup probe stops the container so that restartPolicy restarts it.
Stopping takes time (SIGTERM, the grace period, SIGKILL), so termination (preStop hooks, stop, removal, then the
API delete with gracePeriodSeconds=0) and probe kills run in a task of their own that holds no worker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from minik.aio import start_task, stop_task
from minik.aio.backoff import KeyedBackoff
from minik.api.errors import StatusError
from minik.client import Client
from minik.events import EventRecorder
from minik.kubelet.actions import Target, run_action
from minik.kubelet.podevents import PodEvents
from minik.kubelet.prober import Prober, probed_containers
from minik.kubelet.runtimes.base import ContainerConfig, ContainerInfo, PodRecord, Runtime, RuntimeFailure, SandboxInfo
from minik.kubelet.runtimes.security import effective, refusal
from minik.kubelet.status import TERMINAL_PHASES, WorkerView, is_sidecar, pod_phase, pod_status, status_patch

log = structlog.get_logger("minik.kubelet")

Obj = dict[str, Any]


class ConfigBuilder(Protocol):
    """Builds a container's runtime config (env, mounts...), keeps a pod's tokens renewed and drops its files
    (containers.ContainerConfigs)."""

    async def build(self, pod: Obj, container: Obj, sandbox: SandboxInfo, init: bool) -> ContainerConfig:
        """RuntimeFailure CreateContainerConfigError when a ConfigMap, Secret or key is missing."""

    async def keep_tokens(self, pod: Obj) -> None:
        """Renew the pod's projected tokens while it runs (those an earlier kubelet wrote too); stop when it ends."""

    async def remove(self, uid: str) -> None: ...

    async def stop(self) -> None:
        """Stop every task (token renewals); the files stay."""


#: how long a postStart hook may run (Kubernetes sets no bound; one here keeps a hung hook from holding a kubelet
#: worker forever)
POST_START_TIMEOUT_SECONDS = 300.0
#: how long a failed pull shows ErrImagePull before the back-off shows ImagePullBackOff
ERR_IMAGE_PULL_SHOWN_SECONDS = 1.0


@dataclass(frozen=True)
class WorkerSettings:
    backoff_initial_seconds: float = 10.0
    """The first wait before a crashed container is restarted, or a failed image pull tried again; it doubles with
    each further failure (Kubernetes: 10 s)."""
    backoff_max_seconds: float = 300.0
    """The longest such wait (Kubernetes: 5 minutes); after twice this long without a failure, the next one starts
    over from the first."""
    orphan_grace_seconds: float = 2.0
    """Grace for the containers of a pod the API no longer has."""
    minimum_grace_seconds: float = 2.0
    """What a container is still given after its preStop hook took the whole grace period (Kubernetes: 2 s)."""


@dataclass
class PodState:
    """What the worker remembers of one pod between syncs."""

    restart_backoff: KeyedBackoff[str]
    """per container: CrashLoopBackOff"""
    image_backoff: KeyedBackoff[str]
    """per container: ImagePullBackOff"""
    waiting: dict[str, tuple[str, str]] = field(default_factory=dict)
    written: Obj | None = None
    busy: asyncio.Task[None] | None = None
    """a long operation in progress (termination, a probe kill): syncs wait for it"""
    acted: bool = False
    """whether this sync started, restarted or removed anything (then the runtime is read again)"""
    terminated: bool = False


@dataclass(frozen=True)
class _Wait:
    """The walk over a pod's containers stops here; sync again in ``seconds`` (None: when woken)."""

    seconds: float | None


def simple_config(pod: Obj, spec: Obj, sandbox: SandboxInfo, init: bool) -> ContainerConfig:
    """The config of a runtime that needs no env or files (the fake runtime)."""
    return ContainerConfig(spec.get("name", ""), spec.get("image", ""), list(spec.get("command") or []),
                           list(spec.get("args") or []), spec.get("workingDir"), {}, [], [],
                           spec.get("resources") or {}, init=init, security=effective(pod, spec))


def pull_policy(spec: Obj) -> str:
    policy = spec.get("imagePullPolicy")
    if policy:
        return str(policy)
    image = str(spec.get("image", ""))
    tag = image.rsplit("/", 1)[-1]
    return "Always" if ":" not in tag or tag.endswith(":latest") else "IfNotPresent"


class PodWorkers:
    def __init__(self, client: Client, runtime: Runtime, host_ips: Callable[[str], str],
                 enqueue: Callable[[str, float], None], settings: WorkerSettings | None = None,
                 build_config: ConfigBuilder | None = None, recorder: EventRecorder | None = None) -> None:
        self.client = client
        self.runtime = runtime
        self.host_ips = host_ips
        self.enqueue = enqueue
        self.settings = settings or WorkerSettings()
        self.build_config = build_config
        self.events = PodEvents(recorder)
        self.prober = Prober(runtime, lambda uid: enqueue(uid, 0.0), recorder)
        self.states: dict[str, PodState] = {}

    async def stop(self) -> None:
        for state in self.states.values():
            await stop_task(state.busy)
        await self.prober.stop()
        if self.build_config is not None:
            await self.build_config.stop()

    # -- one sync ---------------------------------------------------------------------------------------------
    async def sync(self, uid: str, pod: Obj | None) -> float | None:
        """Reconcile one pod (None: the API no longer has it). Returns seconds until it wants another sync."""
        state = self.states.get(uid)
        if state is None:
            s = self.settings
            state = self.states[uid] = PodState(KeyedBackoff(s.backoff_initial_seconds, s.backoff_max_seconds),
                                                KeyedBackoff(s.backoff_initial_seconds, s.backoff_max_seconds))
        if state.busy is not None:
            if not state.busy.done():
                return None  # the task wakes the pod when it is done
            state.busy = None
        if pod is None:
            await self.prober.forget(uid)
            if await self.runtime.pod(uid) is not None:
                await self.runtime.remove_pod(uid, self.settings.orphan_grace_seconds)
            if self.build_config is not None:
                await self.build_config.remove(uid)
            self.states.pop(uid, None)
            return None
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            if not state.terminated:
                await self.prober.forget(uid)
                state.busy = start_task(self._terminate(uid, pod, state), f"terminate pod {uid}")
            return None
        if self.build_config is not None and self.runtime.needs_config:
            await self.build_config.keep_tokens(pod)
        record = await self.runtime.pod(uid)
        if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            await self.prober.forget(uid)
            await self._stop_running(record)
            return None
        state.acted = False
        requeue = await self._converge(pod, record, state)
        if state.acted or record is None:
            record = await self.runtime.pod(uid)
        probes = await self.prober.sync(pod, record)
        if probes.failed and record is not None:
            state.busy = start_task(self._kill_unhealthy(pod, record, probes.failed), f"probe kill {uid}")
        view = WorkerView(self.runtime.name, self.host_ips((pod.get("spec") or {}).get("nodeName", "")),
                          state.waiting, probes.not_ready, probes.not_started)
        new = pod_status(pod, record, view)
        if new["phase"] in TERMINAL_PHASES and record is not None and \
                any(info.state != "exited" for info in record.containers):
            # the app containers completed and sidecars still run: they stop as at deletion (preStop, SIGTERM,
            # the grace period), and the next sync writes the finished pod with them terminated
            state.busy = start_task(self._finish(pod, record), f"finish pod {uid}")
            return None
        await self._write_status(pod, new, state)
        return requeue

    async def _stop_running(self, record: PodRecord | None) -> None:
        """Stop at once what still runs of a pod the API says has finished."""
        for info in record.containers if record is not None else []:
            if info.state != "exited":
                await self.runtime.stop_container(info.id, 0)

    async def _finish(self, pod: Obj, record: PodRecord) -> None:
        try:
            await self._stop_all(pod, record, time.monotonic() + self._grace(pod))
        finally:
            self.enqueue(pod["metadata"]["uid"], 0.0)

    async def _write_status(self, pod: Obj, new: Obj, state: PodState) -> None:
        old = pod.get("status") or {}
        patch = status_patch(old, new)
        if patch is None or new == state.written:
            return
        meta = pod["metadata"]
        try:
            await self.client.patch_status("pods", meta["name"], {"status": patch}, meta["namespace"])
        except StatusError as exc:
            if exc.code == 404:
                return  # gone: its delete event follows
            raise
        state.written = new

    # -- converging -------------------------------------------------------------------------------------------
    async def _converge(self, pod: Obj, record: PodRecord | None, state: PodState) -> float | None:
        uid = pod["metadata"]["uid"]
        spec = pod.get("spec") or {}
        sandbox = record.sandbox if record is not None else None
        if record is not None and pod_phase(pod, record) in TERMINAL_PHASES:
            return None  # its app containers completed: nothing starts again (its sidecars neither)
        if record is None or sandbox is None or not sandbox.running:
            state.acted = True
            if record is not None and record.containers:
                await self.runtime.remove_pod(uid, 0)  # the sandbox died: start the pod over, as Kubernetes does
            try:
                sandbox = await self.runtime.run_sandbox(pod)
            except RuntimeFailure as exc:
                state.waiting = {c["name"]: (exc.reason, exc.message) for c in spec.get("containers") or []}
                return self.settings.backoff_initial_seconds
            meta = pod["metadata"]
            record = PodRecord(uid, meta.get("namespace", ""), meta["name"], spec.get("nodeName", ""), sandbox)
        # ephemeral containers first, as Kubernetes starts them: a pod stuck in its init containers can be debugged
        delays = [await self._start_ephemeral(pod, sandbox, record, container, state)
                  for container in spec.get("ephemeralContainers") or [] if record.latest(container["name"]) is None]
        delays.append(await self._converge_workload(pod, sandbox, record, state))
        pending = [d for d in delays if d is not None]
        return min(pending) if pending else None

    async def _converge_workload(self, pod: Obj, sandbox: SandboxInfo, record: PodRecord, state: PodState
                                 ) -> float | None:
        """The init containers in order, then the app containers, started and restarted as restartPolicy says."""
        spec = pod.get("spec") or {}
        policy = spec.get("restartPolicy") or "Always"
        apps_began = any(record.latest(c["name"]) is not None for c in spec.get("containers") or [])
        sidecar_delays: list[float | None] = []
        for container in spec.get("initContainers") or []:
            latest = record.latest(container["name"])
            if is_sidecar(container):
                outcome = await self._sidecar(pod, sandbox, container, latest, state, apps_began)
                if isinstance(outcome, _Wait):
                    return outcome.seconds
                sidecar_delays.append(outcome)
                continue
            if latest is not None and latest.state == "exited" and latest.exit_code == 0:
                continue
            if latest is not None and latest.state != "exited":
                return None
            if latest is not None:
                if policy == "Never":
                    return None
                return await self._restart(pod, sandbox, container, latest, state, init=True)
            return await self._start(pod, sandbox, container, 0, state, init=True)
        delays = []
        for container in spec.get("containers") or []:
            name = container["name"]
            latest = record.latest(name)
            if latest is None:
                delays.append(await self._start(pod, sandbox, container, 0, state, init=False))
            elif latest.state != "exited":
                state.waiting.pop(name, None)
            elif policy == "Always" or (policy == "OnFailure" and latest.exit_code != 0):
                delays.append(await self._restart(pod, sandbox, container, latest, state, init=False))
            else:
                state.waiting.pop(name, None)
        pending = [d for d in delays + sidecar_delays if d is not None]
        return min(pending) if pending else None

    async def _sidecar(self, pod: Obj, sandbox: SandboxInfo, container: Obj, latest: ContainerInfo | None,
                       state: PodState, apps_began: bool) -> _Wait | float | None:
        """A native sidecar (an init container with restartPolicy Always): started in its turn, and the next
        container waits until it has started (its startup probe passed); restarted whenever it exits, whatever
        the pod's restartPolicy. Once the app containers began, a sidecar's restart holds nothing back.
        _Wait(seconds) ends this sync's walk (None: a probe or the runtime wakes the pod); else the delay
        the sidecar wants, if any."""
        name = container["name"]
        if latest is None:
            delay = await self._start(pod, sandbox, container, 0, state, init=True)
            return _Wait(delay if delay is not None else 0.0)  # look again: it may have started at once
        if latest.state == "exited":
            delay = await self._restart(pod, sandbox, container, latest, state, init=True)
            return delay if apps_began else _Wait(delay if delay is not None else 0.0)
        if latest.state != "running":
            return None if apps_began else _Wait(None)
        state.waiting.pop(name, None)
        if apps_began or self.runtime.simulated or not container.get("startupProbe"):
            return None
        return None if self.prober.started(pod["metadata"]["uid"], name, latest.id) else _Wait(None)

    async def _start_ephemeral(self, pod: Obj, sandbox: SandboxInfo, record: PodRecord, container: Obj,
                               state: PodState) -> float | None:
        """Start an ephemeral container once (it is never restarted), in its target container's process
        namespace when it names one; that container must be running."""
        target = container.get("targetContainerName")
        target_id = None
        if target:
            running = record.latest(str(target))
            if running is None or running.state != "running":
                state.waiting[container["name"]] = ("CreateContainerError",
                                                    f"target container {target} is not running")
                return self.settings.backoff_initial_seconds
            target_id = running.id
        return await self._start(pod, sandbox, container, 0, state, init=False, ephemeral=True,
                                 pid_namespace_of=target_id)

    async def _restart(self, pod: Obj, sandbox: SandboxInfo, container: Obj, latest: ContainerInfo,
                       state: PodState, init: bool) -> float | None:
        """Restart an exited container unless it is in back-off (Kubernetes: the first restart is at once, then
        each restart within the back-off window waits it out; the window doubles up to the maximum)."""
        name = container["name"]
        now = time.monotonic()
        wait = state.restart_backoff.remaining(name, now)
        if wait > 0:
            meta = pod["metadata"]
            if state.waiting.get(name, ("",))[0] != "CrashLoopBackOff":
                self.events.crash_backoff(pod, name)
            state.waiting[name] = ("CrashLoopBackOff", f"back-off {state.restart_backoff.delay(name):g}s restarting "
                                   f"failed container={name} pod={meta['name']}_{meta['namespace']}({meta['uid']})")
            return wait
        state.restart_backoff.step(name, now)
        return await self._start(pod, sandbox, container, latest.attempt + 1, state, init)

    async def _start(self, pod: Obj, sandbox: SandboxInfo, container: Obj, attempt: int, state: PodState,
                     init: bool, ephemeral: bool = False, pid_namespace_of: str | None = None) -> float | None:
        name, image = container["name"], container.get("image", "")
        now = time.monotonic()
        wait = state.image_backoff.remaining(name, now)
        if wait > 0:
            elapsed = (state.image_backoff.delay(name) or 0.0) - wait
            if elapsed < ERR_IMAGE_PULL_SHOWN_SECONDS:  # the error itself stays visible a moment
                return ERR_IMAGE_PULL_SHOWN_SECONDS - elapsed
            if state.waiting.get(name, ("",))[0] != "ImagePullBackOff":
                self.events.pull_backoff(pod, name, image)
            state.waiting[name] = ("ImagePullBackOff", f'Back-off pulling image "{image}"')
            return wait
        began = time.monotonic()
        state.acted = True
        try:
            pulled = await self.runtime.ensure_image(image, pull_policy(container))
        except RuntimeFailure as exc:
            state.image_backoff.step(name, now)
            state.waiting[name] = (exc.reason, exc.message)
            self.events.pull_failed(pod, name, image, exc.reason, exc.message)
            log.info("image pull failed", pod=_key(pod), container=name, image=image, error=exc.message)
            return ERR_IMAGE_PULL_SHOWN_SECONDS  # report ErrImagePull now, ImagePullBackOff after
        state.image_backoff.reset(name)
        if pulled is not None:
            self.events.pulled(pod, name, image, time.monotonic() - began if pulled else None)
        try:
            if self.build_config is not None and self.runtime.needs_config:
                config = await self.build_config.build(pod, container, sandbox, init)
            else:
                config = simple_config(pod, container, sandbox, init)
            config.ephemeral, config.pid_namespace_of = ephemeral, pid_namespace_of
            refused = self.runtime.unsupported(config.security)
            if refused:
                raise refusal(self.runtime.name, refused)
            container_id = await self.runtime.start_container(pod, sandbox, config, attempt)
        except RuntimeFailure as exc:
            state.waiting[name] = (exc.reason, exc.message)
            self.events.failed(pod, name, exc.message)
            log.info("container did not start", pod=_key(pod), container=name, reason=exc.reason, error=exc.message)
            return self.settings.backoff_initial_seconds
        self.events.created(pod, name)
        self.events.started(pod, name)
        state.waiting.pop(name, None)
        handler = (container.get("lifecycle") or {}).get("postStart")
        if handler and not self.runtime.simulated:
            await self._post_start(pod, Target(self.runtime, container_id, container, sandbox.ip), handler)
        return None

    async def _post_start(self, pod: Obj, target: Target, handler: Obj) -> None:
        """Run the postStart hook before anything else starts, as Kubernetes does; when it fails the container
        is killed (FailedPostStartHook), and restartPolicy decides whether it runs again."""
        name = target.container["name"]
        outcome = await run_action(target, handler, POST_START_TIMEOUT_SECONDS, self.prober.http_session())
        if outcome.ok:
            return
        self.events.post_start_failed(pod, name)
        log.info("postStart hook failed", pod=_key(pod), container=name, message=outcome.message)
        self.events.killing(pod, name, message="FailedPostStartHook")
        await self.runtime.stop_container(target.container_id, self._grace(pod))

    # -- probe kills ------------------------------------------------------------------------------------------
    async def _kill_unhealthy(self, pod: Obj, record: PodRecord, failed: dict[str, str]) -> None:
        """Stop the containers whose liveness or startup probe failed; the next sync restarts them as
        restartPolicy says (counting a restart, with back-off)."""
        stops = []
        for container in probed_containers(pod):
            name = container["name"]
            latest = record.latest(name)
            if name not in failed or latest is None or latest.state != "running":
                continue
            probe = container.get("startupProbe" if failed[name] == "startup" else "livenessProbe") or {}
            grace = probe.get("terminationGracePeriodSeconds")
            if grace is None:
                grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
            log.info("probe failed; restarting the container", pod=_key(pod), container=name, probe=failed[name])
            stops.append(self._stop_container(pod, record, container, time.monotonic() + float(grace),
                                              failed[name]))
        try:
            await asyncio.gather(*stops)
        finally:
            self.enqueue(pod["metadata"]["uid"], 0.0)

    # -- termination ------------------------------------------------------------------------------------------
    @staticmethod
    def _grace(pod: Obj) -> float:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        return float(grace)

    async def _stop_container(self, pod: Obj, record: PodRecord, container: Obj, deadline: float,
                              why: str = "") -> None:
        """Stop one running container as Kubernetes' killContainer: the Killing event, its preStop hook within
        the grace period, then SIGTERM and, at the deadline, SIGKILL (after a hook that used the whole grace
        period, the container still gets the minimum)."""
        name = container["name"]
        latest = record.latest(name)
        if latest is None or latest.state != "running":
            return
        self.events.killing(pod, name, why)
        handler = (container.get("lifecycle") or {}).get("preStop")
        grace = deadline - time.monotonic()
        if handler and not self.runtime.simulated and grace > 0:
            ip = record.sandbox.ip if record.sandbox else ""
            await self._pre_stop(pod, Target(self.runtime, latest.id, container, ip), handler, grace)
        floor = min(max(grace, 0.0), self.settings.minimum_grace_seconds)
        await self.runtime.stop_container(latest.id, max(deadline - time.monotonic(), floor))

    async def _pre_stop(self, pod: Obj, target: Target, handler: Obj, grace: float) -> None:
        name = target.container["name"]
        try:
            outcome = await asyncio.wait_for(run_action(target, handler, grace, self.prober.http_session()), grace)
        except TimeoutError:
            log.info("preStop hook outlasted the grace period", pod=_key(pod), container=name)
            return
        if not outcome.ok:
            self.events.prestop_failed(pod, name, outcome.message)
            log.info("preStop hook failed", pod=_key(pod), container=name, message=outcome.message)

    async def _stop_all(self, pod: Obj, record: PodRecord, deadline: float) -> None:
        """The app containers (and init containers still running) together, then the sidecars one by one in
        the reverse of their order, as Kubernetes stops a pod with sidecars."""
        spec = pod.get("spec") or {}
        inits = spec.get("initContainers") or []
        first = [c for c in inits if not is_sidecar(c)] + list(spec.get("containers") or [])
        await asyncio.gather(*(self._stop_container(pod, record, c, deadline) for c in first))
        for sidecar in reversed([c for c in inits if is_sidecar(c)]):
            await self._stop_container(pod, record, sidecar, deadline)

    async def _terminate(self, uid: str, pod: Obj, state: PodState) -> None:
        """Stop the pod's containers within its grace period, report them terminated (Ready False, a terminal
        phase) while the pod still exists, then remove it from the runtime and the API."""
        meta = pod["metadata"]
        began = time.monotonic()
        try:
            record = await self.runtime.pod(uid)
            if record is not None:
                await self._stop_all(pod, record, began + self._grace(pod))
                record = await self.runtime.pod(uid)
                view = WorkerView(self.runtime.name, self.host_ips((pod.get("spec") or {}).get("nodeName", "")),
                                  dict(state.waiting))
                await self._write_status(pod, pod_status(pod, record, view, terminating=True), state)
            await self.runtime.remove_pod(uid, 0)
            if self.build_config is not None:
                await self.build_config.remove(uid)
            try:
                await self.client.delete("pods", meta["name"], meta["namespace"], grace_period_seconds=0,
                                         preconditions={"uid": uid})
            except StatusError as exc:
                if exc.code not in (404, 409):
                    raise
        except Exception as exc:  # noqa: BLE001 - the API or the runtime failed: try again shortly
            log.warning("pod termination failed; retrying", pod=_key(pod), error=f"{type(exc).__name__}: {exc}")
            self.enqueue(uid, 1.0)
            return
        state.terminated = True
        log.info("pod terminated", pod=_key(pod), seconds=round(time.monotonic() - began, 3))
        self.enqueue(uid, 0.0)


def _key(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"
