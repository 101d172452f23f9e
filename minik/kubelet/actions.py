"""What probes and lifecycle hooks run: exec (a command in the container), httpGet, tcpSocket, grpc (probes
only, grpcprobe.py) and sleep (hooks only), each bounded by a timeout and reported as Kubernetes words the
outcome, so that the Unhealthy and FailedPreStopHook events read as they do there."""

from __future__ import annotations

import asyncio
import os
import shlex
from dataclasses import dataclass
from typing import Any

import aiohttp

from minik.kubelet.grpcprobe import grpc_check
from minik.kubelet.runtimes.base import Runtime, RuntimeFailure, exec_sync

Obj = dict[str, Any]

USER_AGENT = "kube-probe/1.32"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    message: str = ""


@dataclass(frozen=True)
class Target:
    """Where an action runs: the container (for exec) and the pod's address (for httpGet and tcpSocket)."""

    runtime: Runtime
    container_id: str
    container: Obj
    pod_ip: str


def resolve_port(port: Any, container: Obj) -> int | None:
    """A port number, or a named port of the container (None when neither)."""
    if isinstance(port, int) and not isinstance(port, bool):
        return port
    text = str(port)
    if text.isdigit():
        return int(text)
    for item in container.get("ports") or []:
        if item.get("name") == text and item.get("containerPort"):
            return int(item["containerPort"])
    return None


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


async def _exec(target: Target, action: Obj, timeout: float) -> Outcome:
    command = [str(part) for part in action.get("command") or []]
    try:
        code, output = await exec_sync(target.runtime, target.container_id, command, timeout)
    except TimeoutError:
        return Outcome(False, f"command {shlex.join(command)!r} timed out")
    except RuntimeFailure as exc:
        return Outcome(False, exc.message)
    text = output.decode("utf-8", "replace")
    return Outcome(code == 0, text if code == 0 or text else f"command {shlex.join(command)!r} exited with {code}")


async def _http_get(target: Target, action: Obj, timeout: float, session: aiohttp.ClientSession) -> Outcome:
    port = resolve_port(action.get("port"), target.container)
    host = action.get("host") or target.pod_ip
    scheme = str(action.get("scheme") or "HTTP").lower()
    path = str(action.get("path") or "/")
    url = f"{scheme}://{_host(host)}:{port}{path if path.startswith('/') else '/' + path}"
    if port is None:
        return Outcome(False, f"unknown port {action.get('port')!r}")
    headers = {"User-Agent": USER_AGENT, "Accept": "*/*"}
    headers.update({h.get("name", ""): h.get("value", "") for h in action.get("httpHeaders") or [] if h.get("name")})
    try:
        async with session.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout),
                               ssl=False, allow_redirects=True) as response:
            await response.content.read(10 * 1024)
            if 200 <= response.status < 400:
                return Outcome(True)
            return Outcome(False, f"HTTP probe failed with statuscode: {response.status}")
    except TimeoutError:
        return Outcome(False, f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting '
                              "headers)")
    except aiohttp.ClientConnectorError as exc:
        return Outcome(False, f'Get "{url}": dial tcp {_host(host)}:{port}: connect: '
                              f"{_reason(exc.os_error)}")
    except aiohttp.ClientError as exc:
        return Outcome(False, f'Get "{url}": {exc}')


def _reason(exc: OSError) -> str:
    """The failure as Go words it: "connection refused", "no route to host"..."""
    if exc.errno:
        return os.strerror(exc.errno).lower()
    return (exc.strerror or str(exc) or type(exc).__name__).lower()


async def _tcp(target: Target, action: Obj, timeout: float) -> Outcome:
    port = resolve_port(action.get("port"), target.container)
    host = action.get("host") or target.pod_ip
    if port is None:
        return Outcome(False, f"unknown port {action.get('port')!r}")
    where = f"{_host(host)}:{port}"
    try:
        async with asyncio.timeout(timeout):
            _, writer = await asyncio.open_connection(host, port)
    except TimeoutError:
        return Outcome(False, f"dial tcp {where}: i/o timeout")
    except OSError as exc:
        return Outcome(False, f"dial tcp {where}: connect: {_reason(exc)}")
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass
    return Outcome(True)


async def _grpc(target: Target, action: Obj, timeout: float) -> Outcome:
    port = resolve_port(action.get("port"), target.container)
    if port is None:
        return Outcome(False, f"unknown port {action.get('port')!r}")
    ok, message = await grpc_check(target.pod_ip, port, str(action.get("service") or ""), timeout)
    return Outcome(ok, "" if ok else message)


async def run_action(target: Target, handler: Obj, timeout: float, session: aiohttp.ClientSession) -> Outcome:
    """Run one probe or hook handler (the object holding exec, httpGet, tcpSocket, grpc or sleep)."""
    if handler.get("exec") is not None:
        return await _exec(target, handler["exec"], timeout)
    if handler.get("httpGet") is not None:
        return await _http_get(target, handler["httpGet"], timeout, session)
    if handler.get("tcpSocket") is not None:
        return await _tcp(target, handler["tcpSocket"], timeout)
    if handler.get("sleep") is not None:
        seconds = float((handler["sleep"] or {}).get("seconds") or 0)
        await asyncio.sleep(min(seconds, timeout))
        return Outcome(True)
    if handler.get("grpc") is not None:
        return await _grpc(target, handler["grpc"], timeout)
    return Outcome(False, "missing probe handler")
