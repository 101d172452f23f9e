"""Waiting for outcomes, and playing the kubelet's part: pods made Running and Ready through pods/status."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from minik.client import Client
from minik.testing.kubelet import FakeKubelet, make_ready, set_pod_phase  # noqa: F401 - re-exported

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


async def pods(client: Client, namespace: str = "default", selector: str | None = None) -> list[Obj]:
    items = (await client.list("pods", namespace, label_selector=selector))["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def pod_template(labels: dict[str, str], image: str = "nginx:1.27") -> Obj:
    return {"metadata": {"labels": labels},
            "spec": {"containers": [{"name": "app", "image": image}]}}

