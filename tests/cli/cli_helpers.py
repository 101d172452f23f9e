"""Helpers for the CLI tests (fixtures are in conftest.py).

The cluster serves from the test's event loop, and a CLI command runs its own loop (asyncio.run), so commands
run through click's CliRunner in a worker thread: the test awaits the thread while its loop keeps serving.
Commands that must be interrupted (get -w) or that start clusters run as real subprocesses.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from minik.cli import cli
from minik.kubeconfig import endpoint as kubeconfig_endpoint

Invoke = Callable[..., Coroutine[Any, Any, Result]]


async def invoke_cli(args: list[str], input: str | None = None) -> Result:
    result = await asyncio.to_thread(CliRunner().invoke, cli, args, input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a bug, not a user error: show its traceback
    return result


def minik_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "minik", *args]


def subprocess_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update(HOME=str(home), **extra)
    return env


def run_minik(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A `minik` command as a process of its own, with ``home`` as its HOME (and no $KUBECONFIG unless given)."""
    return subprocess.run(minik_command(*args), env=subprocess_env(home, **env), capture_output=True, text=True,
                          timeout=60)


def api_request(method: str, url: str, config: Path, body: dict | None = None) -> dict:
    """A request with the credentials and the CA of the kubeconfig `minik up` wrote (HTTPS, admin token)."""
    endpoint = kubeconfig_endpoint(config)
    context = endpoint.ssl_context()
    assert isinstance(context, ssl.SSLContext)
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {endpoint.token}"})
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return json.loads(response.read())


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, what: str = "the condition") -> Any:
    """Poll ``condition`` until it returns something true (which is returned), or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"{what} did not hold within {timeout:g}s"
        time.sleep(0.05)
    return value


async def kubectl(tmp_path: Path, *args: str, kubeconfig: Path | None = None, server: str | None = None
                  ) -> tuple[int, str, str]:
    """Run the real kubectl without blocking the event loop (the cluster serves from it), with a fresh cache."""
    target = ["--kubeconfig", str(kubeconfig)] if kubeconfig else ["--kubeconfig", os.devnull, "-s", str(server)]
    process = await asyncio.create_subprocess_exec(
        "kubectl", *target, "--cache-dir", str(tmp_path / "kubectl-cache"), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode or 0, out.decode(), err.decode()
