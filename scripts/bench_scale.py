#!/usr/bin/env python3
"""Kubernetes' largest supported cluster in one minik process: 5,000 simulated nodes and 150,000 pods.

A real `minik up --fake-nodes N --no-node` in its own process (API server, store, scheduler, controllers and the
simulated kubelet of every node; the proxy disabled; `--sync NORMAL`). The harness talks to it over HTTP:

1. creates the pods through the API (32 requests in flight, bare pods spread over 10 namespaces), and waits
   until the scheduler has bound every one and the simulated runtime reports each Running (a watch on
   status.phase=Running): the time to get there, and the server's resident memory then;
2. lists every pod, unpaged and in pages of 500 (limit/continue): each several times, p99 (the largest when
   there are few samples);
3. runs 1,000 writes/s of churn (pod status updates: a strategic merge patch of one condition of a random pod)
   for a while, and meanwhile single-object GETs (50/s): p99 of each, and the CPU time minik used per write
   (steadier than latencies on a shared machine); the SQLite file's size before, during and
   after, and how many rows older than the compaction window are still there (compaction keeping up);
4. syncs a fresh informer (minik.informers, paged list + watch) on all pods: the time until it has synced;
5. stops `minik up` and starts it again on the same data directory: the time to the first 200 from /readyz.

Anchors are Kubernetes' SLOs and k3s's published memory; the goals are issue 9's. `--scale 0.1` runs 500 nodes
and 15,000 pods; `--budget SECONDS` bounds the run (phases not reached are reported as such).

    python scripts/bench_scale.py [--scale 1.0] [--budget 3600] [--churn-seconds 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import benchlib  # noqa: E402

from minik.client import Client  # noqa: E402
from minik.informers import Informer  # noqa: E402

NODES, PODS, NAMESPACES = 5000, 150_000, 10
CONNECTIONS = 32
CHURN_RATE = 1000.0
GET_RATE = 50.0
PAGE = 500
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30)
COMPACTION_WINDOW = 300.0  # the store's default (StoreSettings.compaction_window_seconds)
Obj = dict[str, Any]


class BudgetExceeded(Exception):
    pass



def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def rss_mb(pid: int) -> dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) * 1024 / 1e6
    return fields


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process and its children (the store's writer) have used (less noisy than
    latencies on a shared machine)."""
    total = 0
    for each in benchlib.with_children(pid):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def db_size_mb(data: Path) -> dict[str, float]:
    sizes = {}
    for suffix in ("", "-wal"):
        path = data / f"state.db{suffix}"
        sizes["db" + suffix.replace("-", "_")] = path.stat().st_size / 1e6 if path.exists() else 0.0
    return sizes


def history_backlog(data: Path, window: float) -> dict[str, int | None]:
    """Rows in the log, and those older than the compaction window (plus its 30 s interval) that an object's
    newer revision has replaced: what compaction should have dropped by now (None while the whole log is younger
    than that)."""
    db = sqlite3.connect(f"file:{data / 'state.db'}?mode=ro", uri=True, timeout=30)
    try:
        rows, oldest = db.execute("SELECT COUNT(*), MIN(ts) FROM log").fetchone()
        cutoff = time.time() - window - 30
        if oldest is None or oldest >= cutoff:
            return {"rows": int(rows), "stale_rows": None}  # the run is younger than the window: nothing to tell
        stale = db.execute("SELECT COUNT(*) FROM log AS l WHERE l.ts < ? AND EXISTS "
                           "(SELECT 1 FROM log AS n WHERE n.key = l.key AND n.prev_rev = l.rev)", (cutoff,)).fetchone()[0]
        return {"rows": int(rows), "stale_rows": int(stale)}
    finally:
        db.close()


