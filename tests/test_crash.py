"""kill -9 of `minik up` during a write load loses no acknowledged write, and the revision never goes back."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import aiohttp
import pytest

from minik import kubeconfig


async def start_minik(data_dir: Path) -> asyncio.subprocess.Process:
    """`minik up` on ``data_dir``, once it is ready (its admin kubeconfig written)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "minik", "up", "--data-dir", str(data_dir), "--port", "0", "--sync", "FULL",
        "--disable", "proxy",  # a proxy killed with SIGKILL leaves its NAT chain until the next proxy starts
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    assert process.stdout is not None
    while True:
        line = (await asyncio.wait_for(process.stdout.readline(), 20)).decode()
        assert line, "minik up exited before it was ready"
        if re.search(r"API at https://\S+", line):
            return process


def admin_session(data_dir: Path) -> aiohttp.ClientSession:
    """A session as the admin, with the kubeconfig `minik up` wrote (the CA, the admin token)."""
    endpoint = kubeconfig.endpoint(data_dir / "kubeconfig")
    return aiohttp.ClientSession(base_url=endpoint.server, headers={"Authorization": f"Bearer {endpoint.token}"},
                                 connector=aiohttp.TCPConnector(ssl=endpoint.ssl_context() or True))


async def write_until_killed(data_dir: Path, acknowledged: dict[str, str], stop: asyncio.Event) -> None:
    async with admin_session(data_dir) as session:
        async def writer(w: int) -> None:
            i = 0
            while not stop.is_set():
                body = {"metadata": {"name": f"w{w}-{i}"}, "data": {"v": str(i)}}
                try:
                    async with session.post("/api/v1/namespaces/default/configmaps", json=body) as response:
                        if response.status == 201:
                            acknowledged[body["metadata"]["name"]] = (await response.json())["metadata"][
                                "resourceVersion"]
                except (TimeoutError, aiohttp.ClientError):
                    return
                i += 1

        await asyncio.gather(*(writer(w) for w in range(16)))


@pytest.mark.timeout(60)
async def test_acknowledged_writes_survive_kill_9(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    process = await start_minik(data_dir)
    acknowledged: dict[str, str] = {}
    stop = asyncio.Event()
    load = asyncio.create_task(write_until_killed(data_dir, acknowledged, stop))
    try:
        while len(acknowledged) < 300:
            await asyncio.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        await process.wait()
    finally:
        stop.set()
        await load
    process = await start_minik(data_dir)
    try:
        async with admin_session(data_dir) as session:
            async with session.get("/api/v1/namespaces/default/configmaps") as response:
                listed = await response.json()
        stored = {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in listed["items"]}
        missing = [name for name in acknowledged if name not in stored]
        assert not missing, f"{len(missing)} acknowledged writes lost"
        assert all(stored[name] == rv for name, rv in acknowledged.items())
        assert int(listed["metadata"]["resourceVersion"]) >= max(int(rv) for rv in acknowledged.values())
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 20)
        assert process.returncode == 0
