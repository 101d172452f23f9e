#!/usr/bin/env python3
"""API benchmarks, each figure next to an anchor measured in the same run on the same machine.

1. minik pod creates/s (HTTP, 32 connections, sync FULL)  vs  etcd 3.4 puts/s (HTTP/JSON gateway, 1 KiB values);
   the pods share one spec, as a ReplicaSet's do; a second run gives each pod a spec of its own; a third, on a
   server of its own, creates them beside 100 watches selecting pods by spec.nodeName (as kubelets watch),
   against the same server's creates/s without those watches; a fourth is made by a service account that RBAC
   authorizes (a RoleBinding to `edit`, its token from the TokenRequest API) on a server that stores 1,000 other
   RoleBindings, against the same account's creates on a server without them
2. minik pod gets/s (32 connections)                      vs  a bare aiohttp hello-world app's requests/s
3. watch delivery latency p50/p99: 100 watchers (a separate process, each a bare asyncio protocol reading the
   chunked body) while a paced writer (bare keep-alive connections, like the watchers) makes 1,000 configmap
   creates/s, each carrying its send time; the latency is from before the writer sends the create to the
   watcher's read, so it includes the create's own commit

Needs `etcd` (Debian's etcd-server) and `wrk` on PATH.

    python scripts/bench_api.py [--duration 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import benchlib

ROOT = Path(__file__).resolve().parent.parent
CONNECTIONS = 32
WATCHERS = 100
#: the RoleBindings of other users stored beside the one that authorizes the RBAC row's creates
RBAC_BINDINGS = 1000
WRITE_RATE = 1000
#: the 1 KiB value of every etcd put
ETCD_VALUE = base64.b64encode(os.urandom(1024)).decode()
#: the shortest slice of an interleaved measurement (wrk's own start and stop weigh on shorter ones)
MIN_SLICE_SECONDS = 3.0
POD_BODY = (b'{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"bench-"},'
            b'"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}')
SENT_KEY = "benchSentNs"
SENT_MARK = b'"' + SENT_KEY.encode() + b'":"'


class BenchError(RuntimeError):
    pass


# ---------------------------------------------------------------------------------------------------------------
# processes and ports

def run_loop(main: Any) -> Any:
    """The harness's own clients run on uvloop when it is there (as minik does), so they cost the machine less."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)