def start_cluster(data: Path, port: int, nodes: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = open(data / "cluster.out", "ab")
    args = ["up", "--data-dir", str(data / "cluster"), "--port", str(port), "--sync", "NORMAL", "--no-node",
            "--fake-nodes", str(nodes), "--disable", "proxy", "--log-level", "warning",
            "--plain-http"]  # plain HTTP on loopback (still with the admin's token): the cluster, not TLS
    return subprocess.Popen([sys.executable, "-m", "minik", *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop_cluster(proc: subprocess.Popen[bytes], timeout: float = 120) -> float:
    began = time.perf_counter()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    return time.perf_counter() - began


async def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float) -> float:
    began = time.perf_counter()
    async with aiohttp.ClientSession(base_url=url) as session:  # /readyz needs no token
        while True:
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with session.get("/readyz") as r:
                    if r.status == 200:
                        return time.perf_counter() - began
            if proc.poll() is not None:
                raise RuntimeError(f"minik up exited with {proc.returncode}")
            if time.perf_counter() - began > timeout:
                raise RuntimeError("minik up not ready in time")
            await asyncio.sleep(0.02)


async def get_json(session: aiohttp.ClientSession, path: str, **params: str) -> Obj:
    async with session.get(path, params=params) as r:
        body = await r.read()
        if r.status != 200:
            raise RuntimeError(f"GET {path}: {r.status} {body[:300]!r}")
        result: Obj = orjson.loads(body)
        return result


async def wait_nodes_ready(session: aiohttp.ClientSession, count: int, deadline: float) -> None:
    while True:
        nodes = (await get_json(session, "/api/v1/nodes"))["items"]
        ready = sum(1 for n in nodes for c in (n.get("status") or {}).get("conditions") or []
                    if c.get("type") == "Ready" and c.get("status") == "True")
        if ready >= count:
            return
        if time.monotonic() > deadline:
            raise BudgetExceeded(f"only {ready}/{count} nodes Ready")
        await asyncio.sleep(1)


def pod_body(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "scale"}},
            "spec": {"containers": [{"name": "app", "image": "app:1",
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


def pod_names(pods: int) -> list[tuple[str, str]]:
    return [(f"scale-{i % NAMESPACES}", f"pod-{i:06d}") for i in range(pods)]


async def create_and_run(session: aiohttp.ClientSession, pods: int, deadline: float) -> dict[str, float]:
    """Create every pod; the time until all are Running (and when the creates alone were done)."""
    for n in range(NAMESPACES):
        async with session.post("/api/v1/namespaces", json={"metadata": {"name": f"scale-{n}"}}) as r:
            if r.status not in (201, 409):
                raise RuntimeError(f"namespace: {r.status} {await r.text()}")
    rv = (await get_json(session, "/api/v1/pods", limit="1"))["metadata"]["resourceVersion"]
    running: set[str] = set()
    all_running = asyncio.Event()

    async def watch() -> None:
        version = rv
        while not all_running.is_set():
            params = {"watch": "true", "resourceVersion": version, "fieldSelector": "status.phase=Running",
                      "allowWatchBookmarks": "true", "timeoutSeconds": "3600"}
            async with session.get("/api/v1/pods", params=params, timeout=aiohttp.ClientTimeout(total=None)) as r:
                async for line in r.content:
                    if not line.strip():
                        continue
                    event = orjson.loads(line)
                    meta = event["object"]["metadata"]
                    version = meta.get("resourceVersion", version)
                    if event["type"] == "ADDED":
                        running.add(meta["name"])
                        if len(running) >= pods:
                            all_running.set()
                            return

    watcher = asyncio.create_task(watch())
    names = iter(pod_names(pods))
    began = time.perf_counter()
    progress = [began]

    async def creator() -> None:
        for namespace, name in names:
            async with session.post(f"/api/v1/namespaces/{namespace}/pods", data=orjson.dumps(pod_body(name)),
                                    headers={"Content-Type": "application/json"}) as r:
                if r.status not in (201, 409):
                    raise RuntimeError(f"create {name}: {r.status} {await r.text()}")
            if time.perf_counter() - progress[0] > 30:
                progress[0] = time.perf_counter()
                print(f"  ... {name} created, {len(running):,} Running, {time.perf_counter() - began:.0f} s",
                      flush=True)
            if time.monotonic() > deadline:
                raise BudgetExceeded("creating pods")

    await asyncio.gather(*(creator() for _ in range(CONNECTIONS)))
    created = time.perf_counter() - began
    print(f"  created {pods:,} pods in {created:.1f} s; {len(running):,} Running so far", flush=True)
    try:
        while not all_running.is_set():
            if time.monotonic() > deadline:
                raise BudgetExceeded(f"{len(running):,}/{pods:,} pods Running")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(all_running.wait()), 30)
            print(f"  ... {len(running):,} Running, {time.perf_counter() - began:.0f} s", flush=True)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    return {"create_seconds": created, "running_seconds": time.perf_counter() - began}


async def full_lists(session: aiohttp.ClientSession, pods: int, rounds: int) -> dict[str, Any]:
    """Unpaged and paged lists of every pod, timed from the request to the last byte read."""
    unpaged: list[float] = []
    paged: list[float] = []
    for _ in range(rounds):
        began = time.perf_counter()
        async with session.get("/api/v1/pods", timeout=aiohttp.ClientTimeout(total=600)) as r:
            body = await r.read()
        unpaged.append(time.perf_counter() - began)
        items = len(orjson.loads(body)["items"])
        del body
        if items < pods:
            raise RuntimeError(f"the unpaged list had {items} pods, not {pods}")
        began = time.perf_counter()
        seen, token = 0, ""
        while True:
            params = {"limit": str(PAGE), **({"continue": token} if token else {})}
            async with session.get("/api/v1/pods", params=params) as r:
                page = orjson.loads(await r.read())
            seen += len(page["items"])
            token = page["metadata"].get("continue") or ""
            if not token:
                break
        paged.append(time.perf_counter() - began)
        if seen < pods:
            raise RuntimeError(f"the paged list had {seen} pods, not {pods}")
    return {"unpaged_seconds": unpaged, "paged_seconds": paged, "unpaged_p99": percentile(unpaged, 0.99),
            "paged_p99": percentile(paged, 0.99)}


async def churn(session: aiohttp.ClientSession, data: Path, pods: int, seconds: float) -> dict[str, Any]:
    """CHURN_RATE pod status updates/s on random pods for ``seconds``, and GET_RATE single-pod GETs/s."""
    names = pod_names(pods)
    write_ms: list[float] = []
    get_ms: list[float] = []
    failures: list[str] = []
    sizes: list[dict[str, float]] = []
    in_flight = asyncio.Semaphore(256)
    headers = {"Content-Type": "application/strategic-merge-patch+json"}
    tasks: set[asyncio.Task[None]] = set()

    async def timed(method: str, path: str, samples: list[float], **request: Any) -> None:
        """One request: its latency in ``samples`` when it answers 200, else a failure; its slot released."""
        began = time.perf_counter()
        try:
            async with session.request(method, path, timeout=REQUEST_TIMEOUT, **request) as r:
                await r.read()
                if r.status != 200:
                    failures.append(f"{method} {r.status}")
                    return
            samples.append((time.perf_counter() - began) * 1000)
        except (aiohttp.ClientError, TimeoutError) as exc:
            failures.append(f"{method} {exc!r}")
        finally:
            in_flight.release()

    async def write(i: int) -> None:
        namespace, name = random.choice(names)
        patch = {"status": {"conditions": [{"type": "bench.minik.io/Churn", "status": "True",
                                            "reason": "Churn", "message": str(i)}]}}
        await timed("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status", write_ms,
                    data=orjson.dumps(patch), headers=headers)

    async def get() -> None:
        namespace, name = random.choice(names)
        await timed("GET", f"/api/v1/namespaces/{namespace}/pods/{name}", get_ms)

    async def paced(rate: float, work: Any) -> int:
        began = time.perf_counter()
        sent = 0
        while (now := time.perf_counter() - began) < seconds:
            due = int(now * rate) + 1
            while sent < due:
                await in_flight.acquire()
                task = asyncio.create_task(work(sent))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                sent += 1
            await asyncio.sleep(max(0.0, sent / rate - (time.perf_counter() - began)))
        return sent

    async def sample_sizes() -> None:
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            sizes.append({"t": round(time.perf_counter() - began, 1), **db_size_mb(data)})
            if len(sizes) % 5 == 0:
                print(f"  ... churn {sizes[-1]['t']:.0f} s: {len(write_ms):,} writes, {len(get_ms):,} gets done, "
                      f"{len(failures)} failures, {len(tasks)} in flight; db {sizes[-1]}", flush=True)
            await asyncio.sleep(max(1.0, seconds / 20))

    before = db_size_mb(data)
    began = time.perf_counter()
    sent, _, _ = await asyncio.gather(paced(CHURN_RATE, write), paced(GET_RATE, lambda i: get()), sample_sizes())
    await asyncio.gather(*list(tasks))
    elapsed = time.perf_counter() - began
    return {"writes": sent, "writes_done": len(write_ms), "achieved_per_second": len(write_ms) / elapsed,
            "write_p50_ms": percentile(write_ms, 0.5), "write_p99_ms": percentile(write_ms, 0.99),
            "get_p50_ms": percentile(get_ms, 0.5), "get_p99_ms": percentile(get_ms, 0.99), "gets": len(get_ms),
            "failures": len(failures), "failure_sample": failures[:5], "size_before": before,
            "size_after": db_size_mb(data), "sizes": sizes}


async def informer_sync(url: str, token: str | None, pods: int) -> float:
    async with Client.http(url, token, timeout_seconds=600) as client:
        informer = Informer(client, "pods")
        began = time.perf_counter()
        informer.start()
        try:
            await informer.wait_for_sync(timeout=1200)
            seconds = time.perf_counter() - began
            if len(informer.list()) < pods:
                raise RuntimeError(f"the informer synced {len(informer.list())} pods, not {pods}")
        finally:
            await informer.stop()
    return seconds


def session_for(url: str, token: str | None) -> aiohttp.ClientSession:
    """A session as the cluster's admin (every request needs the token, over plain HTTP too)."""
    return aiohttp.ClientSession(base_url=url, connector=aiohttp.TCPConnector(limit=0),
                                 headers={"Authorization": f"Bearer {token}"} if token else None,
                                 timeout=aiohttp.ClientTimeout(total=300))


async def measure(url: str, data: Path, proc: subprocess.Popen[bytes], nodes: int, pods: int, args: Any,
                  results: dict[str, Any], deadline: float) -> subprocess.Popen[bytes]:
    """Every phase in turn, each result into ``results`` as soon as it is known. Returns the cluster process
    (a new one after the restart)."""
    results["ready_seconds"] = await wait_ready(url, proc, 120)
    token = benchlib.admin_endpoint(data / "cluster").token
    async with session_for(url, token) as session:
        began = time.perf_counter()
        await wait_nodes_ready(session, nodes, deadline)
        results["nodes_ready_seconds"] = time.perf_counter() - began
        print(f"  {nodes:,} nodes Ready in {results['nodes_ready_seconds']:.1f} s", flush=True)
        results.update(await create_and_run(session, pods, deadline))
        await asyncio.sleep(args.settle)
        results["memory"] = rss_mb(proc.pid)
        print(f"  all {pods:,} Running in {results['running_seconds']:.1f} s; minik RSS "
              f"{results['memory']['VmRSS']:,.0f} MB (peak {results['memory']['VmHWM']:,.0f})", flush=True)
        if time.monotonic() > deadline:
            raise BudgetExceeded("before the lists")
        results["lists"] = await full_lists(session, pods, args.list_rounds)
        print(f"  full list p99: unpaged {results['lists']['unpaged_p99']:.2f} s, paged "
              f"{results['lists']['paged_p99']:.2f} s", flush=True)
        if time.monotonic() + args.churn_seconds > deadline:
            raise BudgetExceeded("before the churn")
        cpu_before = cpu_seconds(proc.pid)
        results["churn"] = await churn(session, data / "cluster", pods, args.churn_seconds)
        if results["churn"]["writes_done"]:
            results["churn"]["cpu_ms_per_write"] = \
                (cpu_seconds(proc.pid) - cpu_before) * 1000 / results["churn"]["writes_done"]
        results["history"] = history_backlog(data / "cluster", COMPACTION_WINDOW)
        results["memory_after_churn"] = rss_mb(proc.pid)
        c = results["churn"]
        print(f"  churn {c['achieved_per_second']:,.0f} writes/s: status update p99 {c['write_p99_ms']:.1f} ms, "
              f"GET p99 {c['get_p99_ms']:.1f} ms; minik CPU {c.get('cpu_ms_per_write', 0):.2f} ms a write; "
              f"db {c['size_after']}", flush=True)
    if time.monotonic() > deadline:
        raise BudgetExceeded("before the informer")
    results["informer_sync_seconds"] = await informer_sync(url, token, pods)
    print(f"  fresh informer synced in {results['informer_sync_seconds']:.1f} s", flush=True)
    results["stop_seconds"] = stop_cluster(proc)
    proc = start_cluster(data, int(url.rsplit(":", 1)[1]), nodes)
    results["restart_ready_seconds"] = await wait_ready(url, proc, 600)
    results["restart_memory"] = rss_mb(proc.pid)
    print(f"  restart: ready in {results['restart_ready_seconds']:.2f} s (stop took {results['stop_seconds']:.1f} s)",
          flush=True)
    return proc


def rows_of(results: dict[str, Any], nodes: int, pods: int) -> list[dict[str, Any]]:
    scale = f"{nodes:,} nodes, {pods:,} pods"
    mem = (results.get("memory") or {}).get("VmRSS")
    lists = results.get("lists") or {}
    churn_ = results.get("churn") or {}
    history = results.get("history") or {}
    size_after = churn_.get("size_after") or {}
    db_total = (size_after.get("db", 0) + size_after.get("db_wal", 0)) if size_after else None
    before = churn_.get("size_before") or {}
    db_before = (before.get("db", 0) + before.get("db_wal", 0)) if before else None
    ok = lambda v, goal: None if v is None else v <= goal  # noqa: E731
    return [
        benchlib.row(f"create {scale} to all Running (s)", results.get("running_seconds")),
        benchlib.row("  of which the creates (pods/s)", pods / results["create_seconds"]
                     if results.get("create_seconds") else None),
        benchlib.row(f"resident memory with {scale} (MB)", mem, anchor="k3s server's published need (MB, upper)",
                     anchor_value=1600.0, goal="<= 3,000 MB", met=ok(mem, 3000)),
        benchlib.row("full LIST of all pods, unpaged, p99 (s)", lists.get("unpaged_p99"),
                     anchor="Kubernetes SLO for a full list (s)", anchor_value=30.0, goal="<= 5 s",
                     met=ok(lists.get("unpaged_p99"), 5)),
        benchlib.row(f"full LIST of all pods, pages of {PAGE}, p99 (s)", lists.get("paged_p99"),
                     anchor="Kubernetes SLO for a full list (s)", anchor_value=30.0, goal="<= 5 s",
                     met=ok(lists.get("paged_p99"), 5)),
        benchlib.row("churn writes/s achieved (pod status updates)", churn_.get("achieved_per_second"),
                     anchor="target writes/s", anchor_value=CHURN_RATE, goal=">= 990/s",
                     met=None if churn_.get("achieved_per_second") is None
                     else churn_["achieved_per_second"] >= 0.99 * CHURN_RATE),
        benchlib.row("pod status update p99 under churn (ms)", churn_.get("write_p99_ms"),
                     anchor="Kubernetes SLO for mutating calls (ms)", anchor_value=1000.0, goal="<= 100 ms",
                     met=ok(churn_.get("write_p99_ms"), 100)),
        benchlib.row("minik CPU per churn write, GETs included (ms)", churn_.get("cpu_ms_per_write")),
        benchlib.row("single-pod GET p99 under churn (ms)", churn_.get("get_p99_ms"),
                     anchor="Kubernetes SLO for single-object reads (ms)", anchor_value=1000.0, goal="<= 100 ms",
                     met=ok(churn_.get("get_p99_ms"), 100)),
        benchlib.row("SQLite file + WAL after churn (MB)", db_total, anchor="before the churn (MB)",
                     anchor_value=db_before),
        benchlib.row("log rows past the compaction window not yet compacted", history.get("stale_rows"),
                     anchor="rows in the log", anchor_value=history.get("rows"), goal="compaction keeps up (0)",
                     met=None if history.get("stale_rows") is None else history["stale_rows"] == 0),
        benchlib.row("fresh informer on all pods: list + watch to synced (s)", results.get("informer_sync_seconds")),
        benchlib.row("restart of minik up on that data: to ready (s)", results.get("restart_ready_seconds")),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of 5,000 nodes and 150,000 pods")
    parser.add_argument("--budget", type=float, default=3600.0, help="seconds the whole run may take")
    parser.add_argument("--churn-seconds", type=float, default=60.0)
    parser.add_argument("--list-rounds", type=int, default=5)
    parser.add_argument("--settle", type=float, default=10.0, help="seconds to wait before reading the memory")
    parser.add_argument("--keep", type=Path, default=None, help="keep the data directory here")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    nodes, pods = max(1, round(NODES * args.scale)), max(1, round(PODS * args.scale))
    deadline = time.monotonic() + args.budget
    results: dict[str, Any] = {"nodes": nodes, "pods": pods, "machine": benchlib.machine()}
    print(f"bench_scale: {nodes:,} simulated nodes, {pods:,} pods, budget {args.budget:.0f} s", flush=True)
    tmp = tempfile.mkdtemp(prefix="minik-bench-scale-") if args.keep is None else str(args.keep)
    data = Path(tmp)
    data.mkdir(parents=True, exist_ok=True)
    port = benchlib.free_port()
    proc = start_cluster(data, port, nodes)
    code = 0
    try:
        proc = _run(measure(f"http://127.0.0.1:{port}", data, proc, nodes, pods, args, results, deadline))
    except BudgetExceeded as exc:
        results["budget_exceeded"] = str(exc)
        print(f"bench_scale: the time budget ran out ({exc}); the phases after it were not measured", flush=True)
        code = 1
    finally:
        stop_cluster(proc)
        if args.keep is None:
            import shutil
            shutil.rmtree(data, ignore_errors=True)
    results["machine_after"] = benchlib.machine()
    rows = rows_of(results, nodes, pods)
    print(benchlib.table(rows))
    benchlib.write_json(args.json, rows, results)
    return code


def _run(main: Any) -> Any:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


if __name__ == "__main__":
    sys.exit(main())
