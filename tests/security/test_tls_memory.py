"""Connections that only shake hands cost `minik up` no memory once they are gone.

This runs the real `minik up` (uvloop, and the collector settings of a long-running process, minik.collector): a
cluster in the test's own process runs on the test's event loop with Python's default collector, where a closed
connection held in a reference cycle is soon collected and the growth does not show. In `minik up` it did: 12,000
bare handshakes took it from 67 to 725 MB.
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import sys
from pathlib import Path

import pytest

from minik.apiserver.auth.credentials import client_ssl_context

#: connections opened before the baseline is read (the server's caches, buffers and arenas settle), and after
WARM_UP = 300
HANDSHAKES = 1500
CLIENT_THREADS = 4
#: how far resident memory may end above the baseline
TOLERANCE = 0.20


async def start_minik_up(data_dir: Path) -> tuple[asyncio.subprocess.Process, str]:
    """`minik up` over HTTPS with every component disabled, in the foreground; its API URL once ready."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "minik", "up", "--data-dir", str(data_dir), "--port", "0", "--sync", "normal",
        "--disable", "scheduler,controllers,node,proxy", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    assert process.stdout is not None
    while True:
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        assert line, "minik up exited before it was ready"
        match = re.search(r"API at (https://\S+)", line)
        if match:
            return process, match.group(1)


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            process.kill()
            await process.wait()


def resident_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")


def handshake(port: int, context: ssl.SSLContext, count: int) -> None:
    """Connect, complete a TLS handshake (verifying the server), close; ``count`` times, sending nothing."""
    for _ in range(count):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1"):
                pass


async def handshakes(port: int, context: ssl.SSLContext, count: int) -> None:
    per_thread = count // CLIENT_THREADS
    await asyncio.gather(*(asyncio.to_thread(handshake, port, context, per_thread) for _ in range(CLIENT_THREADS)))


async def settles_within(pid: int, limit_kib: int, seconds: float = 10.0) -> int:
    """Resident memory once at or under ``limit_kib`` (the server finishes closing the last connections), or
    what it is after ``seconds``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while (rss := resident_kib(pid)) > limit_kib and loop.time() < deadline:
        await asyncio.sleep(0.1)
    return rss


@pytest.mark.timeout(120)
async def test_bare_tls_handshakes_leave_the_api_servers_memory_where_it_was(tmp_path: Path) -> None:
    process, url = await start_minik_up(tmp_path / "cluster")
    try:
        port = int(url.rsplit(":", 1)[1])
        context = client_ssl_context((tmp_path / "cluster" / "pki" / "ca.crt").read_bytes())
        await handshakes(port, context, WARM_UP)
        baseline = resident_kib(process.pid)
        await handshakes(port, context, HANDSHAKES)
        limit = int(baseline * (1 + TOLERANCE))
        after = await settles_within(process.pid, limit)
        assert after <= limit, (f"resident memory went from {baseline} KiB to {after} KiB after {HANDSHAKES} bare "
                                f"TLS handshakes ({(after - baseline) * 1024 // HANDSHAKES} bytes each)")
    finally:
        await stop(process)
