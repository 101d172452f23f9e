"""The node lifecycle controller (Kubernetes' nodelifecycle): it notices nodes that stop heart-beating and taints
them so that their pods are evicted (by the taint eviction controller) and recreated elsewhere.

- Health: a node is heard from when its kube-node-lease Lease is renewed or its status heartbeat changes, as
  this controller observes it (its own clock, so clock skew does not matter). A node not heard from for the grace
  period (50 s by default) gets Ready and the pressure conditions Unknown (NodeStatusUnknown, "Kubelet stopped
  posting node status."), a NodeNotReady event, and its pods' Ready condition False.
- NoExecute taints: Ready Unknown -> ``node.kubernetes.io/unreachable``, Ready False -> ``not-ready``. Adding them is
  rate-limited per zone (0.1 nodes/s; in a zone with at least 55 % of its nodes (and more than 2) unhealthy,
  0.01/s when it has more than 50 nodes, else none; when every node of every zone is down the controller assumes
  the trouble is its own and taints nothing). A node that is Ready again loses them at once.
- NoSchedule taints follow the conditions (not-ready, unreachable, memory/disk/PID pressure, network unavailable)
  and spec.unschedulable, so the scheduler keeps new pods off such nodes.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass

from minik.aio import start_task
from minik.aio.clock import Clock
from minik.api.errors import StatusError
from minik.api.placement import (
    TAINT_DISK_PRESSURE,
    TAINT_MEMORY_PRESSURE,
    TAINT_NETWORK_UNAVAILABLE,
    TAINT_NOT_READY,
    TAINT_PID_PRESSURE,
    TAINT_UNREACHABLE,
    TAINT_UNSCHEDULABLE,
    node_condition,
)
from minik.api.timestamps import parse_time, rfc3339
from minik.client import JSON_PATCH, STRATEGIC_MERGE_PATCH, Client
from minik.controllers.base import Controller, InformerFactory, Obj, Recorder
from minik.controllers.ratelimit import RateLimitedQueue, TokenBucket
from minik.informers import NODE_NAME_INDEX, by_node_name

LEASE_NAMESPACE = "kube-node-lease"
#: conditions the controller turns Unknown when the kubelet goes quiet
WATCHED_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
#: condition (type, status) -> the NoSchedule taint it brings
CONDITION_TAINTS = {("Ready", "False"): TAINT_NOT_READY, ("Ready", "Unknown"): TAINT_UNREACHABLE,
                    ("MemoryPressure", "True"): TAINT_MEMORY_PRESSURE, ("DiskPressure", "True"): TAINT_DISK_PRESSURE,
                    ("NetworkUnavailable", "True"): TAINT_NETWORK_UNAVAILABLE,
                    ("PIDPressure", "True"): TAINT_PID_PRESSURE}
NO_SCHEDULE_KEYS = set(CONDITION_TAINTS.values()) | {TAINT_UNSCHEDULABLE}
NORMAL, PARTIAL, FULL = "Normal", "PartialDisruption", "FullDisruption"
#: how often the rate-limited tainting queues are worked (Kubernetes' nodeEvictionPeriod)
TAINT_TICK_SECONDS = 0.1


@dataclass
class NodeHealth:
    """What the controller last saw of a node, and when it last heard from it (on its own clock)."""

    probe: float
    heartbeat: str | None
    renew: str | None


def zone_of(node: Obj) -> str:
    labels = (node.get("metadata") or {}).get("labels") or {}
    region = labels.get("topology.kubernetes.io/region", "")
    zone = labels.get("topology.kubernetes.io/zone", "")
    return f"{region}:\x00:{zone}" if region or zone else ""


def ready_status(node: Obj) -> str:
    condition = node_condition(node, "Ready")
    return str(condition.get("status")) if condition else "Unknown"


def taints_after(taints: list[Obj], add: list[Obj], remove: list[Obj], now: float) -> list[Obj]:
    """The node's taints with ``remove`` (by key and effect) gone and ``add`` in (stamped with timeAdded)."""
    drop = {(t["key"], t["effect"]) for t in add + remove}
    kept = [t for t in taints if (t.get("key"), t.get("effect")) not in drop]
    existing = {(t.get("key"), t.get("effect")): t for t in taints}
    added = [existing.get((t["key"], t["effect"])) or {**t, "timeAdded": rfc3339(now)} for t in add]
    return kept + added


