"""The disruption controller (Kubernetes' of the name): keeps every PodDisruptionBudget's status, which the eviction
subresource reads to let a pod go or answer 429.

For a budget it counts the pods its selector picks in its namespace:
- currentHealthy: those Ready, not being deleted, and not in status.disruptedPods (evicted a moment ago);
- expectedPods and desiredHealthy: with an integer minAvailable, every selected pod is expected and minAvailable of
  them must be healthy. With a percentage, or with maxUnavailable, the expected count is the sum of the scales of
  the pods' controllers (a Deployment's replicas, not its ReplicaSet's; a ReplicationController's, a StatefulSet's,
  or any owner's scale subresource), and the percentage is of that, rounded up;
- disruptionsAllowed: currentHealthy - desiredHealthy, never below zero, and zero while no pod is expected.
A pod in disruptedPods that is still not being deleted after two minutes is dropped from it (with a NotDeleted
event), so it counts again. When the status cannot be computed (a pod with no controller whose scale can be read)
disruptionsAllowed becomes 0 with the DisruptionAllowed condition False, reason SyncFailed.

Budgets are synced when they change and when a pod they select comes, changes or goes, as Kubernetes syncs them.

A pod the eviction subresource marked DisruptionTarget (True) that is still not being deleted two minutes later
gets the condition set False again (server-side apply of status, as field manager DisruptionController), as
Kubernetes' controller clears stale disruption conditions.
"""

from __future__ import annotations

import copy
from typing import Any

from minik.aio.clock import Clock
from minik.api import disruption
from minik.api.errors import StatusError
from minik.api.selectors import LabelSelector
from minik.api.timestamps import parse_time, rfc3339
from minik.client import APPLY_PATCH, Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, controller_ref, is_being_deleted
from minik.controllers.deploymentutil import scaled_value
from minik.controllers.pods import is_ready
from minik.informers import Informer, object_key

UNMANAGED_MESSAGE = ("Pods selected by this PodDisruptionBudget (selector: {selector}) were found to be unmanaged. "
                     "As a result, the status of the PDB cannot be calculated correctly, which may result in "
                     "undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB "
                     "to an integer value.")


#: the queue's keys for pods whose DisruptionTarget condition may be stale (budgets' keys are NAMESPACE/NAME)
STALE_POD = "pod:"
FIELD_MANAGER = "DisruptionController"


def disruption_target_since(pod: Obj) -> float | None:
    """When the pod was marked DisruptionTarget (True), if it is and is not being deleted."""
    if is_being_deleted(pod):
        return None
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "DisruptionTarget" and \
                condition.get("status") == "True":
            return parse_time(condition.get("lastTransitionTime")) or 0.0
    return None


class SyncFailed(Exception):
    """The budget's status cannot be computed; the message is what the SyncFailed condition says."""


