"""The DaemonSet controller (Kubernetes' daemon controller): one pod on every node that should run it.

A node should run the daemon when the template's nodeName, nodeSelector and required node affinity fit it and
its NoSchedule/NoExecute taints are tolerated, counting the tolerations Kubernetes adds to daemon pods (not-ready
and unreachable NoExecute, the pressure and unschedulable NoSchedule taints). A pod is made for one node by
replacing its required node affinity with a term that selects that node's name; the scheduler binds it.

A node that joins gets its pod; a pod whose node no longer should run it (or is gone) is deleted; failed daemon
pods are replaced. Updates follow spec.updateStrategy: RollingUpdate replaces old pods (by the
``controller-revision-hash`` label) within maxUnavailable, or surges new ones next to old ones within maxSurge;
OnDelete only gives new pods to nodes whose old pod was deleted.
"""

from __future__ import annotations

import asyncio
import copy
from collections import defaultdict

from minik.aio.backoff import KeyedBackoff
from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.selectors import LabelSelector, selector_from_dict
from minik.api.timestamps import parse_time
from minik.client import Client
from minik.controllers import daemonsetutil as dsu
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder, controller_ref, is_being_deleted
from minik.controllers.claims import claim, fresh_owner_check
from minik.controllers.expectations import Expectations
from minik.controllers.pods import is_available, is_ready, pod_from_template
from minik.controllers.replicaset import BURST_REPLICAS, slow_start
from minik.informers import object_key

FAILED_POD_BACKOFF = 1.0
FAILED_POD_MAX_BACKOFF = 900.0


def _created(pod: Obj) -> tuple[float, str]:
    meta = pod.get("metadata") or {}
    return parse_time(meta.get("creationTimestamp")) or 0.0, meta.get("name", "")


def _oldest_first(pods: list[Obj]) -> list[Obj]:
    """podByCreationTimestampAndPhase: running pods before pending ones, then the oldest first."""
    return sorted(pods, key=lambda p: ((p.get("status") or {}).get("phase") != "Running", _created(p)))


