"""Shared by the kubelet tests: pod manifests and waiting for what the API shows."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from minik.api.errors import StatusError
from minik.client import Client

Obj = dict[str, Any]


def pod_manifest(name: str, *, node: str | None = None, containers: list[Obj] | None = None,
                 restart_policy: str = "Always", annotations: dict[str, str] | None = None, **spec: Any) -> Obj:
    pod: Obj = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
                "spec": {"containers": containers or [{"name": "app", "image": "busybox:latest",
                                                       "imagePullPolicy": "IfNotPresent"}],
                         "restartPolicy": restart_policy, **spec}}
    if node:
        pod["spec"]["nodeName"] = node
    return pod


async def wait_for_pod(client: Client, name: str, check: Callable[[Obj], bool], timeout: float = 15.0,
                       namespace: str = "default") -> Obj:
    """Poll the pod until ``check`` holds; AssertionError with its last status otherwise."""
    deadline = time.monotonic() + timeout
    pod: Obj = {}
    while time.monotonic() < deadline:
        try:
            pod = await client.get("pods", name, namespace)
            if check(pod):
                return pod
        except StatusError as exc:
            if exc.code != 404:
                raise
        await asyncio.sleep(0.05)
    raise AssertionError(f"pod {name} did not get there in {timeout}s; last status: {pod.get('status')}")


async def wait_gone(client: Client, resource: str, name: str, namespace: str | None = "default",
                    timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            await client.get(resource, name, namespace)
        except StatusError as exc:
            if exc.code == 404:
                return
            raise
        await asyncio.sleep(0.05)
    raise AssertionError(f"{resource} {name} still exists after {timeout}s")


def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def container_state(pod: Obj, name: str = "app") -> Obj:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == name:
            return status
    return {}


def condition(pod_or_node: Obj, type_: str) -> str:
    for c in (pod_or_node.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return str(c.get("status"))
    return ""