def _replicas(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _group(api_version: Any) -> str:
    return str(api_version or "").rpartition("/")[0]


def _selector(pdb: Obj) -> LabelSelector | None:
    try:
        return disruption.pod_selector(pdb)
    except ValueError:
        return None


class DisruptionController(Controller):
    name = "disruption"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.pdbs = factory.informer("poddisruptionbudgets.policy")
        self.pdbs.add_handlers(self.enqueue, lambda _old, new: self.enqueue(new), self.enqueue)
        self.pods = factory.informer("pods")
        self.pods.add_handlers(self._pod_changed, self._pod_updated, self._pod_changed)
        # listers for the scale of the pods' controllers (Kubernetes' controller watches none of them either)
        self.replicasets = factory.informer("replicasets.apps")
        self.deployments = factory.informer("deployments.apps")
        self.replicationcontrollers = factory.informer("replicationcontrollers")
        self.statefulsets = factory.informer("statefulsets.apps")

    # -- what to sync ---------------------------------------------------------------------------------------------
    def _pod_changed(self, pod: Obj) -> None:
        for pdb in self.budgets_of(pod):
            self.enqueue(pdb)
        since = disruption_target_since(pod)
        if since is not None:
            self.enqueue_key_after(STALE_POD + object_key(pod),
                                   max(0.0, since + disruption.DELETION_TIMEOUT_SECONDS - self.clock.now()))

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        seen = {id(p) for p in self.budgets_of(new)}
        self._pod_changed(new)
        for pdb in self.budgets_of(old):
            if id(pdb) not in seen:
                self.enqueue(pdb)

    def budgets_of(self, pod: Obj) -> list[Obj]:
        """The budgets of the pod's namespace whose selector picks it."""
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        found = []
        for pdb in self.pdbs.list(meta.get("namespace")):
            selector = _selector(pdb)
            if selector is not None and selector.matches(labels):
                found.append(pdb)
        return found

    def pods_of(self, pdb: Obj) -> list[Obj]:
        selector = _selector(pdb)
        if selector is None:
            raise SyncFailed("invalid label selector")
        return [p for p in self.pods.list(pdb["metadata"].get("namespace"))
                if selector.matches((p.get("metadata") or {}).get("labels") or {})]

    # -- the pods' controllers' scale -----------------------------------------------------------------------------
    def _owned(self, informer: Informer, namespace: str, ref: Obj) -> Obj | None:
        obj = informer.get(f"{namespace}/{ref.get('name')}")
        return obj if obj is not None and obj["metadata"].get("uid") == ref.get("uid") else None

    async def _scale_of(self, ref: Obj, namespace: str) -> tuple[str, int] | None:
        """The uid and scale of a pod's controller (Kubernetes' finders, in their order); None when it is gone."""
        kind, group = ref.get("kind"), _group(ref.get("apiVersion"))
        if kind == "ReplicaSet" and group == "apps":
            rs = self._owned(self.replicasets, namespace, ref)
            if rs is None:
                return None
            owner = controller_ref(rs)
            if owner is not None and owner.get("kind") == "Deployment" and _group(owner.get("apiVersion")) == "apps":
                deployment = self._owned(self.deployments, namespace, owner)
                return None if deployment is None else (deployment["metadata"]["uid"], _replicas(deployment))
            return rs["metadata"]["uid"], _replicas(rs)
        if kind == "ReplicationController" and group == "":
            rc = self._owned(self.replicationcontrollers, namespace, ref)
            return None if rc is None else (rc["metadata"]["uid"], _replicas(rc))
        if kind == "StatefulSet" and group == "apps":
            sts = self._owned(self.statefulsets, namespace, ref)
            return None if sts is None else (sts["metadata"]["uid"], _replicas(sts))
        return await self._generic_scale(ref, namespace)

    async def _generic_scale(self, ref: Obj, namespace: str) -> tuple[str, int] | None:
        """Any other owner through its scale subresource (a custom resource's, say)."""
        api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
        rt = self.client.registry.by_kind(api_version, kind)
        if rt is None:
            raise SyncFailed(f'no matches for kind "{kind}" in version "{api_version}"')
        if "scale" not in rt.subresources:
            raise SyncFailed(f"{rt.group_resource} does not implement the scale subresource")
        try:
            scale = await self.client.get(rt, str(ref.get("name")), namespace, subresource="scale")
        except StatusError as exc:
            if exc.code == 404:
                return None
            raise
        if (scale.get("metadata") or {}).get("uid") != ref.get("uid"):
            return None
        return str(ref.get("uid")), int((scale.get("spec") or {}).get("replicas") or 0)

    async def expected_scale(self, pods: list[Obj]) -> tuple[int, list[str]]:
        """The sum of the scales of the pods' controllers, each counted once; and the pods without a controller."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = controller_ref(pod)
            if ref is None:
                unmanaged.append(pod["metadata"]["name"])
                continue
            if ref.get("uid") in scales:
                continue
            found = await self._scale_of(ref, pod["metadata"].get("namespace") or "")
            if found is None:
                raise SyncFailed(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            scales[found[0]] = found[1]
        return sum(scales.values()), unmanaged

    async def expected_counts(self, pdb: Obj, pods: list[Obj]) -> tuple[int, int, list[str]]:
        """expectedPods, desiredHealthy and the unmanaged pods (getExpectedPodCount)."""
        spec = pdb.get("spec") or {}
        max_unavailable, min_available = spec.get("maxUnavailable"), spec.get("minAvailable")
        if max_unavailable is not None:
            expected, unmanaged = await self.expected_scale(pods)
            return expected, max(0, expected - scaled_value(max_unavailable, expected, True)), unmanaged
        if isinstance(min_available, str):
            expected, unmanaged = await self.expected_scale(pods)
            return expected, scaled_value(min_available, expected, True), unmanaged
        if isinstance(min_available, int):
            return len(pods), min_available, []
        return 0, 0, []

    # -- the sync ------------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        if key.startswith(STALE_POD):
            await self._sync_stale_pod(key.removeprefix(STALE_POD))
            return
        pdb = self.pdbs.get(key)
        if pdb is None:
            return
        try:
            await self._try_sync(pdb)
        except StatusError as exc:
            if exc.code == 409:
                raise  # requeued, without the fail-safe
            await self._fail_safe(pdb, str(exc))
        except SyncFailed as exc:
            await self._fail_safe(pdb, str(exc))

    async def _try_sync(self, pdb: Obj) -> None:
        pods = self.pods_of(pdb)
        if not pods:
            self.event(pdb, "Normal", "NoPods", "No matching pods found")
        try:
            expected, desired, unmanaged = await self.expected_counts(pdb, pods)
        except SyncFailed as exc:
            self.event(pdb, "Warning", "CalculateExpectedPodCountFailed",
                       f"Failed to calculate the number of expected pods: {exc}")
            raise
        if unmanaged:
            self.log.debug("unmanaged pods selected by a budget", pdb=pdb["metadata"]["name"], pods=unmanaged)
            self.event(pdb, "Warning", "UnmanagedPods",
                       UNMANAGED_MESSAGE.format(selector=(pdb.get("spec") or {}).get("selector")))
        now = self.clock.now()
        disrupted, recheck = self._disrupted_pods(pdb, pods, now)
        healthy = sum(1 for p in pods if not is_being_deleted(p) and p["metadata"]["name"] not in disrupted
                      and is_ready(p))
        await self._write_status(pdb, healthy, desired, expected, disrupted, now)
        if recheck is not None:
            self.enqueue_after(pdb, max(0.0, recheck - now))

    def _disrupted_pods(self, pdb: Obj, pods: list[Obj], now: float) -> tuple[dict[str, str], float | None]:
        """The disruptedPods still awaited (not yet being deleted, evicted less than DeletionTimeout ago), and when
        the first of them times out (buildDisruptedPodMap)."""
        recorded = disruption.status_of(pdb).get("disruptedPods")
        kept: dict[str, str] = {}
        recheck: float | None = None
        if not isinstance(recorded, dict):
            return kept, recheck
        for pod in pods:
            name = pod["metadata"]["name"]
            if is_being_deleted(pod) or name not in recorded:
                continue
            at = parse_time(recorded[name])
            if at is None:
                continue
            deadline = at + disruption.DELETION_TIMEOUT_SECONDS
            if deadline < now:
                meta = pdb["metadata"]
                self.event(pod, "Warning", "NotDeleted",
                           f"Pod was expected by PDB {meta.get('namespace')}/{meta.get('name')} to be deleted but "
                           "it wasn't")
                continue
            kept[name] = recorded[name]
            recheck = deadline if recheck is None else min(recheck, deadline)
        return kept, recheck

    async def _write_status(self, pdb: Obj, healthy: int, desired: int, expected: int,
                            disrupted: dict[str, str], now: float) -> None:
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        old = disruption.status_of(pdb)
        generation = int(pdb["metadata"].get("generation") or 0)
        if (disruption.count(old, "currentHealthy"), disruption.count(old, "desiredHealthy"),
                disruption.count(old, "expectedPods"), disruption.count(old, "disruptionsAllowed"),
                old.get("disruptedPods") or {}, disruption.count(old, "observedGeneration")) == \
                (healthy, desired, expected, allowed, disrupted, generation) and disruption.conditions_up_to_date(old):
            return
        status: Obj = {"observedGeneration": generation}
        if disrupted:
            status["disruptedPods"] = disrupted
        status.update(disruptionsAllowed=allowed, currentHealthy=healthy, desiredHealthy=desired,
                      expectedPods=expected, conditions=copy.deepcopy(old.get("conditions") or []))
        disruption.update_disruption_allowed(status, now)
        await self.client.update_status("poddisruptionbudgets.policy", {**pdb, "status": status})
        self.log.debug("budget status written", pdb=pdb["metadata"]["name"], healthy=healthy, desired=desired,
                       expected=expected, allowed=allowed)

    async def _sync_stale_pod(self, key: str) -> None:
        """Clear the DisruptionTarget condition of a pod whose deletion did not follow (syncStalePodDisruption)."""
        pod = self.pods.get(key)
        since = None if pod is None else disruption_target_since(pod)
        if pod is None or since is None:
            return
        now = self.clock.now()
        left = since + disruption.DELETION_TIMEOUT_SECONDS - now
        if left > 0:
            self.enqueue_key_after(STALE_POD + key, left)
            return
        meta = pod["metadata"]
        apply = {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": meta["name"], "namespace": meta.get("namespace"),
                              "resourceVersion": meta.get("resourceVersion")},
                 "status": {"conditions": [{"type": "DisruptionTarget", "status": "False",
                                            "lastTransitionTime": rfc3339(now)}]}}
        try:
            await self.client.patch("pods", meta["name"], apply, meta.get("namespace"), content_type=APPLY_PATCH,
                                    field_manager=FIELD_MANAGER, force=True, subresource="status")
        except StatusError as exc:
            if exc.code != 404:
                raise
        self.log.debug("stale pod disruption condition cleared", pod=key)

    async def _fail_safe(self, pdb: Obj, message: str) -> None:
        """No disruption is allowed while the status cannot be computed (failSafe)."""
        self.log.warning("failed to sync budget", pdb=pdb["metadata"].get("name"), error=message)
        status = copy.deepcopy(disruption.status_of(pdb))
        status["disruptionsAllowed"] = 0
        disruption.set_condition(status, "False", disruption.SYNC_FAILED, message, self.clock.now())
        await self.client.update_status("poddisruptionbudgets.policy", {**pdb, "status": status})

