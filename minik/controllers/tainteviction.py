"""The taint eviction controller (Kubernetes' tainteviction, once the NoExecuteTaintManager): pods on a node with
NoExecute taints they do not tolerate are deleted at once; pods that tolerate them for tolerationSeconds are
deleted when the shortest of those runs out (counted from when this controller first saw the taint apply); pods
that tolerate them forever stay. A taint that goes before the time is up cancels the eviction.

An evicted pod gets the DisruptionTarget condition (DeletionByTaintManager) and a TaintManagerEviction event,
then is deleted; its controller (ReplicaSet, Job, ...) makes a replacement, which the scheduler keeps off the
tainted node.
"""

from __future__ import annotations

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.placement import matching_tolerations
from minik.api.timestamps import rfc3339
from minik.client import STRATEGIC_MERGE_PATCH, Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, is_being_deleted
from minik.informers import NODE_NAME_INDEX, by_node_name, object_key, split_key


def no_execute_taints(node: Obj | None) -> list[Obj]:
    return [t for t in ((node or {}).get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]


def toleration_seconds(pod: Obj, taints: list[Obj]) -> float | None:
    """How long ``pod`` may stay on a node with these NoExecute taints: 0 when one is not tolerated, the shortest
    tolerationSeconds of the tolerations used, None for ever."""
    tolerated, used = matching_tolerations(taints, (pod.get("spec") or {}).get("tolerations") or [])
    if not tolerated:
        return 0.0
    limits = [float(t["tolerationSeconds"]) for t in used if t.get("tolerationSeconds") is not None]
    if not limits:
        return None
    return max(0.0, min(limits))


class TaintEvictionController(Controller):
    name = "taint-eviction"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        #: pod key -> when its eviction was first scheduled (the start of its toleration)
        self.scheduled: dict[str, float] = {}
        self.pods = factory.informer("pods")
        # a node's change visits its pods only: a scan of every pod per node would be 5,000 x 150,000 steps when
        # a large cluster's nodes are listed
        self.pods.add_indexers({NODE_NAME_INDEX: by_node_name})
        self.nodes = factory.informer("nodes")
        self.pods.add_handlers(self._pod_changed, self._pod_updated, self._pod_deleted)
        self.nodes.add_handlers(self._node_changed, self._node_updated, self._node_changed)

    # -- handlers --------------------------------------------------------------------------------------------
    def _pod_changed(self, pod: Obj) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            self.enqueue(pod)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if (old.get("spec") or {}).get("nodeName") != (new.get("spec") or {}).get("nodeName"):
            self.enqueue(new)
        elif (old.get("spec") or {}).get("tolerations") != (new.get("spec") or {}).get("tolerations"):
            self.enqueue(new)

    def _pod_deleted(self, pod: Obj) -> None:
        self.scheduled.pop(object_key(pod), None)

    def _node_changed(self, node: Obj) -> None:
        for pod in self.pods.by_index(NODE_NAME_INDEX, node["metadata"]["name"]):
            self.queue.add(object_key(pod))

    def _node_updated(self, old: Obj, new: Obj) -> None:
        if no_execute_taints(old) != no_execute_taints(new):
            self._node_changed(new)

    # -- sync ------------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or is_being_deleted(pod) or not (pod.get("spec") or {}).get("nodeName"):
            self.scheduled.pop(key, None)
            return
        taints = no_execute_taints(self.nodes.get(pod["spec"]["nodeName"]))
        allowed = toleration_seconds(pod, taints) if taints else None
        if allowed is None:
            if self.scheduled.pop(key, None) is not None:
                namespace, name = split_key(key)
                self.event(pod, "Normal", "TaintManagerEviction", f"Cancelling deletion of Pod {namespace}/{name}")
            return
        now = self.clock.now()
        start = self.scheduled.setdefault(key, now)
        if now < start + allowed:
            self.enqueue_key_after(key, start + allowed - now)
            return
        await self._evict(key, pod, now)

    async def _evict(self, key: str, pod: Obj, now: float) -> None:
        meta = pod["metadata"]
        self.event(pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {key}")
        condition = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                     "message": "Taint manager: deleting due to NoExecute taint", "lastTransitionTime": rfc3339(now)}
        try:
            await self.client.patch_status("pods", meta["name"], {"status": {"conditions": [condition]}},
                                           meta.get("namespace"), content_type=STRATEGIC_MERGE_PATCH)
            await self.client.delete("pods", meta["name"], meta.get("namespace"), preconditions={"uid": meta["uid"]})
        except StatusError as exc:
            if exc.code not in (404, 409):
                raise
        self.scheduled.pop(key, None)
        self.log.info("evicted pod from tainted node", pod=key, node=pod["spec"].get("nodeName"))
