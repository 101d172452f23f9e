"""The Deployment controller (Kubernetes' deployment controller): one ReplicaSet per pod template, named and
labelled with the template's hash; RollingUpdate within maxSurge/maxUnavailable, or Recreate; revisions in the
``deployment.kubernetes.io/revision`` annotation and old ReplicaSets pruned to revisionHistoryLimit; proportional
scaling while a rollout is under way; pause and resume; the Available and Progressing conditions with the
progress deadline.

Writes go through the API from copies; a stale cache makes an update fail with 409 and the sync is retried.
"""

from __future__ import annotations

import copy

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.selectors import LabelSelector, selector_from_dict
from minik.api.timestamps import parse_time
from minik.client import Client
from minik.controllers import deploymentutil as du
from minik.controllers.base import (
    Controller,
    InformerFactory,
    Obj,
    Recorder,
    controller_ref,
    is_being_deleted,
    owner_reference,
)
from minik.controllers.claims import claim, fresh_owner_check


def _created(obj: Obj) -> tuple[float, str]:
    meta = obj.get("metadata") or {}
    return parse_time(meta.get("creationTimestamp")) or 0.0, meta.get("name", "")


def _round(x: float) -> int:
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)  # Go's math.Round: halves away from zero


class DeploymentController(Controller):
    name = "deployment"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.deployments = factory.informer("deployments")
        self.replicasets = factory.informer("replicasets")
        self.pods = factory.informer("pods")
        self.deployments.add_handlers(self.enqueue, lambda old, new: self.enqueue(new), self.enqueue)
        self.replicasets.add_handlers(self._rs_added, self._rs_updated, self._rs_deleted)
        self.pods.add_handlers(on_delete=self._pod_deleted)

    # -- event handlers --------------------------------------------------------------------------------------
    def _owner(self, obj: Obj, ref: Obj | None = None) -> Obj | None:
        ref = ref or controller_ref(obj)
        if ref is None or ref.get("kind") != "Deployment":
            return None
        d = self.deployments.get(f"{obj['metadata'].get('namespace')}/{ref.get('name')}")
        return d if d is not None and d["metadata"].get("uid") == ref.get("uid") else None

    def _matching(self, rs: Obj) -> list[Obj]:
        labels = rs["metadata"].get("labels") or {}
        found = []
        for d in self.deployments.list(rs["metadata"].get("namespace")):
            selector = _selector(d)
            if not selector.empty and selector.matches(labels):
                found.append(d)
        return found

    def _rs_added(self, rs: Obj) -> None:
        owner = self._owner(rs)
        if owner is not None:
            self.enqueue(owner)
        elif controller_ref(rs) is None:
            for d in self._matching(rs):
                self.enqueue(d)

    def _rs_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        old_ref, new_ref = controller_ref(old), controller_ref(new)
        if old_ref != new_ref and old_ref is not None:
            previous = self._owner(old, old_ref)
            if previous is not None:
                self.enqueue(previous)
        if new_ref is not None:
            owner = self._owner(new)
            if owner is not None:
                self.enqueue(owner)
        elif old["metadata"].get("labels") != new["metadata"].get("labels") or old_ref != new_ref:
            for d in self._matching(new):
                self.enqueue(d)

    def _rs_deleted(self, rs: Obj) -> None:
        owner = self._owner(rs)
        if owner is not None:
            self.enqueue(owner)

    def _pod_deleted(self, pod: Obj) -> None:
        """Recreate waits for the old pods to be gone: their deletion may be what lets it go on."""
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.replicasets.get(f"{pod['metadata'].get('namespace')}/{ref.get('name')}")
        d = self._owner(rs) if rs is not None else None
        if d is not None and ((d.get("spec") or {}).get("strategy") or {}).get("type") == "Recreate":
            self.enqueue(d)

    # -- sync ------------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        cached = self.deployments.get(key)
        if cached is None:
            return
        d = copy.deepcopy(cached)
        selector = _selector(d)
        if selector.empty:
            self.event(d, "Warning", "SelectingAll", "This deployment is selecting all pods. A non-empty selector "
                                                     "is required.")
            return
        namespace = d["metadata"].get("namespace")
        candidates = self.replicasets.list(namespace)
        rss = await claim(self.client, "replicasets", d, selector, candidates,
                          fresh_owner_check(self.client, "deployments", d))
        if is_being_deleted(d):
            new, olds = await self._get_all(d, rss, create=False)
            await self._sync_status(d, olds + ([new] if new else []), new)
            return
        d = await self._check_paused_conditions(d)
        spec = d.get("spec") or {}
        if spec.get("paused"):
            await self._scale_sync(d, rss)
            return
        new, olds = await self._get_all(d, rss, create=False)
        if self._is_scaling_event(d, [new, *olds]):
            await self._scale_sync(d, rss, (new, olds))
            return
        if (spec.get("strategy") or {}).get("type") == "Recreate":
            await self._recreate(d, rss)
        else:
            await self._rolling(d, rss)

    # -- replica sets -----------------------------------------------------------------------------------------
    async def _get_all(self, d: Obj, rss: list[Obj], create: bool) -> tuple[Obj | None, list[Obj]]:
        """The new ReplicaSet (whose template is the deployment's), created when asked and missing, with its
        revision brought up to date; and the old ones."""
        template = (d.get("spec") or {}).get("template") or {}
        ordered = sorted(rss, key=_created)
        new = next((rs for rs in ordered if du.equal_ignoring_hash((rs.get("spec") or {}).get("template") or {},
                                                                   template)), None)
        olds = [rs for rs in ordered if rs is not new]
        new_revision = max((du.revision(rs) for rs in olds), default=0) + 1
        if new is not None:
            new = await self._refresh_new(d, new, new_revision)
            await self._set_revision(d, du.revision(new))
            if du.has_progress_deadline(d) and du.condition(d.get("status") or {}, "Progressing") is None:
                du.set_condition(d.setdefault("status", {}), "Progressing", "True", du.FOUND_NEW_RS,
                                 f'Found new replica set "{new["metadata"]["name"]}"', self.clock.now())
            return new, olds
        if not create:
            return None, olds
        new = await self._create_new(d, rss, template, new_revision)
        return new, olds

    def _copied_annotations(self, d: Obj) -> dict[str, str]:
        return {k: v for k, v in (d["metadata"].get("annotations") or {}).items() if k not in du.SKIPPED_ANNOTATIONS}

    async def _refresh_new(self, d: Obj, new: Obj, new_revision: int) -> Obj:
        annotations = dict(new["metadata"].get("annotations") or {})
        wanted = {**annotations, **self._copied_annotations(d)}
        if du.revision(new) < new_revision:
            wanted[du.REVISION] = str(new_revision)
        min_ready = (d.get("spec") or {}).get("minReadySeconds", 0)
        if wanted == annotations and (new.get("spec") or {}).get("minReadySeconds", 0) == min_ready:
            return new
        updated = copy.deepcopy(new)
        updated["metadata"]["annotations"] = wanted
        updated["spec"]["minReadySeconds"] = min_ready
        return await self.client.update("replicasets", updated)

    async def _create_new(self, d: Obj, rss: list[Obj], template: Obj, new_revision: int) -> Obj:
        meta, spec = d["metadata"], d.get("spec") or {}
        status = d.setdefault("status", {})
        collisions = status.get("collisionCount")
        hash_ = du.template_hash(template, collisions)
        new_template = copy.deepcopy(template)
        new_template.setdefault("metadata", {}).setdefault("labels", {})[du.TEMPLATE_HASH_LABEL] = hash_
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[du.TEMPLATE_HASH_LABEL] = hash_
        name = f"{meta['name']}-{hash_}"
        size = self._new_replicas(d, rss, None)
        surge = du.surge_and_unavailable(d)[0]
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": name, "namespace": meta.get("namespace"),
                           "labels": new_template["metadata"]["labels"],
                           "annotations": {**self._copied_annotations(d), du.REVISION: str(new_revision),
                                           du.DESIRED_REPLICAS: str(du.replicas(d)),
                                           du.MAX_REPLICAS: str(du.replicas(d) + surge)},
                           "ownerReferences": [owner_reference(d)]},
              "spec": {"replicas": size, "minReadySeconds": spec.get("minReadySeconds", 0), "selector": selector,
                       "template": new_template}}
        try:
            created = await self.client.create("replicasets", rs, meta.get("namespace"))
        except StatusError as exc:
            if exc.code != 409:
                raise
            existing = await self.client.get("replicasets", name, meta.get("namespace"))
            ref = controller_ref(existing)
            if ref is not None and ref.get("uid") == meta["uid"] and du.equal_ignoring_hash(
                    (existing.get("spec") or {}).get("template") or {}, template):
                return existing  # ours: the informer had not shown it yet
            status["collisionCount"] = (collisions or 0) + 1  # a hash collision: the next try hashes differently
            await self.client.update_status("deployments", d)
            raise
        if size > 0:
            self.event(d, "Normal", "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {size}")
        await self._set_revision(d, new_revision)
        if du.has_progress_deadline(d):
            du.set_condition(status, "Progressing", "True", du.NEW_RS_CREATED, f'Created new replica set "{name}"',
                             self.clock.now())
        return created

    async def _set_revision(self, d: Obj, revision: int) -> None:
        """The deployment's revision annotation follows its newest ReplicaSet's (a metadata-only write)."""
        annotations = d["metadata"].get("annotations") or {}
        if annotations.get(du.REVISION) == str(revision):
            return
        patched = await self.client.patch("deployments", d["metadata"]["name"],
                                          {"metadata": {"annotations": {du.REVISION: str(revision)}}},
                                          d["metadata"].get("namespace"))
        d["metadata"] = patched["metadata"]  # keep our working status; the resourceVersion moves on

    def _new_replicas(self, d: Obj, all_rss: list[Obj], new: Obj | None) -> int:
        if ((d.get("spec") or {}).get("strategy") or {}).get("type") == "Recreate":
            return du.replicas(d)
        surge = du.surge_and_unavailable(d)[0]
        current = sum(du.replicas(rs) for rs in all_rss)
        max_total = du.replicas(d) + surge
        if current >= max_total:
            return du.replicas(new)
        return du.replicas(new) + min(max_total - current, du.replicas(d) - du.replicas(new))

    async def _scale_rs(self, d: Obj, rs: Obj, size: int) -> Obj:
        old = du.replicas(rs)
        surge = du.surge_and_unavailable(d)[0]
        annotations = rs["metadata"].get("annotations") or {}
        desired, maximum = str(du.replicas(d)), str(du.replicas(d) + surge)
        if old == size and annotations.get(du.DESIRED_REPLICAS) == desired and \
                annotations.get(du.MAX_REPLICAS) == maximum:
            return rs
        updated = copy.deepcopy(rs)
        updated["spec"]["replicas"] = size
        updated["metadata"]["annotations"] = {**annotations, du.DESIRED_REPLICAS: desired, du.MAX_REPLICAS: maximum}
        result = await self.client.update("replicasets", updated)
        if old != size:
            self.event(d, "Normal", "ScalingReplicaSet", f"Scaled {'up' if size > old else 'down'} replica set "
                                                         f"{rs['metadata']['name']} from {old} to {size}")
        return result

    # -- strategies ------------------------------------------------------------------------------------------
    async def _rolling(self, d: Obj, rss: list[Obj]) -> None:
        new, olds = await self._get_all(d, rss, create=True)
        assert new is not None
        want = du.replicas(d)
        if du.replicas(new) != want:
            size = want if du.replicas(new) > want else self._new_replicas(d, [new, *olds], new)
            if size != du.replicas(new):
                new = await self._scale_rs(d, new, size)
                await self._sync_rollout_status(d, [*olds, new], new)
                return
        olds, scaled = await self._reconcile_old(d, olds, new)
        if not scaled and du.complete(d, d.get("status") or {}):
            await self._cleanup(d, olds)
        await self._sync_rollout_status(d, [*olds, new], new)

    async def _reconcile_old(self, d: Obj, olds: list[Obj], new: Obj) -> tuple[list[Obj], bool]:
        old_count = sum(du.replicas(rs) for rs in olds)
        if old_count == 0:
            return olds, False
        min_available = du.replicas(d) - du.max_unavailable(d)
        new_unavailable = du.replicas(new) - _available(new)
        max_scaled_down = old_count + du.replicas(new) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return olds, False
        olds = sorted(olds, key=_created)
        cleaned = 0  # first the old pods that are not available anyway
        for i, rs in enumerate(olds):
            if cleaned >= max_scaled_down:
                break
            if du.replicas(rs) == 0 or du.replicas(rs) == _available(rs):
                continue
            count = min(max_scaled_down - cleaned, du.replicas(rs) - _available(rs))
            olds[i] = await self._scale_rs(d, rs, du.replicas(rs) - count)
            cleaned += count
        available = sum(_available(rs) for rs in [*olds, new])
        scaled = 0
        if available > min_available:
            total = available - min_available
            for i, rs in enumerate(olds):
                if scaled >= total:
                    break
                if du.replicas(rs) == 0:
                    continue
                count = min(du.replicas(rs), total - scaled)
                olds[i] = await self._scale_rs(d, rs, du.replicas(rs) - count)
                scaled += count
        return olds, cleaned + scaled > 0

    async def _recreate(self, d: Obj, rss: list[Obj]) -> None:
        new, olds = await self._get_all(d, rss, create=False)
        active = [rs for rs in olds if du.replicas(rs) > 0]
        if active:
            olds = [await self._scale_rs(d, rs, 0) if du.replicas(rs) > 0 else rs for rs in olds]
            await self._sync_rollout_status(d, olds + ([new] if new else []), new)
            return
        old_uids = {rs["metadata"]["uid"] for rs in olds}
        running = [p for p in self.pods.list(d["metadata"].get("namespace"))
                   if (controller_ref(p) or {}).get("uid") in old_uids
                   and (p.get("status") or {}).get("phase") not in ("Failed", "Succeeded")]
        if running:  # Recreate: no new pod before every old one is gone
            await self._sync_rollout_status(d, olds + ([new] if new else []), new)
            return
        if new is None:
            new, olds = await self._get_all(d, rss, create=True)
            assert new is not None
        new = await self._scale_rs(d, new, du.replicas(d))
        if du.complete(d, d.get("status") or {}):
            await self._cleanup(d, olds)
        await self._sync_rollout_status(d, [*olds, new], new)

    # -- scaling -----------------------------------------------------------------------------------------------
    def _is_scaling_event(self, d: Obj, all_rss: list[Obj | None]) -> bool:
        for rs in all_rss:
            if rs is None or du.replicas(rs) == 0:
                continue
            desired = (rs["metadata"].get("annotations") or {}).get(du.DESIRED_REPLICAS)
            if desired is not None and desired != str(du.replicas(d)):
                return True
        return False

    async def _scale_sync(self, d: Obj, rss: list[Obj], found: tuple[Obj | None, list[Obj]] | None = None) -> None:
        new, olds = found or await self._get_all(d, rss, create=False)
        new, olds = await self._scale(d, new, olds)
        if (d.get("spec") or {}).get("paused"):
            await self._cleanup(d, olds)
        await self._sync_status(d, olds + ([new] if new else []), new)

    async def _scale(self, d: Obj, new: Obj | None, olds: list[Obj]) -> tuple[Obj | None, list[Obj]]:
        everything = ([new] if new else []) + olds
        active = [rs for rs in everything if du.replicas(rs) > 0]
        if len(active) <= 1:
            target = active[0] if active else (new or (sorted(olds, key=_created)[-1] if olds else None))
            if target is None:
                return new, olds
            scaled = await self._scale_rs(d, target, du.replicas(d))
            return _replace(new, olds, target, scaled)
        annotations = (new or {}).get("metadata", {}).get("annotations") or {}
        if new is not None and du.replicas(new) == du.replicas(d) and \
                annotations.get(du.DESIRED_REPLICAS) == str(du.replicas(d)) and _available(new) == du.replicas(d):
            for rs in olds:  # saturated: the old ones go
                if du.replicas(rs) > 0:
                    new, olds = _replace(new, olds, rs, await self._scale_rs(d, rs, 0))
            return new, olds
        if ((d.get("spec") or {}).get("strategy") or {}).get("type") != "RollingUpdate":
            return new, olds
        surge = du.surge_and_unavailable(d)[0]
        allowed = du.replicas(d) + surge if du.replicas(d) > 0 else 0
        to_add = allowed - sum(du.replicas(rs) for rs in active)
        if to_add > 0:  # larger first, and among equals the newer (up) or the older (down) first
            order = sorted(active, key=lambda rs: (-du.replicas(rs), -_created(rs)[0]))
        else:
            order = sorted(active, key=lambda rs: (-du.replicas(rs), _created(rs)[0]))
        sizes: list[int] = []
        added = 0
        for rs in order:
            share = self._proportion(d, rs, to_add, added, surge) if to_add else 0
            sizes.append(du.replicas(rs) + share)
            added += share
        if order and to_add:
            sizes[0] = max(0, sizes[0] + to_add - added)
        for rs, size in zip(order, sizes):
            new, olds = _replace(new, olds, rs, await self._scale_rs(d, rs, size))
        return new, olds

    def _proportion(self, d: Obj, rs: Obj, to_add: int, added: int, surge: int) -> int:
        if du.replicas(rs) == 0 or to_add == added:
            return 0
        if du.replicas(d) == 0:
            fraction = -du.replicas(rs)
        else:
            try:
                annotated = int((rs["metadata"].get("annotations") or {}).get(du.MAX_REPLICAS, ""))
            except ValueError:
                annotated = 0
            annotated = annotated or du.status_of(d, "replicas")
            if annotated == 0:
                return 0
            fraction = _round(du.replicas(rs) * (du.replicas(d) + surge) / annotated) - du.replicas(rs)
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    async def _cleanup(self, d: Obj, olds: list[Obj]) -> None:
        """Delete the oldest ReplicaSets beyond revisionHistoryLimit, if they are scaled to zero and settled."""
        limit = (d.get("spec") or {}).get("revisionHistoryLimit")
        if limit is None:
            return
        alive = sorted((rs for rs in olds if not is_being_deleted(rs)), key=du.revision)
        for rs in alive[:max(0, len(alive) - int(limit))]:
            meta = rs["metadata"]
            if du.status_of(rs, "replicas") or du.replicas(rs) or \
                    int(meta.get("generation") or 0) > du.status_of(rs, "observedGeneration"):
                continue
            try:
                await self.client.delete("replicasets", meta["name"], meta.get("namespace"),
                                         preconditions={"uid": meta["uid"]})
            except StatusError as exc:
                if exc.code != 404:
                    raise

    # -- status ------------------------------------------------------------------------------------------------
    async def _check_paused_conditions(self, d: Obj) -> Obj:
        if not du.has_progress_deadline(d):
            return d
        status = d.setdefault("status", {})
        cond = du.condition(status, "Progressing")
        was_paused = cond is not None and cond.get("reason") == du.PAUSED
        paused = bool((d.get("spec") or {}).get("paused"))
        if paused and not was_paused:
            du.set_condition(status, "Progressing", "Unknown", du.PAUSED, "Deployment is paused", self.clock.now())
        elif not paused and was_paused:
            du.set_condition(status, "Progressing", "Unknown", du.RESUMED, "Deployment is resumed", self.clock.now())
        else:
            return d
        return await self.client.update_status("deployments", d)

    def _calculate_status(self, d: Obj, all_rss: list[Obj], new: Obj | None) -> Obj:
        available = sum(du.status_of(rs, "availableReplicas") for rs in all_rss)
        total = sum(du.replicas(rs) for rs in all_rss)
        old = d.get("status") or {}
        status: Obj = {"observedGeneration": d["metadata"].get("generation"),
                       "replicas": sum(du.status_of(rs, "replicas") for rs in all_rss),
                       "updatedReplicas": du.status_of(new, "replicas"),
                       "readyReplicas": sum(du.status_of(rs, "readyReplicas") for rs in all_rss),
                       "availableReplicas": available,
                       "unavailableReplicas": max(0, total - available),
                       "collisionCount": old.get("collisionCount")}
        status = {k: v for k, v in status.items() if v}
        status["conditions"] = copy.deepcopy(old.get("conditions") or [])
        if available >= du.replicas(d) - du.max_unavailable(d):
            du.set_condition(status, "Available", "True", du.MIN_AVAILABLE, "Deployment has minimum availability.",
                             self.clock.now())
        else:
            du.set_condition(status, "Available", "False", du.MIN_UNAVAILABLE,
                             "Deployment does not have minimum availability.", self.clock.now())
        return status

    async def _sync_status(self, d: Obj, all_rss: list[Obj], new: Obj | None) -> None:
        status = self._calculate_status(d, all_rss, new)
        await self._write_status(d, status)

    async def _sync_rollout_status(self, d: Obj, all_rss: list[Obj], new: Obj | None) -> None:
        status = self._calculate_status(d, all_rss, new)
        now = self.clock.now()
        if not du.has_progress_deadline(d):
            du.remove_condition(status, "Progressing")
        current = du.condition(status, "Progressing")
        done = status.get("replicas", 0) == status.get("updatedReplicas", 0) and current is not None and \
            current.get("reason") == du.NEW_RS_AVAILABLE
        if du.has_progress_deadline(d) and not done:
            name = (new or {}).get("metadata", {}).get("name", "")
            if du.complete(d, status):
                du.set_condition(status, "Progressing", "True", du.NEW_RS_AVAILABLE,
                                 f'ReplicaSet "{name}" has successfully progressed.', now)
            elif du.progressing(d, status):
                message = f'ReplicaSet "{name}" is progressing.' if new else \
                    f'Deployment "{d["metadata"]["name"]}" is progressing.'
                du.remove_condition(status, "Progressing")
                du.set_condition(status, "Progressing", "True", du.RS_UPDATED, message, now)
                if current is not None and current.get("status") == "True":
                    du.condition(status, "Progressing")["lastTransitionTime"] = current["lastTransitionTime"]  # type: ignore[index]
            elif self._timed_out(d, status, now):
                du.set_condition(status, "Progressing", "False", du.TIMED_OUT,
                                 f'ReplicaSet "{name}" has timed out progressing.', now)
        if not await self._write_status(d, status):
            self._requeue_stuck(d, status, now)

    def _timed_out(self, d: Obj, status: Obj, now: float) -> bool:
        cond = du.condition(status, "Progressing")
        if cond is None or cond.get("reason") == du.NEW_RS_AVAILABLE:
            return False
        if cond.get("reason") == du.TIMED_OUT:
            return True
        since = parse_time(cond.get("lastUpdateTime"))
        return since is not None and since + int(d["spec"]["progressDeadlineSeconds"]) < now

    def _requeue_stuck(self, d: Obj, status: Obj, now: float) -> None:
        """Check the deadline again when it would pass, since nothing else may happen before then."""
        cond = du.condition(status, "Progressing")
        if cond is None or not du.has_progress_deadline(d) or du.complete(d, status) or \
                cond.get("reason") in (du.NEW_RS_AVAILABLE, du.TIMED_OUT):
            return
        since = parse_time(cond.get("lastUpdateTime"))
        if since is None:
            return
        self.enqueue_after(d, max(0.5, since + int(d["spec"]["progressDeadlineSeconds"]) - now + 0.5))

    async def _write_status(self, d: Obj, status: Obj) -> bool:
        """Write ``status`` if it differs (conditions compared without their timestamps' churn)."""
        if status == (d.get("status") or {}):
            return False
        d["status"] = status
        await self.client.update_status("deployments", d)
        return True


def _selector(d: Obj) -> LabelSelector:
    try:
        return selector_from_dict((d.get("spec") or {}).get("selector"))
    except ValueError:
        return LabelSelector.nothing()


def _available(rs: Obj) -> int:
    """Available replicas counted for the rollout: never more than the ReplicaSet is scaled to, so a status that
    has not caught up with a scale-down does not allow a second one."""
    return min(du.status_of(rs, "availableReplicas"), du.replicas(rs))


def _replace(new: Obj | None, olds: list[Obj], before: Obj, after: Obj) -> tuple[Obj | None, list[Obj]]:
    if new is before:
        return after, olds
    return new, [after if rs is before else rs for rs in olds]
