"""The resource quota controller: every ResourceQuota's status.hard follows its spec.hard, and status.used holds what
its namespace uses of each (minik.api.quota's counting: ``pods`` and compute resources of pods still running,
``services.nodeports``, ``count/<resource>.<group>`` of any kind...), as Kubernetes' controller of the name keeps
them. What `kubectl describe quota` and `kubectl get quota` show.

A quota is synced when it changes, when an object its namespace holds of a kind it counts comes or goes (or, for
pods and services, changes what it counts: a pod finishing frees its cpu), and every ``resync_seconds`` besides.
The objects are read from shared informers of every namespaced kind (the garbage collector's too).
"""

from __future__ import annotations

from typing import Any

from minik.aio.clock import Clock
from minik.api.quantity import ResourceList, resource_list
from minik.api.quota import ZERO, add, counted, matching_names, quota_selects, usage
from minik.api.registry import ResourceType
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder
from minik.informers import Informer

DEFAULT_RESYNC_SECONDS = 300.0


def _hard(quota: Obj) -> dict[str, Any]:
    spec = quota.get("spec")
    hard = spec.get("hard") if isinstance(spec, dict) else None
    return hard if isinstance(hard, dict) else {}


class ResourceQuotaController(Controller):
    name = "resourcequota"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None, *, resync_seconds: float = DEFAULT_RESYNC_SECONDS) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.resync_seconds = resync_seconds
        self.quotas = factory.informer("resourcequotas")
        self.quotas.add_handlers(self.enqueue, self._quota_changed)
        #: group_resource -> (type, informer) of every kind a quota can count
        self.counted: dict[str, tuple[ResourceType, Informer]] = {}
        for rt in client.registry.types:
            if not counted(rt) or not {"list", "watch"} <= set(rt.verbs):
                continue
            informer = factory.informer(rt.group_resource)
            self.counted[rt.group_resource] = (rt, informer)
            informer.add_handlers(*self._replenishers(rt))

    def _quota_changed(self, old: Obj, new: Obj) -> None:
        if old.get("spec") != new.get("spec") or _hard(new) != (new.get("status") or {}).get("hard"):
            self.enqueue(new)

    def _replenishers(self, rt: ResourceType) -> tuple[Any, Any, Any]:
        def changed(obj: Obj) -> None:
            self._replenish(rt, obj)

        def updated(old: Obj, new: Obj) -> None:
            if rt.group == "" and rt.plural in ("pods", "services"):
                now = self.clock.now()
                if usage(rt, old, now) != usage(rt, new, now):
                    self._replenish(rt, new)

        return changed, updated, changed

    def _replenish(self, rt: ResourceType, obj: Obj) -> None:
        namespace = (obj.get("metadata") or {}).get("namespace")
        if not namespace:
            return
        for quota in self.quotas.list(namespace):
            if matching_names(rt, _hard(quota)):
                self.enqueue(quota)

    def used(self, quota: Obj) -> ResourceList:
        """What the quota's namespace uses of each resource it limits."""
        namespace = quota["metadata"].get("namespace")
        hard = _hard(quota)
        now = self.clock.now()
        total: ResourceList = {}
        for rt, informer in self.counted.values():
            names = matching_names(rt, hard)
            if not names:
                continue
            for obj in informer.list(namespace):
                if quota_selects(quota, rt, obj):
                    add(total, {n: a for n, a in usage(rt, obj, now).items() if n in names})
        for name in hard:
            total.setdefault(name, ZERO)
        return total

    async def sync(self, key: str) -> None:
        quota = self.quotas.get(key)
        if quota is None:
            return
        hard = _hard(quota)
        status = {"hard": dict(hard), "used": {name: str(amount) for name, amount in sorted(self.used(quota).items())}}
        current = quota.get("status") or {}
        if current.get("hard") != status["hard"] or \
                resource_list(current.get("used")) != resource_list(status["used"]) or \
                set(current.get("used") or {}) != set(status["used"]):
            meta = quota["metadata"]
            await self.client.update_status("resourcequotas", {**quota, "status": status}, meta.get("namespace"))
            self.log.debug("quota status written", quota=key, used=status["used"])
        if self.resync_seconds > 0:
            self.enqueue_after(quota, self.resync_seconds)