class NodeLifecycleController(Controller):
    name = "node-lifecycle"

    def __init__(self, client: Client, factory: InformerFactory, workers: int = 2, clock: Clock | None = None,
                 recorder: Recorder | None = None, *, grace_period_seconds: float = 50.0,
                 monitor_period_seconds: float = 5.0, eviction_rate: float = 0.1,
                 secondary_eviction_rate: float = 0.01, unhealthy_zone_threshold: float = 0.55,
                 large_cluster_size_threshold: int = 50) -> None:
        super().__init__(client, factory, workers, clock, recorder)
        self.grace_period = grace_period_seconds
        self.monitor_period = monitor_period_seconds
        self.eviction_rate = eviction_rate
        self.secondary_eviction_rate = secondary_eviction_rate
        self.unhealthy_zone_threshold = unhealthy_zone_threshold
        self.large_cluster_size_threshold = large_cluster_size_threshold
        self.health: dict[str, NodeHealth] = {}
        self.zone_states: dict[str, str] = {}
        self.tainters: dict[str, RateLimitedQueue] = {}
        self.disrupted = False
        self.nodes = factory.informer("nodes")
        self.leases = factory.informer("leases")
        self.pods = factory.informer("pods")
        self.pods.add_indexers({NODE_NAME_INDEX: by_node_name})
        self.nodes.add_handlers(self._node_added, self._node_updated, self._node_deleted)

    # -- NoSchedule taints: a queue of node names ----------------------------------------------------------------
    def _node_added(self, node: Obj) -> None:
        self.queue.add(node["metadata"]["name"])

    def _node_updated(self, old: Obj, new: Obj) -> None:
        if old.get("spec") != new.get("spec") or _conditions(old) != _conditions(new):
            self.queue.add(new["metadata"]["name"])

    def _node_deleted(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        if self.health.pop(name, None) is not None:
            self.event(node, "Normal", "RemovingNode", f"Node {name} event: Removing Node {name} from Controller")
        for queue in self.tainters.values():
            queue.remove(name)

    async def sync(self, key: str) -> None:
        """doNoScheduleTaintingPass for one node."""
        node = self.nodes.get(key)
        if node is None:
            return
        wanted = {taint for (type_, status), taint in CONDITION_TAINTS.items()
                  if (node_condition(node, type_) or {}).get("status") == status}
        if (node.get("spec") or {}).get("unschedulable"):
            wanted.add(TAINT_UNSCHEDULABLE)
        present = {str(t.get("key")) for t in _taints(node) if t.get("effect") == "NoSchedule" and
                   t.get("key") in NO_SCHEDULE_KEYS}
        add = [{"key": k, "effect": "NoSchedule"} for k in sorted(wanted - present)]
        remove = [{"key": k, "effect": "NoSchedule"} for k in sorted(present - wanted)]
        if add or remove:
            await self.swap_taints(node, add, remove)

    # -- the monitor -----------------------------------------------------------------------------------------
    async def start(self) -> None:
        await super().start()
        self._tasks.append(start_task(self._monitor(), name=f"{self.name} monitor"))

    async def _monitor(self) -> None:
        next_check = 0.0
        loop = asyncio.get_running_loop()
        while True:
            if loop.time() >= next_check:
                next_check = loop.time() + self.monitor_period
                try:
                    await self.monitor_once()
                except Exception as exc:  # noqa: BLE001 - the next period tries again
                    self.log.warning("node health check failed", error=f"{type(exc).__name__}: {exc}")
            try:
                await self.taint_pass()
            except Exception as exc:  # noqa: BLE001 - the queue keeps the node; the next tick tries again
                self.log.warning("tainting failed", error=f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(TAINT_TICK_SECONDS)

    async def monitor_once(self) -> None:
        """monitorNodeHealth: update every node's health, the zones' states, and what waits to be tainted."""
        now = self.clock.now()
        nodes = {n["metadata"]["name"]: n for n in self.nodes.list()}
        for name, node in nodes.items():
            nodes[name] = await self._check_health(node, now)
        by_zone: dict[str, list[Obj]] = {}
        for node in nodes.values():
            by_zone.setdefault(zone_of(node), []).append(node)
        self._handle_disruption(by_zone, now)
        if self.disrupted:
            return
        for name, node in nodes.items():
            tainter = self._tainter(zone_of(node))
            status = ready_status(node)
            if status == "True":
                tainter.remove(name)
                if any(t.get("key") in (TAINT_UNREACHABLE, TAINT_NOT_READY) and t.get("effect") == "NoExecute"
                       for t in _taints(node)):
                    await self._mark_reachable(node)
            elif not _has_taint(node, TAINT_UNREACHABLE if status == "Unknown" else TAINT_NOT_READY, "NoExecute"):
                tainter.add(name)

    async def _check_health(self, node: Obj, now: float) -> Obj:
        """tryUpdateNodeHealth: the node as it is after this check (its conditions Unknown if it went quiet)."""
        name = node["metadata"]["name"]
        ready = node_condition(node, "Ready")
        heartbeat = (ready or {}).get("lastHeartbeatTime")
        lease = self.leases.get(f"{LEASE_NAMESPACE}/{name}")
        renew = ((lease or {}).get("spec") or {}).get("renewTime")
        health = self.health.get(name)
        if health is None:
            self.health[name] = NodeHealth(now, heartbeat, renew)
            self.event(node, "Normal", "RegisteredNode", f"Node {name} event: Registered Node {name} in Controller")
            return node
        if heartbeat != health.heartbeat:
            health.heartbeat, health.probe = heartbeat, now
        if renew and renew != health.renew and (health.renew is None or
                                                (parse_time(renew) or 0) >= (parse_time(health.renew) or 0)):
            health.renew, health.probe = renew, now
        if now <= health.probe + self.grace_period:
            return node
        updated = copy.deepcopy(node)
        if not _mark_unknown(updated, now):
            return node
        was_ready = (ready or {}).get("status") == "True"
        try:
            updated = await self.client.update_status("nodes", updated)
        except StatusError as exc:
            if exc.code in (404, 409):
                return node  # gone, or it just reported: the next period decides
            raise
        self.log.info("node stopped posting status", node=name, seconds=round(now - health.probe, 1))
        if was_ready:
            self.event(node, "Normal", "NodeNotReady", f"Node {name} status is now: NodeNotReady")
            await self._mark_pods_not_ready(name, now)
        return updated

    async def _mark_pods_not_ready(self, node_name: str, now: float) -> None:
        for pod in self.pods.by_index(NODE_NAME_INDEX, node_name):
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            ready = next((c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"),
                         None)
            if ready is None or ready.get("status") == "False":
                continue
            meta = pod["metadata"]
            patch = {"status": {"conditions": [{"type": "Ready", "status": "False",
                                                "lastTransitionTime": rfc3339(now)}]}}
            try:
                await self.client.patch_status("pods", meta["name"], patch, meta.get("namespace"),
                                               content_type=STRATEGIC_MERGE_PATCH)
            except StatusError as exc:
                if exc.code != 404:
                    raise
                continue
            self.event(pod, "Warning", "NodeNotReady", "Node is not ready")

    # -- zones and the rate-limited NoExecute taints -------------------------------------------------------------
    def _tainter(self, zone: str) -> RateLimitedQueue:
        tainter = self.tainters.get(zone)
        if tainter is None:
            tainter = self.tainters[zone] = RateLimitedQueue(TokenBucket(self.eviction_rate, self.clock))
        return tainter

    def zone_state(self, nodes: list[Obj]) -> str:
        ready = sum(1 for n in nodes if ready_status(n) == "True")
        not_ready = len(nodes) - ready
        if ready == 0 and not_ready > 0:
            return FULL
        if not_ready > 2 and not_ready / len(nodes) >= self.unhealthy_zone_threshold:
            return PARTIAL
        return NORMAL

    def _handle_disruption(self, by_zone: dict[str, list[Obj]], now: float) -> None:
        states = {zone: self.zone_state(nodes) for zone, nodes in by_zone.items()}
        all_down = bool(states) and all(s == FULL for s in states.values())
        if all_down and not self.disrupted:
            self.log.warning("every node is not ready: assuming the trouble is ours and tainting no node")
            self.disrupted = True
            for tainter in self.tainters.values():
                tainter.bucket.set_rate(0)
        elif not all_down and self.disrupted:
            self.log.info("some nodes are ready again: leaving the all-nodes-down mode")
            self.disrupted = False
            for health in self.health.values():
                health.probe = now  # give every node a fresh grace period
        if self.disrupted:
            for zone in by_zone:
                for node in by_zone[zone]:
                    self._tainter(zone).remove(node["metadata"]["name"])
            return
        for zone, state in states.items():
            size = len(by_zone[zone])
            if state == PARTIAL:
                rate = self.secondary_eviction_rate if size > self.large_cluster_size_threshold else 0.0
            else:
                rate = self.eviction_rate
            self._tainter(zone).bucket.set_rate(rate)
            if self.zone_states.get(zone) != state:
                self.log.info("zone state changed", zone=zone or "(none)", state=state)
            self.zone_states[zone] = state

    async def taint_pass(self) -> None:
        """doNoExecuteTaintingPass: the nodes each zone's rate lets through get their NoExecute taint."""
        for tainter in list(self.tainters.values()):
            if not len(tainter):
                continue
            for name in tainter.take():
                node = self.nodes.get(name)
                if node is None:
                    continue
                status = ready_status(node)
                if status == "True":
                    continue
                unreachable = {"key": TAINT_UNREACHABLE, "effect": "NoExecute"}
                not_ready = {"key": TAINT_NOT_READY, "effect": "NoExecute"}
                add, remove = ([unreachable], [not_ready]) if status == "Unknown" else ([not_ready], [unreachable])
                if not await self.swap_taints(node, add, remove):
                    tainter.add(name)  # try again on a later tick

    async def _mark_reachable(self, node: Obj) -> None:
        await self.swap_taints(node, [], [{"key": TAINT_UNREACHABLE, "effect": "NoExecute"},
                                          {"key": TAINT_NOT_READY, "effect": "NoExecute"}])

    async def swap_taints(self, node: Obj, add: list[Obj], remove: list[Obj]) -> bool:
        """Write the node's taints with ``add`` in and ``remove`` out, guarded by its resourceVersion; False when
        it changed meanwhile (the caller tries again with the newer node)."""
        taints = _taints(node)
        new = taints_after(taints, add, remove, self.clock.now())
        if new == taints:
            return True
        meta = node["metadata"]
        ops: list[Obj] = [{"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]}]
        if "spec" not in node:
            ops.append({"op": "add", "path": "/spec", "value": {}})
        ops.append({"op": "add", "path": "/spec/taints", "value": new} if new else
                   {"op": "remove", "path": "/spec/taints"})
        try:
            await self.client.patch("nodes", meta["name"], ops, content_type=JSON_PATCH)
        except StatusError as exc:
            if exc.code in (404, 409, 422):
                return False
            raise
        before = {(t.get("key"), t.get("effect")) for t in taints}
        after = {(t.get("key"), t.get("effect")) for t in new}
        self.log.info("node taints changed", node=meta["name"], added=sorted(f"{k}:{e}" for k, e in after - before),
                      removed=sorted(f"{k}:{e}" for k, e in before - after))
        return True


def _conditions(node: Obj) -> list[tuple[object, object]]:
    return [(c.get("type"), c.get("status")) for c in (node.get("status") or {}).get("conditions") or []]


def _taints(node: Obj) -> list[Obj]:
    return list((node.get("spec") or {}).get("taints") or [])


def _has_taint(node: Obj, key: str, effect: str) -> bool:
    return any(t.get("key") == key and t.get("effect") == effect for t in _taints(node))


def _mark_unknown(node: Obj, now: float) -> bool:
    """Turn the watched conditions Unknown (adding those never posted); True when anything changed."""
    status = node.setdefault("status", {})
    conditions = status.setdefault("conditions", [])
    by_type = {c.get("type"): c for c in conditions}
    stamp = rfc3339(now)
    changed = False
    for type_ in WATCHED_CONDITIONS:
        condition = by_type.get(type_)
        if condition is None:
            conditions.append({"type": type_, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                               "message": "Kubelet never posted node status.",
                               "lastHeartbeatTime": node["metadata"].get("creationTimestamp"),
                               "lastTransitionTime": stamp})
            changed = True
        elif condition.get("status") != "Unknown":
            condition.update({"status": "Unknown", "reason": "NodeStatusUnknown",
                              "message": "Kubelet stopped posting node status.", "lastTransitionTime": stamp})
            changed = True
    return changed
