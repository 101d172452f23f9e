"""`minik node join` as a real subprocess for the kubelet tests: started against a test cluster, stopped with
SIGTERM, its containers removed afterwards."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiodocker

from minik.api import tokens
from minik.client import Client
from minik.cluster import Cluster
from minik.kubelet.runtimes.select import kubelet_id
from tests.kubelet.docker_helpers import remove_containers


def join_command(server: str, token: str | None, ca_hash: str | None, name: str, data_dir: Path,
                 *extra: str) -> list[str]:
    """`minik node join` as `minik up` prints it (without --token and --ca-hash when None: a restart)."""
    credentials = (["--token", token] if token else []) + (["--ca-hash", ca_hash] if ca_hash else [])
    return [sys.executable, "-m", "minik", "node", "join", "--server", server, *credentials, "--name", name,
            "--data-dir", str(data_dir), "--kubelet-port", "0", "--log-file", str(data_dir.parent / f"{name}.log"),
            *extra]


async def join_token(client: Client) -> str:
    """A join token, as `minik token create` makes it."""
    token = tokens.new_bootstrap_token()
    await client.create("secrets", tokens.bootstrap_secret(token, "node", datetime.timedelta(hours=1)),
                        tokens.NAMESPACE)
    return token


def ca_hash(cluster: Cluster) -> str:
    assert cluster.credentials is not None
    return cluster.credentials.ca.hash


async def start_join(command: list[str]) -> asyncio.subprocess.Process:
    """Start the node and wait for its "joined" line (AssertionError with its output if it exits first)."""
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE, env=dict(os.environ))
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    if b"joined the cluster" not in line:
        _, err = await process.communicate()
        raise AssertionError(f"minik node join did not start: {line!r} {err.decode()}")
    return process


async def stop_join(process: asyncio.subprocess.Process) -> int:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
    await asyncio.wait_for(process.communicate(), 30)
    return process.returncode or 0


@contextlib.asynccontextmanager
async def joined_node(server: str, token: str, ca_hash: str, name: str, data_dir: Path, *extra: str
                      ) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await start_join(join_command(server, token, ca_hash, name, data_dir, *extra))
    try:
        yield process
    finally:
        await stop_join(process)
        async with aiodocker.Docker() as docker:
            await remove_containers(docker, kubelet_id(data_dir / "kubelet"))
