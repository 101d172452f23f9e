"""The ReplicaSet and ReplicationController controllers (Kubernetes' replica_set.go, which serves both): keep
exactly ``spec.replicas`` active pods matching the selector, adopting matching orphans and releasing owned pods
that stop matching; create and delete in slow-start batches; delete the least valuable pods first; report
replicas, fullyLabeledReplicas, readyReplicas, availableReplicas (minReadySeconds) and observedGeneration.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.selectors import LabelSelector, selector_from_dict, selector_from_set
from minik.api.timestamps import rfc3339
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, controller_ref, is_being_deleted
from minik.controllers.claims import claim, fresh_owner_check
from minik.controllers.expectations import Expectations
from minik.controllers.pods import deletion_rank, is_active, is_available, is_ready, pod_from_template
from minik.informers import object_key

#: at most this many pods created or deleted by one sync (Kubernetes' burstReplicas)
BURST_REPLICAS = 500
#: the first batch of creations; each successful batch doubles the next (Kubernetes' SlowStartInitialBatchSize)
SLOW_START_INITIAL_BATCH = 1


async def slow_start(count: int, create: Callable[[], Awaitable[None]], initial: int = SLOW_START_INITIAL_BATCH
                     ) -> tuple[int, Exception | None]:
    """Call ``create`` ``count`` times in batches of 1, 2, 4, ... run concurrently; stop after the first batch with
    a failure, so a quota or a bad template costs one failed call rather than ``count``. Returns how many
    succeeded and the first error."""
    done, batch = 0, min(count, initial)
    while batch > 0:
        results = await asyncio.gather(*(create() for _ in range(batch)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        done += batch - len(errors)
        for error in errors:
            if not isinstance(error, Exception):
                raise error  # a cancellation
        if errors:
            return done, errors[0]  # type: ignore[return-value]
        batch = min(2 * batch, count - done)
    return done, None


class ReplicaSetController(Controller):
    name = "replicaset"
    resource = "replicasets"
    kind = "ReplicaSet"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.expectations = Expectations()
        self.owners = factory.informer(self.resource)
        self.pods = factory.informer("pods")
        self.owners.add_handlers(self.enqueue, self._owner_updated, self._owner_deleted)
        self.pods.add_handlers(self._pod_added, self._pod_updated, self._pod_deleted)

    # -- the kind's differences ----------------------------------------------------------------------------------
    def selector(self, owner: Obj) -> LabelSelector:
        try:
            return selector_from_dict((owner.get("spec") or {}).get("selector"))
        except ValueError:
            return LabelSelector.nothing()

    # -- event handlers: only enqueue ---------------------------------------------------------------------------
    def _owner_updated(self, old: Obj, new: Obj) -> None:
        self.enqueue(new)

    def _owner_deleted(self, owner: Obj) -> None:
        self.expectations.forget(object_key(owner))
        self.enqueue(owner)

    def _owner_of(self, pod: Obj, ref: Obj | None = None) -> Obj | None:
        ref = ref or controller_ref(pod)
        if ref is None or ref.get("kind") != self.kind:
            return None
        owner = self.owners.get(f"{pod['metadata'].get('namespace')}/{ref.get('name')}")
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            return None
        return owner

    def _matching_owners(self, pod: Obj) -> list[Obj]:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        return [o for o in self.owners.list(pod["metadata"].get("namespace")) if self.selector(o).matches(labels)
                and not self.selector(o).empty]

    def _pod_added(self, pod: Obj) -> None:
        if is_being_deleted(pod):
            self._pod_deleted(pod)
            return
        owner = self._owner_of(pod)
        if owner is not None:
            self.expectations.creation_observed(object_key(owner))
            self.enqueue(owner)
            return
        if controller_ref(pod) is None:
            for candidate in self._matching_owners(pod):
                self.enqueue(candidate)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return  # a resync: the owners resync themselves
        labels_changed = old["metadata"].get("labels") != new["metadata"].get("labels")
        if is_being_deleted(new) and not is_being_deleted(old):
            self._pod_deleted(new)
            if labels_changed:
                self._pod_deleted(old)
            return
        old_ref, new_ref = controller_ref(old), controller_ref(new)
        if old_ref != new_ref and old_ref is not None:
            previous = self._owner_of(old, old_ref)
            if previous is not None:
                self.enqueue(previous)
        owner = self._owner_of(new)
        if owner is not None:
            self.enqueue(owner)
            min_ready = int((owner.get("spec") or {}).get("minReadySeconds") or 0)
            if min_ready > 0 and is_ready(new) and not is_ready(old):
                self.enqueue_after(owner, min_ready + 1)  # to count it available once it has been ready long enough
            return
        if new_ref is None and (labels_changed or old_ref != new_ref):
            for candidate in self._matching_owners(new):
                self.enqueue(candidate)

    def _pod_deleted(self, pod: Obj) -> None:
        owner = self._owner_of(pod)
        if owner is None:
            return
        key = object_key(owner)
        self.expectations.deletion_observed(key, pod["metadata"].get("uid", ""))
        self.enqueue(owner)

    # -- sync ------------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        owner = self.owners.get(key)
        if owner is None:
            self.expectations.forget(key)
            return
        needs_sync = self.expectations.satisfied(key) and not is_being_deleted(owner)
        selector = self.selector(owner)
        namespace = owner["metadata"].get("namespace")
        candidates = [p for p in self.pods.list(namespace) if is_active(p)]
        pods = await claim(self.client, "pods", owner, selector, candidates,
                           fresh_owner_check(self.client, self.resource, owner))
        error: Exception | None = None
        if needs_sync:
            try:
                await self._manage(key, owner, pods)
            except Exception as exc:  # noqa: BLE001 - report status first, then retry
                error = exc
        await self._update_status(owner, pods, error)
        if error is not None:
            raise error

    async def _manage(self, key: str, owner: Obj, pods: list[Obj]) -> None:
        wanted = int((owner.get("spec") or {}).get("replicas", 1) or 0)
        diff = len(pods) - wanted
        log = self.log.bind(**{self.name: key})
        if diff < 0:
            count = min(-diff, BURST_REPLICAS)
            self.expectations.expect_creations(key, count)
            log.debug("creating pods", count=count, wanted=wanted, have=len(pods))
            done, error = await slow_start(count, lambda: self._create_pod(owner))
            if done < count:
                self.expectations.creation_failed(key, count - done)  # the skipped ones will never be observed
            if error is not None:
                raise error
        elif diff > 0:
            victims = sorted(pods, key=deletion_rank)[:min(diff, BURST_REPLICAS)]
            self.expectations.expect_deletions(key, [p["metadata"]["uid"] for p in victims])
            log.debug("deleting pods", count=len(victims), wanted=wanted, have=len(pods))
            results = await asyncio.gather(*(self._delete_pod(key, owner, p) for p in victims), return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    raise result

    async def _create_pod(self, owner: Obj) -> None:
        template = (owner.get("spec") or {}).get("template") or {}
        pod = pod_from_template(template, owner)
        try:
            created = await self.client.create("pods", pod, owner["metadata"].get("namespace"))
        except StatusError as exc:
            self.event(owner, "Warning", "FailedCreate", f"Error creating: {exc.message}")
            raise
        self.event(owner, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")

    async def _delete_pod(self, key: str, owner: Obj, pod: Obj) -> None:
        meta = pod["metadata"]
        try:
            await self.client.delete("pods", meta["name"], meta.get("namespace"), preconditions={"uid": meta["uid"]})
        except StatusError as exc:
            if exc.code == 404:
                self.expectations.deletion_observed(key, meta["uid"])
                return
            self.expectations.deletion_observed(key, meta["uid"])  # it will not go: do not wait for it
            self.event(owner, "Warning", "FailedDelete", f"Error deleting: {exc.message}")
            raise
        self.event(owner, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")

    # -- status ----------------------------------------------------------------------------------------------
    def _status(self, owner: Obj, pods: list[Obj], error: Exception | None) -> Obj:
        spec = owner.get("spec") or {}
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = self.clock.now()
        status: Obj = {"replicas": len(pods)}
        counts = {
            "fullyLabeledReplicas": sum(1 for p in pods if _has_labels(p, template_labels)),
            "readyReplicas": sum(1 for p in pods if is_ready(p)),
            "availableReplicas": sum(1 for p in pods if is_available(p, min_ready, now)),
        }
        status.update({k: v for k, v in counts.items() if v})
        generation = owner["metadata"].get("generation")
        if generation is not None:
            status["observedGeneration"] = generation
        conditions = [c for c in (owner.get("status") or {}).get("conditions") or []
                      if c.get("type") != "ReplicaFailure"]
        if error is not None and isinstance(error, StatusError) and error.code != 409:
            reason = "FailedCreate" if len(pods) < int(spec.get("replicas", 1) or 0) else "FailedDelete"
            previous = next((c for c in (owner.get("status") or {}).get("conditions") or []
                             if c.get("type") == "ReplicaFailure"), None)
            conditions.append({"type": "ReplicaFailure", "status": "True", "reason": reason,
                               "message": error.message,
                               "lastTransitionTime": (previous or {}).get("lastTransitionTime") or rfc3339(now)})
        if conditions:
            status["conditions"] = conditions
        return status

    async def _update_status(self, owner: Obj, pods: list[Obj], error: Exception | None) -> None:
        status = self._status(owner, pods, error)
        current = owner.get("status") or {}
        if status != current:
            updated = copy.deepcopy(owner)
            updated["status"] = status
            try:
                await self.client.update_status(self.resource, updated)
            except StatusError as exc:
                if exc.code == 404:
                    return
                if exc.code != 409:
                    raise
                # the cache is behind: write onto the current object once, as Kubernetes' updateReplicaSetStatus
                fresh = await self.client.get(self.resource, owner["metadata"]["name"],
                                              owner["metadata"].get("namespace"))
                fresh["status"] = status
                await self.client.update_status(self.resource, fresh)
        min_ready = int((owner.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready > 0 and status.get("readyReplicas", 0) != status.get("availableReplicas", 0):
            self.enqueue_after(owner, min_ready)


class ReplicationControllerController(ReplicaSetController):
    """The same controller for core/v1 ReplicationControllers, whose selector is a plain label map."""

    name = "replicationcontroller"
    resource = "replicationcontrollers"
    kind = "ReplicationController"

    def selector(self, owner: Obj) -> LabelSelector:
        selector = (owner.get("spec") or {}).get("selector")
        if not isinstance(selector, dict) or not selector:
            return LabelSelector.nothing()
        return selector_from_set(selector)


def _has_labels(pod: Obj, labels: dict[str, Any]) -> bool:
    have = (pod.get("metadata") or {}).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())

