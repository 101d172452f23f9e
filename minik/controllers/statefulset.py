"""The StatefulSet controller (Kubernetes' statefulset controller): replicas with stable names NAME-0 ...
NAME-(n-1), each with hostname NAME-i and subdomain serviceName, and its own PersistentVolumeClaims made from
volumeClaimTemplates (kept, re-owned or deleted as persistentVolumeClaimRetentionPolicy says).

podManagementPolicy OrderedReady creates replicas in order, each Running and Ready (and available for
minReadySeconds) before the next, and removes them in reverse order, one at a time; Parallel creates and removes
them all at once. Every template is kept as a ControllerRevision; pods carry their revision's name in the
``controller-revision-hash`` label. updateStrategy RollingUpdate replaces pods whose revision is not the update
revision from the highest ordinal down to ``partition``, one at a time (or up to ``maxUnavailable``), each
replacement healthy before the next; OnDelete gives the update revision only to pods that were deleted.
Revisions beyond revisionHistoryLimit that no pod uses are deleted.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.selectors import LabelSelector, selector_from_dict
from minik.client import Client
from minik.controllers import statefulsetutil as su
from minik.controllers.base import (
    Controller,
    InformerFactory,
    Obj,
    Recorder,
    controller_ref,
    is_being_deleted,
)
from minik.controllers.claims import claim, fresh_owner_check
from minik.controllers.expectations import Expectations
from minik.controllers.replicaset import slow_start
from minik.informers import Informer, object_key


@dataclass
class _Revisions:
    current: Obj
    update: Obj
    collision_count: int
    all: list[Obj] = field(default_factory=list)


class StatefulSetController(Controller):
    name = "statefulset"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.expectations = Expectations(self.clock)
        self.sets = factory.informer("statefulsets")
        self.pods = factory.informer("pods")
        self.revisions = factory.informer("controllerrevisions")
        #: None when this build's registry has no claims: they are then read through the API, by path
        self.claims: Informer | None = None
        if factory.client.registry.resolve("persistentvolumeclaims") is not None:
            self.claims = factory.informer("persistentvolumeclaims")
        self.sets.add_handlers(self.enqueue, lambda old, new: self.enqueue(new), self._set_deleted)
        self.pods.add_handlers(self._pod_added, self._pod_updated, self._pod_deleted)
        self.revisions.add_handlers(self._revision_changed, lambda old, new: self._revision_changed(new),
                                    self._revision_changed)

    # -- event handlers ----------------------------------------------------------------------------------------
    def _set_deleted(self, sts: Obj) -> None:
        self.expectations.forget(object_key(sts))

    def _owner(self, obj: Obj) -> Obj | None:
        ref = controller_ref(obj)
        if ref is None or ref.get("kind") != "StatefulSet":
            return None
        sts = self.sets.get(f"{obj['metadata'].get('namespace')}/{ref.get('name')}")
        return sts if sts is not None and sts["metadata"].get("uid") == ref.get("uid") else None

    def _matching(self, obj: Obj) -> list[Obj]:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return [s for s in self.sets.list(obj["metadata"].get("namespace"))
                if not _selector(s).empty and _selector(s).matches(labels)]

    def _pod_added(self, pod: Obj) -> None:
        owner = self._owner(pod)
        if owner is not None:
            self.expectations.creation_observed(object_key(owner))
            self.enqueue(owner)
        elif controller_ref(pod) is None:
            for sts in self._matching(pod):
                self.enqueue(sts)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        owner = self._owner(new)
        if owner is not None:
            if is_being_deleted(new) and not is_being_deleted(old):
                self.expectations.deletion_observed(object_key(owner), new["metadata"].get("uid", ""))
            self.enqueue(owner)
            min_ready = int((owner.get("spec") or {}).get("minReadySeconds") or 0)
            if min_ready > 0 and su.is_running_and_ready(new) and not su.is_running_and_ready(old):
                self.enqueue_after(owner, min_ready + 0.1)
            return
        previous = self._owner(old)
        if previous is not None:
            self.enqueue(previous)
        if controller_ref(new) is None:
            for sts in self._matching(new):
                self.enqueue(sts)

    def _pod_deleted(self, pod: Obj) -> None:
        owner = self._owner(pod)
        if owner is not None:
            self.expectations.deletion_observed(object_key(owner), pod["metadata"].get("uid", ""))
            self.enqueue(owner)

    def _revision_changed(self, revision: Obj) -> None:
        owner = self._owner(revision)
        if owner is not None:
            self.enqueue(owner)

    # -- sync --------------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        cached = self.sets.get(key)
        if cached is None:
            self.expectations.forget(key)
            return
        sts = copy.deepcopy(cached)
        selector = _selector(sts)
        if selector.empty:
            self.event(sts, "Warning", "SelectingAll", "This statefulset is selecting all pods. A non-empty selector "
                                                       "is required.")
            return
        if not self.expectations.satisfied(key):
            return  # the informer has not shown this controller's last writes yet: their events sync again
        namespace = sts["metadata"].get("namespace")
        can_adopt = fresh_owner_check(self.client, "statefulsets", sts)
        pods = await claim(self.client, "pods", sts, selector, self.pods.list(namespace), can_adopt,
                           matches=lambda p: su.is_member(sts, p) and selector.matches(
                               (p.get("metadata") or {}).get("labels")))
        revisions = await claim(self.client, "controllerrevisions", sts, selector, self.revisions.list(namespace),
                                can_adopt)
        history = await self._revisions(sts, revisions)
        status = await self._update(key, sts, history, pods)
        await self._truncate_history(sts, pods, history)
        await self._write_status(sts, status)
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready > 0 and status.get("availableReplicas", 0) != status.get("replicas", 0):
            self.enqueue_after(sts, min_ready + 0.1)

    # -- revisions ---------------------------------------------------------------------------------------------
    async def _revisions(self, sts: Obj, revisions: list[Obj]) -> _Revisions:
        """The current and update revisions (getStatefulSetRevisions): the update revision is the set's template,
        an existing equal revision reused (renumbered to be the newest when it is an older one), else created."""
        revisions = sorted(revisions, key=su.revision_number)
        collisions = int((sts.get("status") or {}).get("collisionCount") or 0)
        newest = su.revision_number(revisions[-1]) if revisions else 0
        wanted = su.new_revision(sts, newest + 1, collisions)
        equal = [r for r in revisions if su.equal_data(r, wanted)]
        if equal and equal[-1] is revisions[-1]:
            update = equal[-1]
        elif equal:
            renumbered = copy.deepcopy(equal[-1])
            renumbered["revision"] = newest + 1
            update = await self.client.update("controllerrevisions", renumbered)
            revisions = [update if r is equal[-1] else r for r in revisions]
        else:
            update, collisions = await self._create_revision(sts, wanted, collisions)
            revisions.append(update)
        current_name = (sts.get("status") or {}).get("currentRevision")
        current = next((r for r in revisions if r["metadata"]["name"] == current_name), update)
        return _Revisions(current, update, collisions, sorted(revisions, key=su.revision_number))

    async def _create_revision(self, sts: Obj, wanted: Obj, collisions: int) -> tuple[Obj, int]:
        """Create ``wanted``; a name taken by a different template is a hash collision, and the count goes up
        (the next name hashes differently), as Kubernetes' CreateControllerRevision does."""
        namespace = sts["metadata"].get("namespace")
        for _ in range(10):
            try:
                return await self.client.create("controllerrevisions", wanted, namespace), collisions
            except StatusError as exc:
                if exc.code != 409:
                    raise
            existing = await self.client.get("controllerrevisions", wanted["metadata"]["name"], namespace)
            if su.equal_data(existing, wanted) and \
                    (controller_ref(existing) or {}).get("uid") == sts["metadata"]["uid"]:
                return existing, collisions
            collisions += 1
            wanted = su.new_revision(sts, wanted["revision"], collisions)
        raise RuntimeError(f"no free ControllerRevision name for {sts['metadata']['name']} after 10 collisions")

    async def _truncate_history(self, sts: Obj, pods: list[Obj], history: _Revisions) -> None:
        """Delete the oldest revisions beyond revisionHistoryLimit that no pod, and neither the current nor the
        update revision, uses (truncateHistory)."""
        live = {su.pod_revision(p) for p in pods} | {history.current["metadata"]["name"],
                                                     history.update["metadata"]["name"]}
        old = [r for r in history.all if r["metadata"]["name"] not in live]
        limit = int((sts.get("spec") or {}).get("revisionHistoryLimit", 10) or 0)
        for revision in old[:max(0, len(old) - limit)]:
            meta = revision["metadata"]
            try:
                await self.client.delete("controllerrevisions", meta["name"], meta.get("namespace"),
                                         preconditions={"uid": meta["uid"]})
            except StatusError as exc:
                if exc.code not in (404, 409):
                    raise

    # -- replicas ----------------------------------------------------------------------------------------------
    async def _update(self, key: str, sts: Obj, history: _Revisions, pods: list[Obj]) -> Obj:
        """Make the pods match the set (updateStatefulSet); the status as it stands after this round."""
        current_set = su.applied(sts, history.current)
        update_set = su.applied(sts, history.update)
        current_name, update_name = history.current["metadata"]["name"], history.update["metadata"]["name"]
        start, count = su.start_ordinal(sts), max(0, su.replicas(sts))
        replicas: list[Obj | None] = [None] * count
        condemned: list[Obj] = []
        for pod in pods:
            ordinal = su.parent_and_ordinal(pod)[1]
            if start <= ordinal < start + count:
                replicas[ordinal - start] = pod
            elif ordinal >= 0:
                condemned.append(pod)
        condemned.sort(key=lambda p: su.parent_and_ordinal(p)[1], reverse=True)

        def status_of() -> Obj:
            return self._status(sts, history, [p for p in replicas if p is not None] + condemned)

        if is_being_deleted(sts):
            return status_of()
        monotonic = (sts.get("spec") or {}).get("podManagementPolicy", "OrderedReady") != "Parallel"
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.clock.now()
        partition = su.partition(sts) if su.strategy_type(sts) == "RollingUpdate" else 0

        def wanted(ordinal: int) -> Obj:
            if su.strategy_type(sts) == "RollingUpdate" and ordinal < start + partition:
                return su.new_pod(sts, current_set["spec"]["template"], ordinal, current_name)
            return su.new_pod(sts, update_set["spec"]["template"], ordinal, update_name)

        to_create: list[Obj] = []
        to_delete: list[Obj] = []
        blocked = False
        for i in range(count):
            replica = replicas[i]
            ordinal = start + i
            if replica is None:
                to_create.append(wanted(ordinal))
                if monotonic:
                    blocked = True
                    break
                continue
            if su.phase(replica) in ("Failed", "Succeeded"):
                if not is_being_deleted(replica):
                    to_delete.append(replica)
                if monotonic:
                    blocked = True
                    break
                continue
            if monotonic and (is_being_deleted(replica) or not su.is_running_and_available(replica, min_ready, now)):
                blocked = True
                break
            if not is_being_deleted(replica):
                await self._fix_replica(sts, replica, ordinal)
        if to_create or to_delete:
            await self._apply(key, sts, to_create, to_delete)
            return status_of()
        if blocked:
            return status_of()
        # scale down: the highest ordinal first; OrderedReady one at a time, each only when all others are healthy
        removing: list[Obj] = []
        for pod in condemned:
            if is_being_deleted(pod):
                if monotonic:
                    break
                continue
            if monotonic and not su.is_running_and_available(pod, min_ready, now) and \
                    pod is not self._first_unhealthy(replicas, condemned, min_ready, now):
                break
            await self._fix_claims(sts, pod)
            removing.append(pod)
            if monotonic:
                break
        if removing:
            await self._apply(key, sts, [], removing)
            return status_of()
        if any(is_being_deleted(p) for p in condemned) and monotonic:
            return status_of()
        if su.strategy_type(sts) != "RollingUpdate":
            return status_of()
        await self._rolling_update(key, sts, [p for p in replicas if p is not None], update_name, partition,
                                   min_ready, now)
        return status_of()

    def _first_unhealthy(self, replicas: list[Obj | None], condemned: list[Obj], min_ready: int,
                         now: float) -> Obj | None:
        """The lowest-ordinal replica that is not healthy, else the highest-ordinal condemned one."""
        for pod in replicas:
            if pod is not None and not (su.is_healthy(pod) and su.is_running_and_available(pod, min_ready, now)):
                return pod
        for pod in condemned:
            if not (su.is_healthy(pod) and su.is_running_and_available(pod, min_ready, now)):
                return pod
        return None

    async def _rolling_update(self, key: str, sts: Obj, replicas: list[Obj], update_name: str, partition: int,
                              min_ready: int, now: float) -> None:
        """Replace outdated pods from the highest ordinal down to ``partition``. Without maxUnavailable: one at a
        time, and never past a pod that is not healthy. With it: as many at once as it allows, counting the pods
        already unavailable; outdated pods that are not available anyway are replaced at no cost."""
        start = su.start_ordinal(sts)
        targets = [p for p in replicas if su.parent_and_ordinal(p)[1] >= start + partition]
        targets.sort(key=lambda p: su.parent_and_ordinal(p)[1], reverse=True)
        budget = su.max_unavailable(sts)
        if budget is None:
            for pod in targets:
                if su.pod_revision(pod) != update_name and not is_being_deleted(pod):
                    await self._apply(key, sts, [], [pod])
                    return
                if not su.is_healthy(pod):
                    return
            return
        unavailable = sum(1 for p in targets if not su.is_running_and_available(p, min_ready, now)
                          or is_being_deleted(p))
        delete: list[Obj] = []
        for pod in targets:
            if su.pod_revision(pod) == update_name or is_being_deleted(pod):
                continue
            if not su.is_running_and_available(pod, min_ready, now):
                delete.append(pod)  # unavailable already: replacing it costs nothing
            elif unavailable < budget:
                delete.append(pod)
                unavailable += 1
        if delete:
            await self._apply(key, sts, [], delete)

    async def _fix_replica(self, sts: Obj, pod: Obj, ordinal: int) -> None:
        """Restore the identity labels of a pod that lost them, and its claims' owners (the set's invariants)."""
        if not su.identity_matches(sts, pod):
            labels = su.identity_labels(pod["metadata"]["name"], ordinal)
            meta = pod["metadata"]
            try:
                await self.client.patch("pods", meta["name"], {"metadata": {"labels": labels}}, meta.get("namespace"))
            except StatusError as exc:
                self.event(sts, "Warning", "FailedUpdate", f"update Pod {meta['name']} in StatefulSet "
                                                           f"{sts['metadata']['name']} failed error: {exc.message}")
                raise
        await self._fix_claims(sts, pod)

    # -- claims ------------------------------------------------------------------------------------------------
    async def _get_claim(self, namespace: str, name: str) -> Obj | None:
        if self.claims is not None:
            return self.claims.get(f"{namespace}/{name}")
        try:
            return await self.client.get(su.CLAIMS, name, namespace)
        except StatusError as exc:
            if exc.code == 404:
                return None
            raise

    async def _fix_claims(self, sts: Obj, pod: Obj) -> None:
        """Give the pod's existing claims the owners the retention policy wants."""
        if not (sts.get("spec") or {}).get("volumeClaimTemplates"):
            return
        ordinal = su.parent_and_ordinal(pod)[1]
        namespace = sts["metadata"].get("namespace")
        for wanted in su.claims_for(sts, ordinal).values():
            existing = await self._get_claim(namespace, wanted["metadata"]["name"])
            if existing is None or is_being_deleted(existing):
                continue
            owners = su.claim_owners(existing, sts, pod, ordinal)
            if owners is None:
                continue
            updated = copy.deepcopy(existing)
            updated["metadata"]["ownerReferences"] = owners
            try:
                await self.client.update(su.CLAIMS, updated, namespace)
            except StatusError as exc:
                if exc.code == 404:
                    continue
                self.event(sts, "Warning", "FailedUpdate", f"update Claim {wanted['metadata']['name']} for Pod "
                                                           f"{pod['metadata']['name']} in StatefulSet "
                                                           f"{sts['metadata']['name']} failed error: {exc.message}")
                raise

    async def _create_claims(self, sts: Obj, pod: Obj) -> bool:
        """Create the pod's missing claims (createPersistentVolumeClaims); False when one is stale (being deleted,
        or owned by a previous pod of this name): the pod waits for it to go."""
        ordinal = su.parent_and_ordinal(pod)[1]
        namespace = sts["metadata"].get("namespace")
        name, set_name = pod["metadata"]["name"], sts["metadata"]["name"]
        for wanted in su.claims_for(sts, ordinal).values():
            claim_name = wanted["metadata"]["name"]
            existing = await self._get_claim(namespace, claim_name)
            if su.claim_is_stale(existing, name):
                return False
            if existing is not None:
                continue
            owners = su.claim_owners(wanted, sts, None, ordinal)
            if owners:
                wanted["metadata"]["ownerReferences"] = owners
            try:
                await self.client.create(su.CLAIMS, wanted, namespace)
            except StatusError as exc:
                if exc.code == 409:
                    continue  # made meanwhile (the cache had not shown it)
                self.event(sts, "Warning", "FailedCreate", f"create Claim {claim_name} for Pod {name} in StatefulSet "
                                                           f"{set_name} failed error: {exc.message}")
                raise
            self.event(sts, "Normal", "SuccessfulCreate", f"create Claim {claim_name} Pod {name} in StatefulSet "
                                                          f"{set_name} success")
        return True

    # -- writes ------------------------------------------------------------------------------------------------
    async def _apply(self, key: str, sts: Obj, create: list[Obj], delete: list[Obj]) -> None:
        """Create and delete pods, expecting to see each in the informer before the set syncs again."""
        self.expectations.expect(key, len(create), [p["metadata"]["uid"] for p in delete])
        pending = iter(create)

        async def create_next() -> None:
            await self._create(key, sts, next(pending))

        created, error = await slow_start(len(create), create_next)
        if created < len(create):
            self.expectations.creation_failed(key, len(create) - created)
        results = await asyncio.gather(*(self._delete(key, sts, pod) for pod in delete), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        if error is not None:
            raise error

    async def _create(self, key: str, sts: Obj, pod: Obj) -> None:
        name, set_name = pod["metadata"]["name"], sts["metadata"]["name"]
        if not await self._create_claims(sts, pod):
            self.expectations.creation_failed(key)
            return
        try:
            await self.client.create("pods", pod, sts["metadata"].get("namespace"))
        except StatusError as exc:
            self.expectations.creation_failed(key)
            if exc.code == 409:
                return  # the previous pod of this name is still there: its events sync again
            self.event(sts, "Warning", "FailedCreate", f"create Pod {name} in StatefulSet {set_name} failed error: "
                                                       f"{exc.message}")
            raise
        self.event(sts, "Normal", "SuccessfulCreate", f"create Pod {name} in StatefulSet {set_name} successful")

    async def _delete(self, key: str, sts: Obj, pod: Obj) -> None:
        meta = pod["metadata"]
        set_name = sts["metadata"]["name"]
        try:
            await self.client.delete("pods", meta["name"], meta.get("namespace"), preconditions={"uid": meta["uid"]})
        except StatusError as exc:
            self.expectations.deletion_observed(key, meta["uid"])
            if exc.code in (404, 409):
                return
            self.event(sts, "Warning", "FailedDelete", f"delete Pod {meta['name']} in StatefulSet {set_name} "
                                                       f"failed error: {exc.message}")
            raise
        self.event(sts, "Normal", "SuccessfulDelete", f"delete Pod {meta['name']} in StatefulSet {set_name} "
                                                      f"successful")

    # -- status ------------------------------------------------------------------------------------------------
    def _status(self, sts: Obj, history: _Revisions, pods: list[Obj]) -> Obj:
        """The counts over the set's pods (computeReplicaStatus), and a finished rolling update makes the update
        revision current (completeRollingUpdate)."""
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.clock.now()
        current_name, update_name = history.current["metadata"]["name"], history.update["metadata"]["name"]
        count = ready = available = current = updated = 0
        for pod in pods:
            created = bool(su.phase(pod))
            count += created
            if su.is_running_and_ready(pod):
                ready += 1
                available += su.is_running_and_available(pod, min_ready, now)
            if created and not is_being_deleted(pod):
                current += su.pod_revision(pod) == current_name
                updated += su.pod_revision(pod) == update_name
        if su.strategy_type(sts) == "RollingUpdate" and updated == count and ready == count:
            current, current_name = updated, update_name
        status: Obj = {"observedGeneration": sts["metadata"].get("generation"), "replicas": count,
                       "readyReplicas": ready, "currentReplicas": current, "updatedReplicas": updated,
                       "currentRevision": current_name, "updateRevision": update_name,
                       "collisionCount": history.collision_count, "availableReplicas": available}
        status = {k: v for k, v in status.items()
                  if v or k in ("replicas", "availableReplicas", "collisionCount")}
        if (sts.get("status") or {}).get("conditions"):
            status["conditions"] = sts["status"]["conditions"]
        return status

    async def _write_status(self, sts: Obj, status: Obj) -> None:
        if status == (sts.get("status") or {}):
            return
        updated = copy.deepcopy(sts)
        updated["status"] = status
        try:
            await self.client.update_status("statefulsets", updated)
        except StatusError as exc:
            if exc.code == 404:
                return
            if exc.code != 409:
                raise
            fresh = await self.client.get("statefulsets", sts["metadata"]["name"], sts["metadata"].get("namespace"))
            if fresh["metadata"].get("uid") != sts["metadata"]["uid"]:
                return
            if fresh["metadata"].get("generation") != sts["metadata"].get("generation"):
                self.enqueue(fresh)  # the spec moved on: this status describes the old one
                return
            fresh["status"] = status
            await self.client.update_status("statefulsets", fresh)


def _selector(sts: Obj) -> LabelSelector:
    try:
        return selector_from_dict((sts.get("spec") or {}).get("selector"))
    except ValueError:
        return LabelSelector.nothing()
