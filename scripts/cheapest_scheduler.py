#!/usr/bin/env python3
"""A custom scheduler written against minik's client: it binds each pod that names it (spec.schedulerName:
cheapest-scheduler) to the cheapest node that fits, by the node label example.com/hourly-cost, and leaves every
other pod to the scheduler it names. It runs beside minik's default scheduler, as a second scheduler does beside
kube-scheduler.

"Fits" here is deliberately simple: the node is Ready and not cordoned, carries the cost label, and has the cpu,
memory and pod count the pod requests left, counting the pods already bound to it. Ties go to the node name.

    python scripts/cheapest_scheduler.py [--kubeconfig ~/.minik/minik/kubeconfig] [--context NAME]
                                         [--server URL [--token TOKEN]] [--name cheapest-scheduler]
                                         [--cost-label example.com/hourly-cost] [--log-level warning]

It finds the cluster as minik's own commands do: the local cluster's kubeconfig (HTTPS, the cluster's CA, the
admin token) unless --kubeconfig or --server says otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path
from typing import Any

from minik import kubeconfig
from minik.api.errors import StatusError
from minik.api.quantity import milli_value_of, value_of
from minik.client import Client, TransportError
from minik.events import NORMAL, WARNING, EventRecorder
from minik.informers import Informer, object_key
from minik.log import configure as configure_logs

Obj = dict[str, Any]
RETRY_SECONDS = 5.0


def requests_of(pod: Obj) -> tuple[int, int]:
    """The pod's cpu (millicores) and memory (bytes) requests, summed over its containers."""
    cpu = memory = 0
    for container in pod["spec"].get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu += milli_value_of(requests.get("cpu", 0))
        memory += value_of(requests.get("memory", 0))
    return cpu, memory


def ready(node: Obj) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class CheapestScheduler:
    def __init__(self, client: Client, name: str, cost_label: str) -> None:
        self.client = client
        self.name = name
        self.cost_label = cost_label
        self.nodes = Informer(client, "nodes")
        self.pods = Informer(client, "pods")
        self.recorder = EventRecorder(client, name)
        self.pending: asyncio.Queue[str] = asyncio.Queue()
        self.pods.add_handlers(self._maybe_enqueue, lambda old, new: self._maybe_enqueue(new))

    def _mine(self, pod: Obj) -> bool:
        spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
        return spec.get("schedulerName") == self.name and not spec.get("nodeName") and \
            not meta.get("deletionTimestamp") and (pod.get("status") or {}).get("phase") in (None, "Pending")

    def _maybe_enqueue(self, pod: Obj) -> None:
        if self._mine(pod):
            self.pending.put_nowait(object_key(pod))

    def cheapest_fit(self, pod: Obj) -> str | None:
        cpu, memory = requests_of(pod)
        used: dict[str, list[int]] = {}
        for other in self.pods.list():
            node = (other.get("spec") or {}).get("nodeName")
            if node and (other.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                c, m = requests_of(other)
                totals = used.setdefault(node, [0, 0, 0])
                totals[0], totals[1], totals[2] = totals[0] + c, totals[1] + m, totals[2] + 1
        candidates = []
        for node in self.nodes.list():
            meta, status = node["metadata"], node.get("status") or {}
            cost = (meta.get("labels") or {}).get(self.cost_label)
            if cost is None or not ready(node) or (node.get("spec") or {}).get("unschedulable"):
                continue
            allocatable = status.get("allocatable") or {}
            c, m, n = used.get(meta["name"], [0, 0, 0])
            if c + cpu <= milli_value_of(allocatable.get("cpu", 0)) and \
                    m + memory <= value_of(allocatable.get("memory", 0)) and \
                    n + 1 <= value_of(allocatable.get("pods", 0)):
                candidates.append((float(cost), meta["name"]))
        return min(candidates)[1] if candidates else None

    async def schedule(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or not self._mine(pod):
            return
        meta = pod["metadata"]
        node = self.cheapest_fit(pod)
        if node is None:
            self.recorder.event(pod | {"kind": "Pod", "apiVersion": "v1"}, WARNING, "FailedScheduling",
                                f"no node with the label {self.cost_label} has room for the pod")
            asyncio.get_running_loop().call_later(RETRY_SECONDS, self.pending.put_nowait, key)
            return
        try:
            await self.client.bind(meta["name"], node, meta["namespace"], uid=meta.get("uid"))
        except (StatusError, TransportError) as exc:
            print(f"bind of {key} to {node} failed: {exc}", flush=True)
            asyncio.get_running_loop().call_later(RETRY_SECONDS, self.pending.put_nowait, key)
            return
        await self._wait_seen_bound(key)
        self.recorder.event(pod | {"kind": "Pod", "apiVersion": "v1"}, NORMAL, "Scheduled",
                            f"Successfully assigned {key} to {node}")
        print(f"{key} -> {node}", flush=True)

    async def _wait_seen_bound(self, key: str, timeout: float = 5.0) -> None:
        """One pod at a time: wait until the informer shows the bind, so the next pod sees the node's usage."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            pod = self.pods.get(key)
            if pod is None or (pod.get("spec") or {}).get("nodeName"):
                return
            await asyncio.sleep(0.01)

    async def run(self, stop: asyncio.Event) -> None:
        await self.recorder.start()
        self.nodes.start()
        self.pods.start()
        try:
            await self.nodes.wait_for_sync()
            await self.pods.wait_for_sync()
            print(f"{self.name}: running", flush=True)
            while not stop.is_set():
                getter = asyncio.ensure_future(self.pending.get())
                stopper = asyncio.ensure_future(stop.wait())
                done, _ = await asyncio.wait({getter, stopper}, return_when=asyncio.FIRST_COMPLETED)
                for task in (getter, stopper):
                    if task not in done:
                        task.cancel()
                        await asyncio.gather(task, return_exceptions=True)
                if getter in done:
                    await self.schedule(getter.result())
        finally:
            await self.pods.stop()
            await self.nodes.stop()
            await self.recorder.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", type=Path, default=Path.home() / ".minik" / "minik" / "kubeconfig",
                        help="the kubeconfig to use (default: the local minik cluster's)")
    parser.add_argument("--context", default=None, help="the kubeconfig context (default: its current one)")
    parser.add_argument("--server", default=None, help="the API server's URL (instead of a kubeconfig)")
    parser.add_argument("--token", default=None, help="a bearer token to send with --server")
    parser.add_argument("--name", default="cheapest-scheduler", help="the spec.schedulerName this scheduler serves")
    parser.add_argument("--cost-label", default="example.com/hourly-cost", help="the node label holding a cost")
    parser.add_argument("--log-level", default="warning", help="minik's own logs (JSON lines on stderr)")
    args = parser.parse_args()
    configure_logs(args.log_level)
    if args.server:
        endpoint = kubeconfig.Endpoint(args.server, args.token)
    else:
        try:
            endpoint = kubeconfig.endpoint(args.kubeconfig, args.context)
        except (OSError, kubeconfig.KubeconfigError) as exc:
            parser.error(f"cannot use the kubeconfig {args.kubeconfig}: {exc}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with Client.http(endpoint.server, endpoint.token, ssl=endpoint.ssl_context()) as client:
        await CheapestScheduler(client, args.name, args.cost_label).run(stop)


if __name__ == "__main__":
    asyncio.run(main())