class DaemonSetController(Controller):
    name = "daemonset"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.expectations = Expectations()
        #: per (daemon set key, node): how long before a failed pod there is replaced again
        self.failed_backoff: KeyedBackoff[tuple[str, str]] = KeyedBackoff(FAILED_POD_BACKOFF, FAILED_POD_MAX_BACKOFF)
        self.daemonsets = factory.informer("daemonsets")
        self.pods = factory.informer("pods")
        self.nodes = factory.informer("nodes")
        self.daemonsets.add_handlers(self.enqueue, lambda old, new: self.enqueue(new), self._ds_deleted)
        self.pods.add_handlers(self._pod_added, self._pod_updated, self._pod_deleted)
        self.nodes.add_handlers(self._node_changed, self._node_updated, self._node_changed)

    # -- event handlers ----------------------------------------------------------------------------------------
    def _ds_deleted(self, ds: Obj) -> None:
        key = object_key(ds)
        self.expectations.forget(key)
        self.failed_backoff.reset_where(lambda entry: entry[0] == key)
        self.enqueue(ds)

    def _owner(self, pod: Obj) -> Obj | None:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "DaemonSet":
            return None
        ds = self.daemonsets.get(f"{pod['metadata'].get('namespace')}/{ref.get('name')}")
        return ds if ds is not None and ds["metadata"].get("uid") == ref.get("uid") else None

    def _matching(self, pod: Obj) -> list[Obj]:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        return [ds for ds in self.daemonsets.list(pod["metadata"].get("namespace"))
                if not _selector(ds).empty and _selector(ds).matches(labels)]

    def _pod_added(self, pod: Obj) -> None:
        owner = self._owner(pod)
        if owner is not None:
            self.expectations.creation_observed(object_key(owner))
            self.enqueue(owner)
        elif controller_ref(pod) is None:
            for ds in self._matching(pod):
                self.enqueue(ds)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        owner = self._owner(new)
        if owner is not None:
            self.enqueue(owner)
            min_ready = int((owner.get("spec") or {}).get("minReadySeconds") or 0)
            if min_ready > 0 and is_ready(new) and not is_ready(old):
                self.enqueue_after(owner, min_ready + 1)
            return
        previous = self._owner(old)
        if previous is not None:
            self.enqueue(previous)
        if controller_ref(new) is None:
            for ds in self._matching(new):
                self.enqueue(ds)

    def _pod_deleted(self, pod: Obj) -> None:
        owner = self._owner(pod)
        if owner is not None:
            self.expectations.deletion_observed(object_key(owner), pod["metadata"].get("uid", ""))
            self.enqueue(owner)

    def _node_changed(self, node: Obj) -> None:
        for ds in self.daemonsets.list():
            self.enqueue(ds)

    def _node_updated(self, old: Obj, new: Obj) -> None:
        """Only what decides placement matters: labels, taints, unschedulable (not heartbeats)."""
        if old.get("spec") != new.get("spec") or \
                (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels"):
            self._node_changed(new)

    # -- sync --------------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        ds = self.daemonsets.get(key)
        if ds is None:
            self.expectations.forget(key)
            return
        selector = _selector(ds)
        if selector.empty:
            self.event(ds, "Warning", "SelectingAll", "This daemon set is selecting all pods. A non-empty selector "
                                                     "is required.")
            return
        namespace = ds["metadata"].get("namespace")
        candidates = [p for p in self.pods.list(namespace)]
        pods = await claim(self.client, "pods", ds, selector, candidates,
                           fresh_owner_check(self.client, "daemonsets", ds))
        nodes = {n["metadata"]["name"]: n for n in self.nodes.list()}
        by_node: dict[str, list[Obj]] = defaultdict(list)
        for pod in pods:
            node = dsu.target_node(pod)
            phase = (pod.get("status") or {}).get("phase")
            if node is not None and not (is_being_deleted(pod) and phase in ("Succeeded", "Failed")):
                by_node[node].append(pod)  # a finished pod being deleted is the kubelet's business now
        hash_ = dsu.revision_hash(ds)
        error: Exception | None = None
        if not is_being_deleted(ds) and self.expectations.satisfied(key):
            try:
                await self._manage(key, ds, nodes, by_node, hash_)
                strategy = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type")
                if strategy == "RollingUpdate" and self.expectations.satisfied(key):
                    await self._rolling_update(key, ds, nodes, by_node, hash_)
            except Exception as exc:  # noqa: BLE001 - report status first, then retry
                error = exc
        await self._update_status(ds, nodes, by_node, hash_)
        if error is not None:
            raise error

    async def _manage(self, key: str, ds: Obj, nodes: dict[str, Obj], by_node: dict[str, list[Obj]],
                      hash_: str) -> None:
        """Create a pod on every node that should run one and has none; delete pods on nodes that should not
        run them (or no longer exist), failed pods, and the surplus of nodes with more than one."""
        surge, _ = dsu.surge_and_unavailable(ds, 1)  # AllowsSurge: any surge at all
        create_on: list[str] = []
        delete: list[Obj] = []
        for name, node in nodes.items():
            should_run, should_continue = dsu.should_run(ds, node)
            daemon_pods = [p for p in by_node.get(name, []) if not is_being_deleted(p)]
            if should_run and not by_node.get(name):  # a pod still stopping counts: no second one meanwhile
                create_on.append(name)
            elif should_continue:
                running = []
                for pod in daemon_pods:
                    phase = (pod.get("status") or {}).get("phase")
                    if phase == "Failed":
                        wait = self._failed_pod_backoff(key, name)
                        if wait > 0:  # the kubelet keeps failing it: do not replace it in a hot loop
                            self.enqueue_key_after(key, wait)
                            continue
                        self.event(ds, "Warning", "FailedDaemonPod",
                                   f"Found failed daemon pod {pod['metadata'].get('namespace')}/"
                                   f"{pod['metadata']['name']} on node {name}, will try to kill it")
                        delete.append(pod)
                    elif phase == "Succeeded":
                        delete.append(pod)
                    else:
                        running.append(pod)
                delete += self._surplus(ds, _oldest_first(running), hash_, surge > 0)
            else:
                delete += daemon_pods
        for name, node_pods in by_node.items():
            if name not in nodes:  # the node left: its pods go with it, at once (no kubelet will confirm)
                delete += [p for p in node_pods if not is_being_deleted(p) or
                           (p.get("metadata") or {}).get("deletionGracePeriodSeconds")]
        await self._sync_nodes(key, ds, delete, create_on, hash_, nodes)

    def _failed_pod_backoff(self, key: str, node: str) -> float:
        """Seconds before a failed pod on ``node`` may be replaced again: 1 s, doubling to 15 min while they keep
        failing (Kubernetes' failedPodsBackoff); 0 means now, and starts the next delay."""
        now = self.clock.now()
        wait = self.failed_backoff.remaining((key, node), now)
        if wait > 0:
            return wait
        self.failed_backoff.step((key, node), now)
        return 0.0

    def _surplus(self, ds: Obj, running: list[Obj], hash_: str, surging: bool) -> list[Obj]:
        """Of several pods on one node, those to delete: all but the oldest, or, while surging, all but the oldest
        new pod and (while that one is not yet available) the oldest old pod."""
        if len(running) <= 1:
            return []
        if not surging:
            return running[1:]
        newest: Obj | None = None
        oldest_old: Obj | None = None
        extra: list[Obj] = []
        for pod in running:
            if dsu.is_updated(pod, hash_) and newest is None:
                newest = pod
            elif not dsu.is_updated(pod, hash_) and oldest_old is None:
                oldest_old = pod
            else:
                extra.append(pod)
        if newest is not None and oldest_old is not None:
            min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
            if not is_ready(oldest_old) or is_available(newest, min_ready, self.clock.now()):
                extra.append(oldest_old)
        return extra

    async def _rolling_update(self, key: str, ds: Obj, nodes: dict[str, Obj], by_node: dict[str, list[Obj]],
                              hash_: str) -> None:
        desired = sum(1 for n in nodes.values() if dsu.should_run(ds, n)[0])
        surge, max_unavailable = dsu.surge_and_unavailable(ds, desired)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.clock.now()
        delete: list[Obj] = []
        create_on: list[str] = []
        if surge == 0:
            unavailable = 0
            replace: list[Obj] = []
            candidates: list[Obj] = []
            for name, node_pods in sorted(by_node.items()):
                if name not in nodes:
                    continue
                found = _new_and_old(node_pods, hash_)
                if found is None:
                    unavailable += 1  # the manage step cleans this node up
                    continue
                new, old = found
                if (new is None) == (old is None):
                    unavailable += 1
                elif new is not None:
                    if not is_available(new, min_ready, now):
                        unavailable += 1
                elif old is not None and not is_available(old, min_ready, now):
                    replace.append(old)
                elif old is not None and unavailable < max_unavailable:
                    candidates.append(old)
            room = max(0, min(max_unavailable - unavailable, len(candidates)))
            delete = replace + candidates[:room]
        else:
            surged = 0
            allowed: list[str] = []
            candidate_nodes: list[str] = []
            for name, node_pods in sorted(by_node.items()):
                if name not in nodes:
                    continue
                found = _new_and_old(node_pods, hash_)
                if found is None:
                    continue
                new, old = found
                if old is None:
                    continue
                if new is None:
                    if not is_available(old, min_ready, now):
                        allowed.append(name)
                    elif surged < surge:
                        candidate_nodes.append(name)
                elif not is_available(new, min_ready, now):
                    surged += 1
                else:
                    delete.append(old)
            room = max(0, min(surge - surged, len(candidate_nodes)))
            create_on = allowed + candidate_nodes[:room]
        if delete or create_on:
            await self._sync_nodes(key, ds, delete, create_on, hash_, nodes)
        if min_ready > 0:
            self.enqueue_after(ds, min_ready + 1)

    async def _sync_nodes(self, key: str, ds: Obj, delete: list[Obj], create_on: list[str], hash_: str,
                          nodes: dict[str, Obj]) -> None:
        create_on = create_on[:BURST_REPLICAS]
        delete = delete[:BURST_REPLICAS]
        if not create_on and not delete:
            return
        self.expectations.expect(key, len(create_on), [p["metadata"]["uid"] for p in delete])
        pending = iter(create_on)

        async def create_next() -> None:
            await self._create(ds, next(pending), hash_)

        created, error = await slow_start(len(create_on), create_next)
        if created < len(create_on):
            self.expectations.creation_failed(key, len(create_on) - created)
        results = await asyncio.gather(*(self._delete(key, ds, p, p["spec"].get("nodeName") not in nodes
                                                      and bool(p["spec"].get("nodeName"))) for p in delete),
                                       return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        if error is not None:
            raise error

    async def _create(self, ds: Obj, node_name: str, hash_: str) -> None:
        template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
        pod = pod_from_template(template, ds, extra_labels={dsu.REVISION_HASH_LABEL: hash_})
        spec = pod["spec"]
        spec["tolerations"] = dsu.daemon_tolerations(spec)
        spec["affinity"] = dsu.pin_to_node(spec.get("affinity"), node_name)
        try:
            created = await self.client.create("pods", pod, ds["metadata"].get("namespace"))
        except StatusError as exc:
            self.event(ds, "Warning", "FailedCreate", f"Error creating: {exc.message}")
            raise
        self.event(ds, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")

    async def _delete(self, key: str, ds: Obj, pod: Obj, force: bool) -> None:
        meta = pod["metadata"]
        try:
            await self.client.delete("pods", meta["name"], meta.get("namespace"), preconditions={"uid": meta["uid"]},
                                     grace_period_seconds=0 if force else None)
        except StatusError as exc:
            self.expectations.deletion_observed(key, meta["uid"])
            if exc.code == 404:
                return
            self.event(ds, "Warning", "FailedDelete", f"Error deleting: {exc.message}")
            raise
        self.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")

    # -- status ------------------------------------------------------------------------------------------------
    def status(self, ds: Obj, nodes: dict[str, Obj], by_node: dict[str, list[Obj]], hash_: str) -> Obj:
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.clock.now()
        desired = current = misscheduled = ready = available = updated = 0
        for name, node in nodes.items():
            should_run, _ = dsu.should_run(ds, node)
            daemon_pods = _oldest_first(by_node.get(name, []))
            if should_run:
                desired += 1
                if not daemon_pods:
                    continue
                current += 1
                pod = daemon_pods[0]
                if is_ready(pod):
                    ready += 1
                    if is_available(pod, min_ready, now):
                        available += 1
                if dsu.is_updated(pod, hash_):
                    updated += 1
            elif daemon_pods:
                misscheduled += 1
        status: Obj = {"currentNumberScheduled": current, "numberMisscheduled": misscheduled,
                       "desiredNumberScheduled": desired, "numberReady": ready}
        if ds["metadata"].get("generation") is not None:
            status["observedGeneration"] = ds["metadata"]["generation"]
        for field, value in (("updatedNumberScheduled", updated), ("numberAvailable", available),
                             ("numberUnavailable", desired - available)):
            if value:
                status[field] = value
        for field in ("collisionCount", "conditions"):
            if field in (ds.get("status") or {}):
                status[field] = ds["status"][field]
        return status

    async def _update_status(self, ds: Obj, nodes: dict[str, Obj], by_node: dict[str, list[Obj]],
                             hash_: str) -> None:
        status = self.status(ds, nodes, by_node, hash_)
        if status == (ds.get("status") or {}):
            return
        updated = copy.deepcopy(ds)
        updated["status"] = status
        try:
            await self.client.update_status("daemonsets", updated)
        except StatusError as exc:
            if exc.code == 404:
                return
            if exc.code != 409:
                raise
            fresh = await self.client.get("daemonsets", ds["metadata"]["name"], ds["metadata"].get("namespace"))
            fresh["status"] = status
            await self.client.update_status("daemonsets", fresh)


def _selector(ds: Obj) -> LabelSelector:
    try:
        return selector_from_dict((ds.get("spec") or {}).get("selector"))
    except ValueError:
        return LabelSelector.nothing()


def _new_and_old(pods: list[Obj], hash_: str) -> tuple[Obj | None, Obj | None] | None:
    """The one updated and the one old pod on a node (findUpdatedPodsOnNode); None when there are several of
    either (the manage step deletes the extras first)."""
    new: Obj | None = None
    old: Obj | None = None
    for pod in pods:
        if is_being_deleted(pod):
            continue
        if dsu.is_updated(pod, hash_):
            if new is not None:
                return None
            new = pod
        else:
            if old is not None:
                return None
            old = pod
    return new, old
