"""The namespace controller (Kubernetes' namespace deleter): a deleted namespace is Terminating (the API server
marks it and refuses new content); this controller deletes everything in it, kind by kind, reports progress in
the namespace's status conditions, and once nothing is left removes the ``kubernetes`` finalizer through
namespaces/NAME/finalize, after which the API server removes the namespace.

Content that takes time to go (pods stopping on their nodes, objects held by finalizers) is waited for: the
namespace is looked at again after the longest remaining grace period, or a few seconds.
"""

from __future__ import annotations

import copy
import math
from collections import Counter

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.registry import ResourceType
from minik.api.timestamps import parse_time, rfc3339
from minik.client import Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, is_being_deleted

FINALIZER = "kubernetes"
#: how soon a namespace whose content is still going is looked at again (at most; pods' grace may shorten it)
RECHECK_SECONDS = 2.0


class NamespaceController(Controller):
    name = "namespace"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.namespaces = factory.informer("namespaces")
        self.namespaces.add_handlers(self.enqueue, lambda old, new: self.enqueue(new))

    @property
    def kinds(self) -> list[ResourceType]:
        """Every namespaced resource that can be listed and deleted, custom resources included (looked up at each
        sync: CRDs come and go)."""
        return [rt for rt in self.client.registry.preferred() if rt.namespaced and
                {"list", "delete", "deletecollection"} <= set(rt.verbs)]

    async def sync(self, key: str) -> None:
        cached = self.namespaces.get(key)
        if cached is None or not is_being_deleted(cached):
            return
        ns = copy.deepcopy(cached)
        if (ns.get("status") or {}).get("phase") != "Terminating":
            ns.setdefault("status", {})["phase"] = "Terminating"
        try:
            remaining, finalizers, estimate = await self._delete_content(key)
        except StatusError as exc:
            await self._set_conditions(ns, {"NamespaceDeletionContentFailure": (
                "True", "ContentDeletionFailed", f"Failed to delete all resource types, 1 remaining: {exc.message}")})
            raise
        conditions = {
            "NamespaceDeletionDiscoveryFailure": ("False", "ResourcesDiscovered", "All resources successfully discovered"),
            "NamespaceDeletionGroupVersionParsingFailure": ("False", "ParsedGroupVersions",
                                                            "All legacy kube types successfully parsed"),
            "NamespaceDeletionContentFailure": ("False", "ContentDeleted",
                                                "All content successfully deleted, may be waiting on finalization"),
        }
        if remaining:
            counts = ", ".join(f"{plural} has {n} resource instances" for plural, n in sorted(remaining.items()))
            conditions["NamespaceContentRemaining"] = ("True", "SomeResourcesRemain",
                                                       f"Some resources are remaining: {counts}")
        else:
            conditions["NamespaceContentRemaining"] = ("False", "ContentRemoved", "All content successfully removed")
        if finalizers:
            held = ", ".join(f"{f} in {n} resource instances" for f, n in sorted(finalizers.items()))
            conditions["NamespaceFinalizersRemaining"] = ("True", "SomeFinalizersRemain",
                                                          f"Some content in the namespace has finalizers remaining: "
                                                          f"{held}")
        else:
            conditions["NamespaceFinalizersRemaining"] = ("False", "ContentHasNoFinalizers",
                                                          "All content-preserving finalizers finished")
        ns = await self._set_conditions(ns, conditions)
        if remaining:
            self.enqueue_after(ns, estimate)
            return
        await self._finalize(ns)

    async def _delete_content(self, namespace: str) -> tuple[Counter[str], Counter[str], float]:
        """Delete every object in the namespace (Background propagation); what is left (per kind), which
        finalizers hold it, and when to look again."""
        remaining: Counter[str] = Counter()
        finalizers: Counter[str] = Counter()
        estimate = RECHECK_SECONDS
        now = self.clock.now()
        for rt in self.kinds:
            listing = await self.client.list(rt, namespace)
            items = listing.get("items") or []
            if not items:
                continue
            if any(not is_being_deleted(o) for o in items):
                await self.client.delete_collection(rt, namespace, propagation_policy="Background")
                items = (await self.client.list(rt, namespace)).get("items") or []
            for obj in items:
                remaining[rt.plural] += 1
                for finalizer in (obj.get("metadata") or {}).get("finalizers") or []:
                    finalizers[finalizer] += 1
                deadline = parse_time((obj.get("metadata") or {}).get("deletionTimestamp"))
                if deadline is not None and deadline > now:
                    estimate = min(estimate, max(0.5, math.ceil(deadline - now)))
        return remaining, finalizers, estimate

    async def _set_conditions(self, ns: Obj, wanted: dict[str, tuple[str, str, str]]) -> Obj:
        status = ns.setdefault("status", {})
        conditions = {c.get("type"): c for c in status.get("conditions") or []}
        changed = False
        for type_, (value, reason, message) in wanted.items():
            current = conditions.get(type_)
            if current is not None and (current.get("status"), current.get("reason"), current.get("message")) == \
                    (value, reason, message):
                continue
            conditions[type_] = {"type": type_, "status": value, "lastTransitionTime": rfc3339(self.clock.now()),
                                 "reason": reason, "message": message}
            changed = True
        if not changed:
            return ns
        status["conditions"] = list(conditions.values())
        try:
            return await self.client.update_status("namespaces", ns)
        except StatusError as exc:
            if exc.code in (404, 409):
                return ns  # gone, or changed meanwhile: the next sync writes it
            raise

    async def _finalize(self, ns: Obj) -> None:
        spec_finalizers = [f for f in (ns.get("spec") or {}).get("finalizers") or [] if f != FINALIZER]
        updated = copy.deepcopy(ns)
        updated.setdefault("spec", {})["finalizers"] = spec_finalizers
        try:
            await self.client.update("namespaces", updated, subresource="finalize")
        except StatusError as exc:
            if exc.code != 404:
                raise
        self.log.info("namespace emptied and finalized", namespace=ns["metadata"]["name"])
