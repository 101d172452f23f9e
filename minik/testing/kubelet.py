"""A stand-in for the kubelet, for tests and benchmarks that run without the node agent: it writes the status a
kubelet would (Running, Ready) through pods/status, as a real node agent does. Nothing else in minik uses it."""

from __future__ import annotations

import asyncio
from typing import Any

from minik.aio import start_task, stop_task
from minik.api.errors import StatusError
from minik.api.timestamps import now_rfc3339
from minik.client import Client

Obj = dict[str, Any]


def kubelet_status(pod: Obj, phase: str = "Running", ready: bool = True, exit_code: int | None = None) -> Obj:
    stamp = now_rfc3339()
    status: Obj = {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": stamp},
        {"type": "ContainersReady", "status": "True" if ready else "False", "lastTransitionTime": stamp}]}
    if exit_code is not None:
        status["containerStatuses"] = [{"name": c["name"], "ready": False, "restartCount": 0, "image": c["image"],
                                        "imageID": "", "state": {"terminated": {"exitCode": exit_code}}}
                                       for c in pod["spec"]["containers"]]
    return status


async def set_pod_phase(client: Client, pod: Obj, phase: str = "Running", ready: bool = True,
                        exit_code: int | None = None) -> Obj:
    """Write the status a kubelet would: the phase, and Ready True/False since now. A pod gone meanwhile is
    left alone."""
    meta = pod["metadata"]
    try:
        return await client.patch_status("pods", meta["name"], {"status": kubelet_status(pod, phase, ready, exit_code)},
                                         meta["namespace"])
    except StatusError as exc:
        if exc.code != 404:
            raise
        return pod


def _is_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


async def make_ready(client: Client, namespace: str | None = "default", selector: str | None = None,
                     concurrency: int = 32) -> int:
    """Mark every live pod that is not Ready (nor finished) Running and Ready; how many were changed."""
    items = (await client.list("pods", namespace, label_selector=selector))["items"]
    todo = [p for p in items if not p["metadata"].get("deletionTimestamp") and not _is_ready(p)
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    for start in range(0, len(todo), concurrency):
        await asyncio.gather(*(set_pod_phase(client, p) for p in todo[start:start + concurrency]))
    return len(todo)


class FakeKubelet:
    """Every pod in ``namespace`` (None: all) that is not Ready is made Running and Ready within ``interval``
    seconds; set ``paused`` to hold it back for a while."""

    def __init__(self, client: Client, namespace: str | None = "default", interval: float = 0.03) -> None:
        self.client = client
        self.namespace = namespace
        self.interval = interval
        self.paused = False
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> FakeKubelet:
        self._task = start_task(self._run(), name="fake kubelet")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await stop_task(self._task)

    async def _run(self) -> None:
        while True:
            if not self.paused:
                await make_ready(self.client, self.namespace)
            await asyncio.sleep(self.interval)
