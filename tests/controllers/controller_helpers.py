"""Waiting for outcomes, and playing the kubelet's part: pods made Running and Ready through pods/status."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import Any, TypeVar

from minik.api.errors import StatusError
from minik.client import Client

T = TypeVar("T")
Obj = dict[str, Any]


async def eventually(check: Callable[[], Awaitable[T]], timeout: float = 10.0, interval: float = 0.05) -> T:
    """Call ``check`` until it returns a truthy value (and return it) or raises nothing; fail after ``timeout``
    with the last AssertionError or falsy value."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            result = await check()
            if result:
                return result
            last = result
        except AssertionError as exc:
            last = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout}s: {last!r}")
        await asyncio.sleep(interval)


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


async def pods(client: Client, namespace: str = "default", selector: str | None = None) -> list[Obj]:
    items = (await client.list("pods", namespace, label_selector=selector))["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


async def set_pod_phase(client: Client, pod: Obj, phase: str = "Running", ready: bool = True,
                        exit_code: int | None = None) -> Obj:
    """Write the status a kubelet would: the phase, and Ready True/False since now."""
    stamp = now_rfc3339()
    status: Obj = {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": stamp},
        {"type": "ContainersReady", "status": "True" if ready else "False", "lastTransitionTime": stamp}]}
    if exit_code is not None:
        status["containerStatuses"] = [{"name": c["name"], "ready": False, "restartCount": 0, "image": c["image"],
                                        "imageID": "", "state": {"terminated": {"exitCode": exit_code}}}
                                       for c in pod["spec"]["containers"]]
    meta = pod["metadata"]
    try:
        return await client.patch_status("pods", meta["name"], {"status": status}, meta["namespace"])
    except StatusError as exc:
        if exc.code != 404:
            raise
        return pod


async def make_ready(client: Client, namespace: str = "default", selector: str | None = None) -> int:
    """Mark every not-yet-ready pod Running and Ready; how many were changed."""
    changed = 0
    for pod in await pods(client, namespace, selector):
        conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions") or []}
        if conditions.get("Ready") != "True":
            await set_pod_phase(client, pod)
            changed += 1
    return changed


def pod_template(labels: dict[str, str], image: str = "nginx:1.27") -> Obj:
    return {"metadata": {"labels": labels},
            "spec": {"containers": [{"name": "app", "image": image}]}}
