"""The ClusterRole aggregation controller: a ClusterRole with an aggregationRule gets the rules of every
ClusterRole whose labels one of its selectors matches, as Kubernetes' controller of the name does. That is how
``admin``, ``edit`` and ``view`` grow: a ClusterRole labelled ``rbac.authorization.k8s.io/aggregate-to-view:
"true"`` (a CRD's reader, say) adds its rules to ``view``, and so to ``edit`` and ``admin``, which aggregate
``view`` and ``edit`` in turn.

Any change to any ClusterRole requeues every aggregated one; a sync collects the matching roles' rules in the
order of the roles' names, each distinct rule once, and writes them only when they differ from what is there.
"""

from __future__ import annotations

from minik.aio.clock import Clock
from minik.api.kinds.rbac import aggregated_rules, aggregation_selectors
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder


class ClusterRoleAggregationController(Controller):
    name = "clusterrole-aggregation"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 1, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.roles = factory.informer("clusterroles.rbac.authorization.k8s.io")
        self.roles.add_handlers(self._changed, lambda _old, new: self._changed(new), self._changed)

    def _changed(self, _role: Obj) -> None:
        for role in self.roles.list():
            if aggregation_selectors(role):
                self.enqueue(role)

    async def sync(self, key: str) -> None:
        role = self.roles.get(key)
        if role is None or not aggregation_selectors(role):
            return
        rules = aggregated_rules(role, self.roles.list())
        if rules == (role.get("rules") or []):
            return
        meta = role["metadata"]
        await self.client.patch("clusterroles.rbac.authorization.k8s.io", meta["name"], {"rules": rules})
        self.log.info("aggregated cluster role", clusterrole=meta["name"], rules=len(rules))
