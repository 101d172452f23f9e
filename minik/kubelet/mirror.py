"""The local node's mirror pods: one per in-process component (``minik.controlplane``), as a kubelet keeps one
mirror pod per static pod, so that ``kubectl get pods -n kube-system`` shows the control plane and its status.

A mirror pod is bound to the node, annotated ``kubernetes.io/config.mirror`` (with the hash of what it shows),
owned by the Node, and references no Secret, ConfigMap or service account: what NodeRestriction lets a node
create. The kubelet never runs one; it keeps it: created when missing, deleted (with no grace) and created again
when someone deletes it or what it shows changed, its status following the component's (Running; Ready while
it serves), and deleted when its component no longer runs here.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

import structlog

from minik import __version__
from minik.api.errors import StatusError
from minik.api.timestamps import now_rfc3339, rfc3339
from minik.client import Client, TransportError
from minik.controlplane import ControlPlane, StaticPod
from minik.kubelet.status import status_patch

log = structlog.get_logger("minik.kubelet.mirror")

Obj = dict[str, Any]

MIRROR = "kubernetes.io/config.mirror"
HASH = "kubernetes.io/config.hash"
SEEN = "kubernetes.io/config.seen"
SOURCE = "kubernetes.io/config.source"
NAMESPACE = "kube-system"
IMAGE = f"minik:{__version__}"

#: how often the pods are checked when nothing is heard; while a component is not ready yet, how soon again
RESYNC_SECONDS = 30.0
NOT_READY_RESYNC_SECONDS = 0.5

#: how long after someone deleted a mirror pod it is made again: kubectl delete waits for the pod to be gone with
#: a list then a watch of its name, and one made again within milliseconds may be in that list, which it would
#: then wait on for ever
RECREATE_AFTER_SECONDS = 1.0


def is_mirror(pod: Obj) -> bool:
    return MIRROR in ((pod.get("metadata") or {}).get("annotations") or {})


class MirrorPods:
    """The mirror pods of one node, kept from the pods its kubelet watches (``seen``/``gone``)."""

    def __init__(self, client: Client, plane: ControlPlane, node: str, address: str,
                 node_uid: Callable[[], str | None]) -> None:
        self.client = client
        self.plane = plane
        self.node = node
        self.address = address
        self.node_uid = node_uid
        self.pods: dict[str, Obj] = {}
        """pod name -> the mirror pod as last seen or written"""
        self._wake = asyncio.Event()
        self._unlisten = plane.listen(self._wake.set)
        self._hold: dict[str, float] = {}
        """pod name -> when it may be made again (after someone deleted it)"""

    # -- what the kubelet hears -------------------------------------------------------------------------------
    def seen(self, pod: Obj) -> None:
        self.pods[pod["metadata"]["name"]] = pod
        self._wake.set()

    def gone(self, pod: Obj) -> None:
        meta = pod.get("metadata") or {}
        current = self.pods.get(meta.get("name", ""))
        if current is not None and current["metadata"].get("uid") == meta.get("uid"):
            del self.pods[meta["name"]]  # deleted by someone else (at once: with no grace)
            self._hold[meta["name"]] = time.monotonic() + RECREATE_AFTER_SECONDS
        self._wake.set()

    def find(self, namespace: str, name: str) -> Obj | None:
        return self.pods.get(name) if namespace == NAMESPACE else None

    def static_pod(self, pod: Obj) -> StaticPod | None:
        """The component a mirror pod of this node shows (None when it is not one of ours)."""
        meta = pod.get("metadata") or {}
        if meta.get("namespace") != NAMESPACE:
            return None
        return self.plane.by_pod_name(str(meta.get("name", "")), self.node)

    # -- keeping them -----------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Keep the mirror pods until cancelled (the kubelet starts this once its node is registered and its pod
        cache synced)."""
        try:
            while True:
                self._wake.clear()
                try:
                    pending = await self.sync()
                except (StatusError, TransportError) as exc:
                    log.warning("mirror pods not synced; retrying", node=self.node, error=str(exc))
                    pending = True
                try:
                    async with asyncio.timeout(NOT_READY_RESYNC_SECONDS if pending else RESYNC_SECONDS):
                        await self._wake.wait()
                except TimeoutError:
                    pass
        finally:
            self._unlisten()

    async def sync(self) -> bool:
        """Bring every mirror pod in line with its component; whether one is not ready (or not there) yet."""
        pending = False
        wanted_names = set()
        for static in list(self.plane.pods.values()):
            name = f"{static.name}-{self.node}"
            wanted_names.add(name)
            if not static.present():
                pending = True
                continue
            pod = await self._ensure(name, static)
            if pod is not None:
                await self._update_status(pod, static)
            pending = pending or pod is None or not static.ready()
        for name, pod in list(self.pods.items()):
            if name not in wanted_names:  # its component does not run here (any more)
                await self._delete(pod, "its component does not run on this node")
        return pending

    async def _ensure(self, name: str, static: StaticPod) -> Obj | None:
        wanted = self.mirror_pod(name, static)
        current = self.pods.get(name)
        if current is not None:
            meta = current["metadata"]
            if meta.get("deletionTimestamp"):
                await self._delete(current, "it is being deleted")
                self._hold[name] = time.monotonic() + RECREATE_AFTER_SECONDS
                return None
            elif (meta.get("annotations") or {}).get(MIRROR) != wanted["metadata"]["annotations"][MIRROR]:
                await self._delete(current, "what it shows changed")
                current = None
        if current is not None:
            return current
        if not wanted["metadata"]["ownerReferences"][0]["uid"]:
            return None  # the node is not registered yet
        if time.monotonic() < self._hold.get(name, 0.0):
            return None
        self._hold.pop(name, None)
        try:
            created = await self.client.create("pods", wanted, NAMESPACE)
        except StatusError as exc:
            if exc.code == 409:
                return None  # the cache has not heard of the one there yet (or of its deletion): next sync
            raise
        log.info("mirror pod created", pod=f"{NAMESPACE}/{name}")
        self.pods[name] = created
        return created

    async def _delete(self, pod: Obj, why: str) -> None:
        meta = pod["metadata"]
        try:
            await self.client.delete("pods", meta["name"], NAMESPACE, grace_period_seconds=0,
                                     preconditions={"uid": meta["uid"]})
            log.info("mirror pod deleted", pod=f"{NAMESPACE}/{meta['name']}", reason=why)
        except StatusError as exc:
            if exc.code not in (404, 409):
                raise
        if self.pods.get(meta["name"]) is pod:
            del self.pods[meta["name"]]

    async def _update_status(self, pod: Obj, static: StaticPod) -> None:
        old = pod.get("status") or {}
        patch = status_patch(old, self.status(static, old))
        if patch is None:
            return
        try:
            updated = await self.client.patch_status("pods", pod["metadata"]["name"], {"status": patch}, NAMESPACE)
        except StatusError as exc:
            if exc.code in (404, 409):
                return  # deleted meanwhile: the next sync makes it again
            raise
        if self.pods.get(pod["metadata"]["name"]) is pod:
            self.pods[pod["metadata"]["name"]] = updated

    # -- what they hold ---------------------------------------------------------------------------------------
    def mirror_pod(self, name: str, static: StaticPod) -> Obj:
        container: Obj = {"name": static.name, "image": IMAGE, "imagePullPolicy": "IfNotPresent"}
        ports = list(static.ports())
        if ports:
            container["ports"] = ports
        spec: Obj = {"nodeName": self.node, "hostNetwork": True, "containers": [container],
                     "priorityClassName": "system-node-critical", "restartPolicy": "Always",
                     "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
                     "automountServiceAccountToken": False, "enableServiceLinks": False}
        digest = hashlib.sha256(json.dumps([static.labels, spec], sort_keys=True).encode()).hexdigest()[:32]
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": NAMESPACE, "labels": static.labels,
                             "annotations": {MIRROR: digest, HASH: digest, SOURCE: "minik",
                                             SEEN: rfc3339(static.started_at)},
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": self.node,
                                                  "uid": self.node_uid() or "", "controller": True}]},
                "spec": spec}

    def status(self, static: StaticPod, old: Obj) -> Obj:
        """The status of a component's pod: Running since it started, Ready while it serves."""
        ready = static.ready()
        started = rfc3339(static.started_at)
        container_id = f"minik://{static.component}-{static.run_id}"
        previous: Obj = next(iter(old.get("containerStatuses") or []), {})
        restarts = int(previous.get("restartCount") or 0)
        if previous.get("containerID") not in (None, container_id):
            restarts += 1  # minik restarted: so did the component
        now = now_rfc3339()
        conditions = []
        for kind, value in (("PodReadyToStartContainers", True), ("Initialized", True), ("Ready", ready),
                            ("ContainersReady", ready), ("PodScheduled", True)):
            text = "True" if value else "False"
            before = next((c for c in old.get("conditions") or [] if c.get("type") == kind), None)
            since = before.get("lastTransitionTime") if before and before.get("status") == text else now
            condition: Obj = {"type": kind, "status": text, "lastProbeTime": None, "lastTransitionTime": since}
            if not value:
                condition.update(reason="ContainersNotReady", message=f"containers with unready status: "
                                                                      f"[{static.name}]")
            conditions.append(condition)
        pod_ip = static.address() or self.address
        status: Obj = {
            "phase": "Running", "conditions": conditions, "hostIP": self.address, "hostIPs": [{"ip": self.address}],
            "podIP": pod_ip, "podIPs": [{"ip": pod_ip}], "startTime": old.get("startTime") or started,
            "containerStatuses": [{"name": static.name, "image": IMAGE, "imageID": "",
                                   "containerID": container_id, "ready": ready, "started": True,
                                   "restartCount": restarts, "state": {"running": {"startedAt": started}}}]}
        if old.get("qosClass"):
            status["qosClass"] = old["qosClass"]
        return status