def stop_process(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL: the process and anything left in its own session."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # started with start_new_session: its group is its own
            proc.wait(5)


@contextlib.contextmanager
def spawned(args: list[str], **kwargs: Any) -> Iterator[subprocess.Popen[Any]]:
    proc = subprocess.Popen(args, start_new_session=True, **kwargs)
    try:
        yield proc
    finally:
        stop_process(proc)


def http(method: str, url: str, body: bytes | None = None, timeout: float = 30.0, token: str | None = None
         ) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_http(url: str, proc: subprocess.Popen[Any], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"{what} exited with status {proc.returncode} before answering {url}")
        with contextlib.suppress(OSError):
            status, _ = http("GET", url, timeout=2)
            if status == 200:
                return
        time.sleep(0.05)
    raise BenchError(f"{what} did not answer {url} within {timeout:.0f}s")


# ---------------------------------------------------------------------------------------------------------------
# wrk

LUA_COMMON = r"""
local threads = {}
local nthreads = 0
function setup(thread)
  nthreads = nthreads + 1
  thread:set("tid", nthreads)
  table.insert(threads, thread)
end
function init(args)
  bad = 0
end
function response(status, headers, body)
  if status ~= EXPECTED then
    bad = bad + 1
    if bad == 1 then first_bad = tostring(status) .. " " .. string.sub(body or "", 1, 300) end
  end
end
function done(summary, latency, requests)
  local nbad = 0
  local sample = ""
  for _, t in ipairs(threads) do
    nbad = nbad + (t:get("bad") or 0)
    local fb = t:get("first_bad")
    if fb and sample == "" then sample = fb end
  end
  local e = summary.errors
  io.write(string.format(
    "BENCHJSON {\"requests\":%d,\"duration_us\":%d,\"bad\":%d,\"connect\":%d,\"read\":%d,\"write\":%d," ..
    "\"status\":%d,\"timeout\":%d,\"p50_us\":%d,\"p99_us\":%d}\n",
    summary.requests, summary.duration, nbad, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
  if sample ~= "" then
    io.write("BENCHBAD " .. string.gsub(sample, "\n", " ") .. "\n")
  end
end
"""

# Each request puts a distinct key. The key is written directly in base64: a fixed prefix ("bench/"), four digits
# for the wrk thread and eight for a per-thread counter, every group a multiple of four characters, so distinct
# strings decode to distinct keys.
LUA_ETCD = r"""
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function b64digits(x, width)
  local out = {}
  for i = width, 1, -1 do
    local d = x % 64
    out[i] = string.sub(alphabet, d + 1, d + 1)
    x = math.floor(x / 64)
  end
  return table.concat(out)
end
local n = 0
local head = nil
local tail = '","value":"' .. VALUE .. '"}'
local headers = {["Content-Type"] = "application/json"}
function request()
  if head == nil then head = '{"key":"' .. KEY_PREFIX .. b64digits(tid, 4) end
  n = n + 1
  return wrk.format("POST", "/v3/kv/put", headers, head .. b64digits(n, 8) .. tail)
end
"""

# Each request creates a pod whose spec is its own: the image tag carries the wrk thread and a counter.
LUA_DISTINCT_PODS = r"""
local n = 0
local headers = {["Content-Type"] = "application/json", ["Authorization"] = AUTHORIZATION}
local head = '{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"bench-"},' ..
             '"spec":{"containers":[{"name":"c","image":"busybox:t'
local tail = '"}]}}'
function request()
  n = n + 1
  return wrk.format("POST", "/api/v1/namespaces/default/pods", headers, head .. tid .. "-" .. n .. tail)
end
"""


def lua_script(directory: Path, name: str, expected: int, extra: str = "", request: str = "",
               token: str | None = None) -> Path:
    """A wrk script; with ``token``, its requests carry it (``AUTHORIZATION``, for scripts that make their own
    headers)."""
    path = directory / f"{name}.lua"
    auth = f'AUTHORIZATION = "Bearer {token}"\nwrk.headers["Authorization"] = AUTHORIZATION' if token else ""
    path.write_text(f"EXPECTED = {expected}\n{auth}\n{extra}\n{LUA_COMMON}\n{request}\n")
    return path


def lua_static(method: str, path: str, body: bytes | None) -> str:
    lines = [f'wrk.method = "{method}"', f'wrk.path = "{path}"']
    if body is not None:
        lines.append('wrk.headers["Content-Type"] = "application/json"')
        lines.append("wrk.body = [==[" + body.decode() + "]==]")
    return "\n".join(lines)


def run_wrk(url: str, script: Path, duration: float, threads: int) -> dict[str, Any]:
    cmd = ["wrk", f"-t{threads}", f"-c{CONNECTIONS}", f"-d{max(1, round(duration))}s", "--timeout", "10s",
           "-s", str(script), url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
    match = re.search(r"^BENCHJSON (\{.*\})$", out.stdout, re.M)
    if out.returncode != 0 or match is None:
        raise BenchError(f"wrk failed ({out.returncode}): {out.stdout[-2000:]} {out.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(match.group(1))
    bad = re.search(r"^BENCHBAD (.*)$", out.stdout, re.M)
    result["bad_sample"] = bad.group(1) if bad else None
    seconds = result["duration_us"] / 1e6
    result["ok"] = result["requests"] - result["bad"]
    result["ok_per_second"] = result["ok"] / seconds if seconds else 0.0
    result["seconds"] = seconds
    return result


def describe(result: dict[str, Any]) -> str:
    errors = sum(result[k] for k in ("connect", "read", "write", "timeout"))
    text = (f"{result['ok_per_second']:,.0f}/s ({result['ok']:,} ok of {result['requests']:,} in "
            f"{result['seconds']:.1f}s, p50 {result['p50_us'] / 1000:.2f} ms, p99 {result['p99_us'] / 1000:.2f} ms")
    if result["bad"]:
        text += f", {result['bad']:,} unexpected statuses, first: {result['bad_sample']}"
    if errors:
        text += f", socket errors {errors}"
    return text + ")"


# ---------------------------------------------------------------------------------------------------------------
# anchor A: etcd

@contextlib.contextmanager
def etcd_server(tmp: Path) -> Iterator[str]:
    """A one-member etcd on loopback, its data in ``tmp``; yields the client URL."""
    client, peer = benchlib.free_port(), benchlib.free_port()
    client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
    data_dir = Path(tempfile.mkdtemp(prefix="etcd-", dir=tmp))
    log_path = tmp / "etcd.log"
    args = ["etcd", "--name", "bench", "--data-dir", str(data_dir),
            "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"bench={peer_url}", "--initial-cluster-state", "new",
            "--initial-cluster-token", f"bench-{os.getpid()}"]
    try:
        with open(log_path, "wb") as log, spawned(args, stdout=log, stderr=subprocess.STDOUT,
                                                  stdin=subprocess.DEVNULL) as proc:
            try:
                wait_http(client_url + "/health", proc, "etcd")
            except BenchError as exc:
                raise BenchError(f"{exc}; etcd log: {log_path.read_text(errors='replace')[-2000:]}") from None
            status, body = http("POST", client_url + "/v3/kv/put", json.dumps(
                {"key": base64.b64encode(b"probe").decode(), "value": ETCD_VALUE}).encode())
            if status != 200:
                raise BenchError(f"etcd put probe: {status} {body[:300]!r}")
            yield client_url
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def etcd_puts(url: str, tmp: Path, seconds: float, threads: int, round_: int) -> dict[str, Any]:
    """Puts of distinct keys (this round's own prefix, 9 bytes so the base64 stays aligned) for ``seconds``."""
    prefix = base64.b64encode(f"bench/r{round_ % 10}/".encode()).decode()
    script = lua_script(tmp, f"etcd-{round_}", 200, f'VALUE = "{ETCD_VALUE}"\nKEY_PREFIX = "{prefix}"', LUA_ETCD)
    return run_wrk(url, script, seconds, threads)


def etcd_keys(url: str) -> int | None:
    status, body = http("POST", url + "/v3/kv/range", json.dumps(
        {"key": base64.b64encode(b"bench/").decode(), "range_end": base64.b64encode(b"bench0").decode(),
         "count_only": True}).encode())
    return int(json.loads(body).get("count", 0)) if status == 200 else None


# ---------------------------------------------------------------------------------------------------------------
# anchor B: aiohttp hello world

def hello_server(port: int) -> None:
    from aiohttp import web

    async def hello(_request: web.Request) -> web.Response:
        return web.Response(text="hello")

    app = web.Application()
    app.router.add_get("/", hello)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


def bench_hello(duration: float, threads: int, tmp: Path) -> dict[str, Any]:
    port = benchlib.free_port()
    with spawned([sys.executable, __file__, "--_hello-server", str(port)], stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        url = f"http://127.0.0.1:{port}/"
        wait_http(url, proc, "aiohttp hello server")
        return run_wrk(url, lua_script(tmp, "hello", 200, lua_static("GET", "/", None)), duration, threads)


# ---------------------------------------------------------------------------------------------------------------
# minik

class Minik(NamedTuple):
    """A `minik up` of the benchmark: its URL and its admin's token (plain HTTP is authenticated too)."""

    url: str
    token: str | None


@contextlib.contextmanager
def minik(tmp: Path, name: str) -> Iterator[Minik]:
    data_dir = Path(tempfile.mkdtemp(prefix=f"minik-{name}-", dir=tmp))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    args = [sys.executable, "-m", "minik", "up", "--data-dir", str(data_dir), "--port", "0", "--sync", "FULL",
            "--log-file", "-", "--disable", "scheduler,controllers,node,proxy",
            "--plain-http"]  # plain HTTP, as the anchors are served
    stderr_path = tmp / f"minik-{name}.stderr"
    try:
        with open(stderr_path, "wb") as err, spawned(args, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                                     stdout=subprocess.PIPE, stderr=err) as proc:
            assert proc.stdout is not None
            found: list[str] = []
            seen: list[str] = []

            def read_stdout() -> None:  # finds the URL, then keeps draining the pipe
                assert proc.stdout is not None
                for raw in proc.stdout:
                    line = raw.decode(errors="replace")
                    seen.append(line)
                    m = re.search(r"API at (http://\S+)", line)
                    if m and not found:
                        found.append(m.group(1))

            reader = threading.Thread(target=read_stdout, daemon=True)
            reader.start()
            deadline = time.monotonic() + 60
            while not found:
                if proc.poll() is not None or time.monotonic() > deadline:
                    # the JSON log on stderr is kept in a temp file only to explain a failure to start
                    tail = stderr_path.read_text(errors="replace")[-3000:]
                    raise BenchError(f"minik did not start (exit {proc.poll()}): stdout {''.join(seen)[-1000:]!r}"
                                     f"\nstderr tail:\n{tail}")
                time.sleep(0.05)
            yield Minik(found[0].rstrip("/"), benchlib.admin_endpoint(data_dir).token)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            stderr_path.unlink()


def count_pods(server: Minik) -> int | None:
    status, body = http("GET", server.url + "/api/v1/namespaces/default/pods", timeout=120, token=server.token)
    if status != 200:
        return None
    return sum(1 for item in json.loads(body).get("items", [])
               if item.get("metadata", {}).get("generateName") == "bench-")


def pod_creates(server: Minik, tmp: Path, seconds: float, threads: int, distinct: bool) -> dict[str, Any]:
    """Pods as one template makes them (the same spec every time), or with ``distinct`` each with a spec of its
    own (its image tag, with the wrk thread and a counter), which no memo of specs seen before can answer."""
    name = "creates-distinct" if distinct else "creates"
    script = lua_script(tmp, name, 201, request=LUA_DISTINCT_PODS, token=server.token) if distinct else \
        lua_script(tmp, name, 201, lua_static("POST", "/api/v1/namespaces/default/pods", POD_BODY), token=server.token)
    return run_wrk(server.url, script, seconds, threads)


def combine(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One result for the rounds of a measurement: counts summed, the rate over their total time, the median
    round's p50 and the worst round's p99."""
    total: dict[str, Any] = {k: sum(r[k] for r in rounds) for k in
                             ("requests", "ok", "bad", "connect", "read", "write", "status", "timeout", "seconds")}
    total["ok_per_second"] = total["ok"] / total["seconds"] if total["seconds"] else 0.0
    total["p50_us"] = statistics.median(r["p50_us"] for r in rounds)
    total["p99_us"] = max(r["p99_us"] for r in rounds)
    total["bad_sample"] = next((r["bad_sample"] for r in rounds if r.get("bad_sample")), None)
    total["rounds_per_second"] = [round(r["ok_per_second"]) for r in rounds]
    return total


def bench_writes(tmp: Path, duration: float, threads: int, rounds: int) -> dict[str, dict[str, Any]]:
    """etcd's puts and minik's creates (same spec, then distinct specs), in ``rounds`` interleaved slices of
    ``duration`` / ``rounds`` seconds each, against servers started once: a change in the machine's speed during
    the run (these VMs swing by a quarter within minutes) falls on the figure and its anchor alike."""
    seconds = max(MIN_SLICE_SECONDS, duration / rounds)
    names = ("etcd puts", "minik pod creates", "minik distinct pod creates")
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    with etcd_server(tmp) as etcd_url, minik(tmp, "creates") as same, minik(tmp, "creates-distinct") as distinct:
        for server in (same, distinct):
            status, body = http("POST", server.url + "/api/v1/namespaces/default/pods", POD_BODY, token=server.token)
            if status != 201:
                raise BenchError(f"minik pod create probe: {status} {body[:500]!r}")
        for round_ in range(rounds):
            for name, measure in zip(names, (
                    lambda round_=round_: etcd_puts(etcd_url, tmp, seconds, threads, round_),
                    lambda: pod_creates(same, tmp, seconds, threads, False),
                    lambda: pod_creates(distinct, tmp, seconds, threads, True))):
                results[name].append(measure())
                print(f"    round {round_ + 1}/{rounds} {name}: {describe(results[name][-1])}", file=sys.stderr,
                      flush=True)
        out = {name: combine(results[name]) for name in names}
        out["etcd puts"]["keys_stored"] = etcd_keys(etcd_url)
        for name, server in (("minik pod creates", same), ("minik distinct pod creates", distinct)):
            stored = count_pods(server)
            result = out[name]
            result["pods_listed"] = None if stored is None else stored - 1  # minus the probe
            # requests still in flight when wrk stops may commit without being counted: up to one per connection
            listed = result["pods_listed"]
            if listed is not None and not result["ok"] <= listed <= result["ok"] + CONNECTIONS * rounds:
                result["mismatch"] = f"wrk counted {result['ok']} creates (201) but the list has {listed}"
        return out


def bench_gets(server: Minik, tmp: Path, duration: float, threads: int) -> dict[str, Any]:
    body = POD_BODY.replace(b'"generateName":"bench-"', b'"name":"bench-get"')
    status, text = http("POST", server.url + "/api/v1/namespaces/default/pods", body, token=server.token)
    if status != 201:
        raise BenchError(f"minik pod create (for gets): {status} {text[:500]!r}")
    path = "/api/v1/namespaces/default/pods/bench-get"
    status, text = http("GET", server.url + path, token=server.token)
    if status != 200:
        raise BenchError(f"minik pod get probe: {status} {text[:500]!r}")
    return run_wrk(server.url, lua_script(tmp, "gets", 200, lua_static("GET", path, None), token=server.token),
                   duration, threads)


# ---------------------------------------------------------------------------------------------------------------
# watch latency: watchers in a child process, the paced writer here

class WatchReader(asyncio.Protocol):
    """One watch over a raw connection: sends the GET, reads the chunked body as it arrives and records, for every
    event carrying a send time, now minus that time. A protocol's ``data_received`` is called straight from the
    event loop's read, so the measuring side spends a few microseconds per read, not a task wake-up and a stream
    reader's copies: with 100 watchers on a 2-vCPU machine the watch client must not be what is measured."""

    def __init__(self, request: bytes, latencies: list[int], ready: Any, errors: list[str]) -> None:
        self.request = request
        self.latencies = latencies
        self.ready = ready
        self.errors = errors
        self.buffer = b""
        self.headers_done = False
        self.count = 0
        self.other = 0
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(self.request)  # type: ignore[attr-defined]  # uvloop's transports are not asyncio's classes

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def data_received(self, data: bytes) -> None:
        now = time.time_ns()
        buf = self.buffer + data if self.buffer else data
        pos = 0
        if not self.headers_done:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                self.buffer = buf
                return
            status_line = buf[:buf.find(b"\r\n")]
            if b" 200 " not in status_line + b" ":
                self.errors.append(f"HTTP {status_line!r}")
                self.ready(False)
                return
            if b"transfer-encoding: chunked" not in buf[:end].lower():
                self.errors.append("the watch response is not chunked")
                self.ready(False)
                return
            self.headers_done = True
            self.ready(True)
            pos = end + 4
        find, mark, mark_len, append = buf.find, SENT_MARK, len(SENT_MARK), self.latencies.append
        size_total = len(buf)
        while True:
            nl = find(b"\r\n", pos)
            if nl < 0:
                break
            size = int(buf[pos:nl], 16)
            if size == 0:  # the end of the body
                pos = size_total
                break
            start = nl + 2
            stop = start + size
            if stop + 2 > size_total:
                break
            found = 0
            at = find(mark, start, stop)
            while at >= 0:
                value = at + mark_len
                quote = find(b'"', value, stop)
                append(now - int(buf[value:quote]))
                found += 1
                at = find(mark, quote, stop)
            lines = buf.count(b"\n", start, stop)
            if lines != found:
                self.other += lines - found
                if b'"ERROR"' in buf[start:stop] and len(self.errors) < 5:
                    self.errors.append(buf[start:stop][:300].decode(errors="replace"))
            self.count += found
            pos = stop + 2
        self.buffer = buf[pos:] if pos < size_total else b""


async def watch_client(url: str, path: str, watchers: int) -> None:
    """Child process: open the watches (``path``, its "{i}" replaced by each watcher's number; the token from
    $BENCH_TOKEN), say READY, count until STOP on stdin, print one JSON line of results."""
    from urllib.parse import urlsplit

    latencies: list[int] = []
    errors: list[str] = []
    ready = [0]
    all_ready = asyncio.Event()
    failed = asyncio.Event()
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80

    token = os.environ.get("BENCH_TOKEN")
    authorization = f"Authorization: Bearer {token}\r\n" if token else ""

    def request(i: int) -> bytes:
        return (f"GET {path.replace('{i}', str(i))} HTTP/1.1\r\nHost: {host}:{port}\r\n{authorization}"
                f"Accept: application/json\r\n\r\n").encode()

    def on_ready(ok: bool) -> None:
        if not ok:
            failed.set()
            return
        ready[0] += 1
        if ready[0] == watchers:
            all_ready.set()

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def read_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "STOP":
                break
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=read_stdin, daemon=True).start()
    connections: list[tuple[asyncio.Transport, WatchReader]] = []
    for i in range(watchers):
        transport, protocol = await loop.create_connection(
            lambda i=i: WatchReader(request(i), latencies, on_ready, errors), host, port)
        connections.append((transport, protocol))  # type: ignore[arg-type]
    waiters = [asyncio.create_task(all_ready.wait()), asyncio.create_task(failed.wait())]
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED, timeout=60)
    for waiter in waiters:
        waiter.cancel()
    if all_ready.is_set():
        print("READY", flush=True)
    else:
        print("FAILED " + json.dumps({"ready": ready[0], "errors": errors[:5]}), flush=True)
    await stop.wait()
    for transport, _ in connections:
        transport.close()
    deliveries = [protocol.count for _, protocol in connections]
    latencies.sort()

    def pct(p: float) -> float | None:
        if not latencies:
            return None
        return latencies[min(len(latencies) - 1, int(len(latencies) * p / 100))] / 1e6

    print("RESULT " + json.dumps({
        "deliveries": len(latencies), "per_watcher_min": min(deliveries), "per_watcher_max": max(deliveries),
        "other_lines": sum(protocol.other for _, protocol in connections), "errors": errors[:5], "p50_ms": pct(50),
        "p90_ms": pct(90), "p99_ms": pct(99), "p999_ms": pct(99.9),
        "max_ms": latencies[-1] / 1e6 if latencies else None,
    }), flush=True)


class CreateConnection(asyncio.Protocol):
    """One keep-alive connection of the paced writer: a pre-built POST at a time, the response read by its
    Content-Length. A bare protocol for the reason WatchReader is one: at 1,000 creates/s an HTTP client library
    costs a fair share of one of the two vCPUs, and that CPU would be taken from the server being measured."""

    def __init__(self, idle: list[CreateConnection], results: WriterResults) -> None:
        self.idle = idle
        self.results = results
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.began = 0.0
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self.busy:
            self.results.fail(f"connection lost: {exc!r}")
        if self in self.idle:
            self.idle.remove(self)

    def send(self, request: bytes) -> None:
        assert self.transport is not None
        self.busy = True
        self.began = time.perf_counter()
        self.transport.write(request)

    def data_received(self, data: bytes) -> None:
        buf = self.buffer + data if self.buffer else data
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                break
            head = buf[:end]
            length = next((int(value) for name, _, value in (line.partition(b":") for line in head.split(b"\r\n"))
                           if name.strip().lower() == b"content-length"), None)
            if length is None:
                self.results.fail(f"a response without Content-Length: {head[:200]!r}")
                if self.transport is not None:
                    self.transport.close()
                return
            if len(buf) < end + 4 + length:
                break
            status = head[9:12]
            if status == b"201":
                self.results.ok(time.perf_counter() - self.began)
            else:
                self.results.fail(f"HTTP {status.decode(errors='replace')}: {buf[end + 4:end + 4 + length][:200]!r}")
            buf = buf[end + 4 + length:]
            self.busy = False
            self.idle.append(self)
        self.buffer = buf


class WriterResults:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.failed: list[str] = []
        self.failures = 0
        self.pending = 0
        self._drained: asyncio.Future[None] | None = None

    async def drained(self, timeout: float) -> None:
        """Wait until no create is waiting for its response (at most ``timeout`` seconds)."""
        if self.pending > 0:
            self._drained = asyncio.get_running_loop().create_future()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._drained, timeout)

    def ok(self, seconds: float) -> None:
        self.latencies.append(seconds)
        self._settle()

    def fail(self, why: str) -> None:
        self.failures += 1
        if len(self.failed) < 5:
            self.failed.append(why)
        self._settle()

    def _settle(self) -> None:
        self.pending -= 1
        if self.pending <= 0 and self._drained is not None and not self._drained.done():
            self._drained.set_result(None)


async def paced_writer(server: Minik, duration: float, rate: int) -> dict[str, Any]:
    """Creates configmaps at ``rate`` per second for ``duration`` seconds, each carrying its send time, over
    keep-alive connections (a new one only when every open one is waiting for its response, at most 256)."""
    from urllib.parse import urlsplit

    parts = urlsplit(server.url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    authorization = f"Authorization: Bearer {server.token}\r\n" if server.token else ""
    head = (f"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: {host}:{port}\r\n{authorization}"
            f"Content-Type: application/json\r\nAccept: application/json\r\n").encode()
    loop = asyncio.get_running_loop()
    results = WriterResults()
    idle: list[CreateConnection] = []
    connections: list[CreateConnection] = []

    async def connection() -> CreateConnection | None:
        while idle:
            conn = idle.pop()
            if conn.transport is not None and not conn.transport.is_closing():
                return conn
        if len(connections) >= 256:
            return None
        _, conn = await loop.create_connection(lambda: CreateConnection(idle, results), host, port)
        connections.append(conn)
        return conn

    started = time.perf_counter()
    sent = 0
    skipped = 0
    total = int(duration * rate)
    while sent + skipped < total:
        due = min(int((time.perf_counter() - started) * rate) + 1, total)
        while sent + skipped < due:
            conn = await connection()
            if conn is None:  # 256 requests outstanding: the server is not keeping up; count it as failed
                skipped += 1
                continue
            body = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"w-"},"data":{"'
                    + SENT_KEY.encode() + b'":"' + str(time.time_ns()).encode() + b'"}}')
            results.pending += 1
            conn.send(head + b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
            sent += 1
        # at least a millisecond: the event loop's timers count whole milliseconds, and a shorter sleep rounds
        # down to none, so the writer would spin (about a fifth of a vCPU) on the cores it shares with the server
        await asyncio.sleep(max(0.001, started + (sent + skipped) / rate - time.perf_counter()))
    issued_seconds = time.perf_counter() - started
    await results.drained(30)
    elapsed = time.perf_counter() - started
    latencies = sorted(results.latencies)
    failures, samples, unanswered = results.failures, list(results.failed), results.pending
    for conn in connections:
        if conn.transport is not None:
            conn.transport.close()
    return {"issued": sent, "ok": len(latencies), "skipped_at_256_outstanding": skipped,
            "failed": failures, "failed_samples": samples, "unanswered_after_30s": unanswered,
            "connections": len(connections),
            "issue_seconds": issued_seconds, "seconds": elapsed,
            "achieved_per_second": len(latencies) / max(elapsed, issued_seconds),
            "create_p50_ms": latencies[len(latencies) // 2] * 1000 if latencies else None,
            "create_p99_ms": latencies[int(len(latencies) * 0.99)] * 1000 if latencies else None}


@contextlib.contextmanager
def watch_clients(server: Minik, path: str, watchers: int) -> Iterator[dict[str, Any]]:
    """``watchers`` watches of ``path`` open in a child process (watch_client) while the block runs; the dict it
    yields gets the child's results when the block ends (after a second for the last events to arrive)."""
    args = [sys.executable, __file__, "--_watch-client", server.url, path, str(watchers)]
    env = {**os.environ, "BENCH_TOKEN": server.token or ""}  # not in the arguments, which anyone may read
    # the client's stderr goes to a file, not a pipe nobody reads while it runs (a full pipe would stall it)
    with tempfile.TemporaryFile(mode="w+") as errors, \
            spawned(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True, env=env) as proc:
        def tail() -> str:
            errors.seek(0)
            return errors.read()[-2000:]

        assert proc.stdin is not None and proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("READY"):
            raise BenchError(f"watch client: {line.strip()!r} {tail() if proc.poll() is not None else ''}")
        result: dict[str, Any] = {}
        yield result
        time.sleep(1.0)
        proc.stdin.write("STOP\n")
        proc.stdin.flush()
        for line in proc.stdout:
            if line.startswith("RESULT "):
                result.update(json.loads(line[len("RESULT "):]))
                break
        else:
            raise BenchError(f"watch client gave no result: {tail()}")


def bench_watch(server: Minik, duration: float) -> dict[str, Any]:
    status, body = http("GET", server.url + "/api/v1/namespaces/default/configmaps?limit=1", token=server.token)
    if status != 200:
        raise BenchError(f"minik configmap list: {status} {body[:500]!r}")
    rv = json.loads(body)["metadata"]["resourceVersion"]
    with watch_clients(server, f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}",
                       WATCHERS) as result:
        writer = run_loop(paced_writer(server, duration, WRITE_RATE))
    result["writer"] = writer
    result["expected_deliveries"] = writer["ok"] * WATCHERS
    return result


def bench_node_watches(tmp: Path, duration: float, threads: int) -> dict[str, Any]:
    """Pod creates/s while 100 watches select pods by spec.nodeName, one node each, as kubelets watch (none of
    these pods is on their nodes, so each watch only tests and drops every event), against the creates/s of the
    same server without them: slices without, with, and without again (the anchor is the mean of the two)."""
    seconds = max(MIN_SLICE_SECONDS, duration / 3)
    with minik(tmp, "node-watches") as server:
        before = pod_creates(server, tmp, seconds, threads, False)
        with watch_clients(server, "/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dnode-{i}",
                           WATCHERS) as watched:
            during = pod_creates(server, tmp, seconds, threads, False)
        after = pod_creates(server, tmp, seconds, threads, False)
    if watched.get("errors") or watched.get("deliveries"):
        raise BenchError(f"node watches: {watched}")
    without = [r.get("ok_per_second") for r in (before, after)]
    return {**during, "without_per_second": statistics.mean(without) if all(without) else None,
            "without_slices": without}


def rbac_account(server: Minik, extra_bindings: int) -> Minik:
    """The benchmark's non-admin writer on ``server``: a service account ``bench`` in default bound to ``edit`` by a
    RoleBinding, with ``extra_bindings`` more RoleBindings in the same namespace (each of another user), and its
    token from the TokenRequest API (what a pod's client would send)."""
    def call(method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        status, text = http(method, server.url + path, json.dumps(body).encode(), token=server.token)
        if status not in (200, 201):
            raise BenchError(f"{method} {path}: {status} {text[:300]!r}")
        return dict(json.loads(text))

    def binding(name: str, subject: dict[str, str]) -> dict[str, Any]:
        return {"metadata": {"name": name, "labels": {"bench": "rbac"}},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                "subjects": [subject]}

    bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
    call("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "bench"}})
    call("POST", bindings, binding("bench", {"kind": "ServiceAccount", "name": "bench", "namespace": "default"}))
    for i in range(extra_bindings):
        call("POST", bindings, binding(f"other-{i}", {"kind": "User", "name": f"user-{i}",
                                                      "apiGroup": "rbac.authorization.k8s.io"}))
    answer = call("POST", "/api/v1/namespaces/default/serviceaccounts/bench/token",
                  {"spec": {"expirationSeconds": 86400}})
    return Minik(server.url, answer["status"]["token"])


def bench_rbac(tmp: Path, duration: float, threads: int, rounds: int) -> dict[str, Any]:
    """Pod creates/s by a service account that RBAC authorizes, on a server with RBAC_BINDINGS other RoleBindings,
    against the same account's creates on a server without them, in interleaved rounds that alternate which goes
    first (the servers started once, the same way)."""
    seconds = max(MIN_SLICE_SECONDS, duration / rounds)
    with minik(tmp, "rbac-none") as plain, minik(tmp, "rbac-many") as busy:
        writers = {"without": rbac_account(plain, 0), "with": rbac_account(busy, RBAC_BINDINGS)}
        for writer in writers.values():
            status, body = http("POST", writer.url + "/api/v1/namespaces/default/pods", POD_BODY, token=writer.token)
            if status != 201:
                raise BenchError(f"a create by the bound service account: {status} {body[:500]!r}")
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in writers}
        for round_ in range(rounds):
            # each round swaps which server goes first, so a machine slowing down (or speeding up) through the run
            # falls on both alike
            for name in (("without", "with") if round_ % 2 == 0 else ("with", "without")):
                writer = writers[name]
                results[name].append(pod_creates(writer, tmp, seconds, threads, False))
                print(f"    round {round_ + 1}/{rounds} RBAC creates {name} {RBAC_BINDINGS:,} bindings: "
                      f"{describe(results[name][-1])}", file=sys.stderr, flush=True)
    during, without = combine(results["with"]), combine(results["without"])
    return {**during, "without_per_second": without["ok_per_second"], "without": without}


# ---------------------------------------------------------------------------------------------------------------
# the run

def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def fmt(x: Any, digits: int = 0) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measurement (default 10)")
    parser.add_argument("--json", type=Path, default=None, help="also write the table and details as JSON here")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved rounds of etcd puts and minik creates (default 3; each gets "
                             "duration / rounds seconds, at least 3)")
    parser.add_argument("--wrk-threads", type=int, default=1, help="wrk threads (default 1; 32 connections)")
    parser.add_argument("--_hello-server", dest="hello_server", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--_watch-client", dest="watch_client", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hello_server is not None:
        hello_server(args.hello_server)
        return 0
    if args.watch_client is not None:
        url, path, n = args.watch_client
        run_loop(watch_client(url, path, int(n)))
        return 0
    for tool in ("etcd", "wrk"):
        if shutil.which(tool) is None:
            print(f"bench_api: {tool} is not on PATH (Debian: apt-get install -y etcd-server wrk)", file=sys.stderr)
            return 2

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks on SIGTERM too
    duration, threads = args.duration, args.wrk_threads
    details: dict[str, Any] = {}
    began = time.monotonic()

    def step(name: str, fn: Any, *a: Any) -> Any:
        print(f"... {name}", file=sys.stderr, flush=True)
        try:
            details[name] = fn(*a)
            if isinstance(details[name], dict) and "ok_per_second" in details[name]:
                print(f"    {describe(details[name])}", file=sys.stderr, flush=True)
        except BenchError as exc:
            print(f"    FAILED: {exc}", file=sys.stderr, flush=True)
            details[name] = {"error": str(exc)}
        return details[name]

    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp_name:
        tmp = Path(tmp_name)
        writes = step("etcd puts and minik pod creates", bench_writes, tmp, duration, threads, args.rounds)
        for name in ("etcd puts", "minik pod creates", "minik distinct pod creates"):
            details[name] = writes.get(name, writes)
            if "ok_per_second" in details[name]:
                print(f"    {name}: {describe(details[name])}", file=sys.stderr, flush=True)
        del details["etcd puts and minik pod creates"]
        step("aiohttp hello", bench_hello, duration, threads, tmp)
        step("minik pod creates beside node watches", bench_node_watches, tmp, duration, threads)
        step("minik pod creates authorized by RBAC", bench_rbac, tmp, duration, threads, args.rounds)
        try:
            with minik(tmp, "gets-watch") as server:
                step("minik pod gets", bench_gets, server, tmp, duration, threads)
                step("minik watch", bench_watch, server, duration)
        except BenchError as exc:
            print(f"    FAILED: {exc}", file=sys.stderr, flush=True)
            details.setdefault("minik pod gets", {"error": str(exc)})
            details.setdefault("minik watch", {"error": str(exc)})

    etcd, creates = details["etcd puts"], details["minik pod creates"]
    hello, gets, watch = details["aiohttp hello"], details["minik pod gets"], details["minik watch"]
    etcd_rate, create_rate = etcd.get("ok_per_second"), creates.get("ok_per_second")
    if creates.get("mismatch"):
        create_rate = None  # the count could not be verified
    hello_rate, get_rate = hello.get("ok_per_second"), gets.get("ok_per_second")
    writer = watch.get("writer", {})
    achieved = writer.get("achieved_per_second")
    r_create, r_get = ratio(create_rate, etcd_rate), ratio(get_rate, hello_rate)
    distinct = details["minik distinct pod creates"]
    distinct_rate = None if distinct.get("mismatch") else distinct.get("ok_per_second")
    p50, p99 = watch.get("p50_ms"), watch.get("p99_ms")
    nodes = details["minik pod creates beside node watches"]
    nodes_rate, nodes_anchor = nodes.get("ok_per_second"), nodes.get("without_per_second")
    rbac = details["minik pod creates authorized by RBAC"]
    rbac_rate, rbac_anchor = rbac.get("ok_per_second"), rbac.get("without_per_second")
    r_rbac = ratio(rbac_rate, rbac_anchor)
    rows = [
        {"figure": "minik pod creates/s (HTTP, 32 conns, sync FULL)", "value": create_rate,
         "anchor": "etcd 3.4 puts/s (HTTP gateway, 1 KiB, 32 conns)", "anchor_value": etcd_rate,
         "ratio": r_create, "goal": "ratio >= 1.0", "met": None if r_create is None else r_create >= 1.0},
        {"figure": "  the same, every pod's spec distinct", "value": distinct_rate,
         "anchor": "etcd 3.4 puts/s (as above)", "anchor_value": etcd_rate,
         "ratio": ratio(distinct_rate, etcd_rate), "goal": None, "met": None},
        {"figure": "  the same, beside 100 watches by spec.nodeName", "value": nodes_rate,
         "anchor": "the same server without them", "anchor_value": nodes_anchor,
         "ratio": ratio(nodes_rate, nodes_anchor), "goal": None, "met": None},
        {"figure": f"  the same, by a service account RBAC authorizes, {RBAC_BINDINGS:,} RoleBindings stored",
         "value": rbac_rate, "anchor": "the same account's creates without them", "anchor_value": rbac_anchor,
         "ratio": r_rbac, "goal": "ratio >= 0.95", "met": None if r_rbac is None else r_rbac >= 0.95},
        {"figure": "minik pod gets/s (one pod, 32 conns)", "value": get_rate,
         "anchor": "aiohttp hello-world req/s (32 conns)", "anchor_value": hello_rate,
         "ratio": r_get, "goal": None, "met": None},
        {"figure": "watch latency p50 ms (100 watchers, 1000 writes/s)", "value": p50,
         "anchor": None, "anchor_value": None, "ratio": None, "goal": None, "met": None},
        {"figure": "watch latency p99 ms (100 watchers, 1000 writes/s)", "value": p99,
         "anchor": None, "anchor_value": None, "ratio": None, "goal": "p99 <= 10 ms",
         "met": None if p99 is None else p99 <= 10.0},
        {"figure": "watch writer achieved writes/s", "value": achieved,
         "anchor": "target writes/s", "anchor_value": float(WRITE_RATE), "ratio": ratio(achieved, WRITE_RATE),
         "goal": ">= 990/s", "met": None if achieved is None else achieved >= 0.99 * WRITE_RATE},
        {"figure": "watch deliveries", "value": watch.get("deliveries"),
         "anchor": "expected (writes x 100)", "anchor_value": watch.get("expected_deliveries"),
         "ratio": ratio(watch.get("deliveries"), watch.get("expected_deliveries")), "goal": "all delivered",
         "met": None if watch.get("deliveries") is None
         else watch.get("deliveries") == watch.get("expected_deliveries")},
    ]
    total = time.monotonic() - began

    headers = ["figure", "value", "anchor", "anchor value", "ratio", "goal", "met"]
    table = []
    for row in rows:
        digits = 2 if isinstance(row["value"], float) and row["value"] < 100 else 0
        table.append([row["figure"], fmt(row["value"], digits), row["anchor"] or "-",
                      fmt(row["anchor_value"]), fmt(row["ratio"], 2), row["goal"] or "-",
                      "-" if row["met"] is None else ("yes" if row["met"] else "no")])
    widths = [max(len(h), *(len(r[i]) for r in table)) for i, h in enumerate(headers)]
    right = {1, 3, 4}

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    cpu = platform.processor() or platform.machine()
    print(f"\nbench_api: {duration:g}s per measurement, {os.cpu_count()} CPUs ({cpu}), Python "
          f"{platform.python_version()}, wrk -t{threads} -c{CONNECTIONS}, total {total:.0f}s")
    print(line(headers))
    print(line(["-" * w for w in widths]))
    for cells in table:
        print(line(cells))
    notes = []
    if watch.get("p50_ms") is not None:
        notes.append(f"watch: {watch['deliveries']:,} deliveries (per watcher {watch['per_watcher_min']:,}-"
                     f"{watch['per_watcher_max']:,}), p90 {watch['p90_ms']:.2f} ms, p99.9 {watch['p999_ms']:.2f} ms, "
                     f"max {watch['max_ms']:.2f} ms; writer create p50 {fmt(writer.get('create_p50_ms'), 2)} ms, "
                     f"p99 {fmt(writer.get('create_p99_ms'), 2)} ms")
    if nodes.get("without_slices"):
        notes.append("beside node watches: creates/s without them, before and after: " +
                     ", ".join(fmt(x) for x in nodes["without_slices"]))
    per_round = [d.get("rounds_per_second") for d in (etcd, creates, distinct)]
    if all(per_round) and all(per_round[0]):
        pairs = zip(*per_round)
        notes.append("per round (etcd puts/s, creates/s, distinct creates/s: ratios): " + "; ".join(
            f"{e:,}, {c:,}, {d:,}: {c / e:.2f}, {d / e:.2f}" for e, c, d in pairs))
    if rbac_rate is not None and etcd_rate:
        notes.append(f"RBAC creates against etcd puts: {rbac_rate / etcd_rate:.2f}x (without the bindings "
                     f"{fmt(ratio(rbac_anchor, etcd_rate), 2)}x)")
    for name in ("etcd puts", "minik pod creates", "minik distinct pod creates",
                 "minik pod creates beside node watches", "minik pod creates authorized by RBAC", "aiohttp hello",
                 "minik pod gets", "minik watch"):
        d = details[name]
        if "error" in d:
            notes.append(f"{name}: FAILED: {d['error']}")
        elif d.get("mismatch"):
            notes.append(f"{name}: {d['mismatch']}")
        elif d.get("bad"):
            notes.append(f"{name}: {d['bad']:,} non-expected statuses, first: {d.get('bad_sample')}")
        if name == "minik watch" and d.get("errors"):
            notes.append(f"{name}: {d['errors']}")
        if name == "minik watch" and writer.get("failed_samples"):
            notes.append(f"{name} writer failures: {writer['failed_samples']}")
    for note in notes:
        print("  " + note)
    if args.json is not None:
        args.json.write_text(json.dumps({
            "duration_seconds": duration, "total_seconds": total, "cpus": os.cpu_count(),
            "python": platform.python_version(), "wrk": {"threads": threads, "connections": CONNECTIONS},
            "rows": rows, "details": details}, indent=2, default=str) + "\n")
        print(f"  wrote {args.json}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("bench_api: interrupted", file=sys.stderr)
        sys.exit(130)
