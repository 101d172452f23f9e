"""The pod garbage collector (Kubernetes' PodGC): a periodic pass (every 20 s) over the pods in the cache that
removes the pods nobody else will:

- orphans: pods bound to a node that no longer exists. A node missing from the cache is quarantined for 40 s and
  then confirmed missing with a GET (the cache may simply lag); its pods are marked Failed with the condition
  DisruptionTarget (DeletionByPodGC) and deleted at once (grace 0), since no kubelet is left to confirm;
- unscheduled pods being deleted (no node was ever bound to finish their grace period): deleted at once;
- terminating pods on a node that is not Ready and carries the node.kubernetes.io/out-of-service taint;
- terminated pods (Succeeded or Failed) beyond --terminated-pod-gc-threshold (12,500): the oldest go first.
"""

from __future__ import annotations

from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.timestamps import rfc3339
from minik.client import STRATEGIC_MERGE_PATCH, Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, is_being_deleted
from minik.informers import object_key

GC_PERIOD_SECONDS = 20.0
QUARANTINE_SECONDS = 40.0
DEFAULT_TERMINATED_THRESHOLD = 12_500
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
PASS = "pod-gc"  # the one key of the queue: a pass over every pod


def node_name(pod: Obj) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def phase(pod: Obj) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def is_terminated(pod: Obj) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


def is_ready(node: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


def is_out_of_service(node: Obj) -> bool:
    return any(t.get("key") == OUT_OF_SERVICE and t.get("effect") in ("NoExecute", "NoSchedule")
               for t in (node.get("spec") or {}).get("taints") or [])


class PodGCController(Controller):
    name = "pod-garbage-collector"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 1, clock: Clock | None = None,
                 recorder: Recorder | None = None, *, terminated_threshold: int = DEFAULT_TERMINATED_THRESHOLD,
                 period_seconds: float = GC_PERIOD_SECONDS, quarantine_seconds: float = QUARANTINE_SECONDS) -> None:
        super().__init__(client, factory, 1, clock, recorder)  # one pass at a time
        self.terminated_threshold = terminated_threshold
        self.period_seconds = period_seconds
        self.quarantine_seconds = quarantine_seconds
        self.pods = factory.informer("pods")
        self.nodes = factory.informer("nodes")
        #: node name -> when the cache was first seen without it while pods were bound to it
        self.missing_since: dict[str, float] = {}

    async def start(self) -> None:
        await super().start()
        self.queue.add(PASS)

    async def sync(self, key: str) -> None:
        try:
            await self.collect()
        finally:
            self.enqueue_key_after(PASS, self.period_seconds)

    async def collect(self) -> None:
        """One pass: terminated pods over the threshold, out-of-service nodes, orphans, unscheduled deletions."""
        pods = self.pods.list()
        await self._terminated_over_threshold(pods)
        await self._terminating_out_of_service(pods)
        await self._orphaned(pods)
        for pod in pods:
            if is_being_deleted(pod) and not node_name(pod):
                await self._force_delete(pod, "unscheduled pod being deleted")

    async def _terminated_over_threshold(self, pods: list[Obj]) -> None:
        if self.terminated_threshold <= 0:
            return
        terminated = [p for p in pods if is_terminated(p) and not is_being_deleted(p)]
        excess = len(terminated) - self.terminated_threshold
        if excess <= 0:
            return
        terminated.sort(key=lambda p: (p["metadata"].get("creationTimestamp") or "", object_key(p)))
        self.log.info("deleting terminated pods over the threshold", count=excess,
                      threshold=self.terminated_threshold)
        for pod in terminated[:excess]:
            await self._force_delete(pod, "terminated pods over the threshold")

    async def _terminating_out_of_service(self, pods: list[Obj]) -> None:
        for pod in pods:
            if not is_being_deleted(pod) or not node_name(pod):
                continue
            node = self.nodes.get(node_name(pod))
            if node is not None and not is_ready(node) and is_out_of_service(node):
                await self._fail_and_delete(pod, None, "terminating pod on an out-of-service node")

    async def _orphaned(self, pods: list[Obj]) -> None:
        now = self.clock.now()
        bound = {node_name(p) for p in pods if node_name(p)}
        absent = {name for name in bound if self.nodes.get(name) is None}
        for name in set(self.missing_since) - absent:
            del self.missing_since[name]
        gone: set[str] = set()
        for name in absent:
            first = self.missing_since.setdefault(name, now)
            if now - first >= self.quarantine_seconds and await self._confirmed_missing(name):
                gone.add(name)
        for pod in pods:
            if node_name(pod) in gone:
                condition = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                             "message": "PodGC: node no longer exists", "lastTransitionTime": rfc3339(now)}
                await self._fail_and_delete(pod, condition, "orphaned pod")
        for name in gone:
            self.missing_since.pop(name, None)

    async def _confirmed_missing(self, name: str) -> bool:
        try:
            await self.client.get("nodes", name)
        except StatusError as exc:
            if exc.code == 404:
                return True
            raise
        return False

    async def _fail_and_delete(self, pod: Obj, condition: Obj | None, why: str) -> None:
        """Mark the pod Failed (when it has not ended) with ``condition``, then delete it at once."""
        meta = pod["metadata"]
        status: Obj = {}
        if not is_terminated(pod):
            status["phase"] = "Failed"
        if condition is not None:
            status["conditions"] = [condition]
        if status:
            try:
                await self.client.patch_status("pods", meta["name"], {"status": status}, meta.get("namespace"),
                                               content_type=STRATEGIC_MERGE_PATCH)
            except StatusError as exc:
                if exc.code == 404:
                    return
                raise
        await self._force_delete(pod, why)

    async def _force_delete(self, pod: Obj, why: str) -> None:
        meta = pod["metadata"]
        try:
            await self.client.delete("pods", meta["name"], meta.get("namespace"), grace_period_seconds=0,
                                     preconditions={"uid": meta["uid"]})
        except StatusError as exc:
            if exc.code not in (404, 409):  # gone already, or a new pod of that name
                raise
            return
        self.log.info("deleted pod", pod=object_key(pod), node=node_name(pod) or None, reason=why)
