"""Fuzzing the API with hypothesis: malformed and hostile requests to every route the server's own /openapi/v3
describes, each checked for three things: no 5xx, the server keeps serving, and a rejected request (4xx) stores
nothing (the store's revision does not move).

The cluster runs in a thread of its own (its own event loop) and requests go over real HTTPS with the admin
token (some with no token or a forged one), one at a time, so the revision before and after each request tells
exactly what it stored. Used by tests/apiserver/test_fuzz.py (a small budget) and scripts/fuzz_api.py (100,000
requests).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import ssl
import tempfile
import threading
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

JSON_TYPES = ("application/json", "application/merge-patch+json", "application/json-patch+json",
              "application/strategic-merge-patch+json", "application/apply-patch+yaml", "application/yaml",
              "text/plain", "application/x-www-form-urlencoded", "application/vnd.kubernetes.protobuf", "",
              "application/json; charset=utf-16", "*/*")
KEYS = ("metadata", "spec", "status", "name", "namespace", "labels", "annotations", "containers", "image",
        "replicas", "selector", "matchLabels", "template", "ports", "finalizers", "ownerReferences",
        "resourceVersion", "uid", "generateName", "deletionTimestamp", "deletionGracePeriodSeconds", "type", "data",
        "items", "op", "path", "value", "from", "$patch", "$retainKeys", "$setElementOrder/containers",
        "$deleteFromPrimitiveList/finalizers", "kind", "apiVersion", "nodeName", "target", "securityContext",
        "privileged", "hostNetwork", "volumes", "managedFields", "clusterIP", "clusterIPs", "nodePort",
        "leaseDurationSeconds", "holderIdentity", "preconditions", "gracePeriodSeconds", "propagationPolicy")
HOSTILE_STRINGS = ("", "-1", "0", "1", "9" * 40, "-" + "9" * 30, "1e309", "NaN", "0x10", " ", "\x00", "%00",
                   "\u202e", "a" * 300, "true", "false", "null", "=", "!=", "in (a,b", "a=b,", "!a,b notin (", "..",
                   "../../etc/passwd", "*", "All", "Strict", "Warn", "Ignore", "Foreground", "Orphan", "Exact",
                   "NotOlderThan", "metadata.name=x", "spec.nodeName!=", "status.phase=Running", "\ud7ff", "é")
HOSTILE_BODIES = (b"", b"{", b"[", b"null", b"0", b'"x"', b"\xff\xfe\x00", b"{}" * 3, b'{"a":1,"a":2}',
                  b"a: &a [*a, *a]\nb: *a\n", b"- &x [1]\n- *x\n", b"[" * 5000 + b"]" * 5000,
                  b'{"metadata":' * 200 + b"1" + b"}" * 200, b'{"n": 1e99999}', b'{"n": NaN}',
                  b"--- !!python/object/apply:os.system ['true']", b"%YAML 1.1\n---\n!!binary AAAA",
                  b'{"metadata": {"name": "\\ud800"}}', b'{"apiVersion": "v1", "kind": "Status"}')
ACCEPTS = ("application/json;as=Table;v=v1;g=meta.k8s.io", "text/html", "application/yaml",
           "application/vnd.kubernetes.protobuf", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
           "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1,application/json",
           "application/json;as=Unknown;g=meta.k8s.io;v=v1", "*/*;q=0.1,application/json;as=Table;g=meta.k8s.io;v=v1")
QUERY_NAMES = ("dryRun", "fieldValidation", "fieldManager", "force", "gracePeriodSeconds", "propagationPolicy",
               "orphanDependents", "pretty", "watch", "limit", "continue", "timeoutSeconds", "resourceVersion",
               "labelSelector", "fieldSelector", "allowWatchBookmarks", "sendInitialEvents", "resourceVersionMatch")


@dataclass(frozen=True)
class Route:
    path: str
    method: str
    params: tuple[str, ...]
    api_version: str
    kind: str


@dataclass
class FuzzRequest:
    method: str
    path: str
    query: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None

    def describe(self) -> str:
        query = urllib.parse.urlencode(self.query)
        return f"{self.method} {self.path}{'?' + query if query else ''} {self.headers} {self.body!r:.300}"


def routes(documents: dict[str, dict[str, Any]]) -> list[Route]:
    """Every (path, method) of the OpenAPI v3 documents (group-version path -> document)."""
    found = []
    for doc in documents.values():
        for path, item in (doc.get("paths") or {}).items():
            for method, op in item.items():
                if method == "parameters" or not isinstance(op, dict):
                    continue
                gvk = op.get("x-kubernetes-group-version-kind") or {}
                group, version = gvk.get("group", ""), gvk.get("version", "v1")
                params = tuple(p.get("name", "") for p in op.get("parameters") or [] if isinstance(p, dict))
                found.append(Route(path, method.upper(), params, f"{group}/{version}" if group else version,
                                   str(gvk.get("kind", ""))))
    return sorted(found, key=lambda r: (r.path, r.method))


def json_values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70),
                        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
                        st.sampled_from(HOSTILE_STRINGS))
    keys = st.one_of(st.sampled_from(KEYS), st.text(max_size=12))
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(keys, inner, max_size=5)), max_leaves=12)


def _names() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(("x", "default", "kube-system", "fuzz", "kubernetes", "nope", "a.b", "A",
                                      "-x", "x" * 254, "%2F", "..")),
                     st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=20))


@st.composite
def _object(draw: st.DrawFn, route: Route, name: str) -> Any:
    """Something close to a valid object of the route's kind, with random parts."""
    obj: dict[str, Any] = {"apiVersion": route.api_version, "kind": route.kind, "metadata": {"name": name}}
    if draw(st.booleans()):
        obj["metadata"].update(draw(st.dictionaries(st.sampled_from(KEYS), json_values(), max_size=3)))
    if draw(st.booleans()):
        obj["spec"] = draw(json_values())
    if draw(st.booleans()):
        obj[draw(st.sampled_from(KEYS))] = draw(json_values())
    return obj


@st.composite
def fuzz_requests(draw: st.DrawFn, all_routes: list[Route], token: str) -> FuzzRequest:
    route = draw(st.sampled_from(all_routes))
    name = draw(_names())
    path = route.path.replace("{namespace}", draw(st.one_of(st.sampled_from(("default", "fuzz", "nope",
                                                                             "kube-system")), _names())))
    path = path.replace("{name}", urllib.parse.quote(name, safe=""))
    if draw(st.integers(0, 20)) == 0:
        path += draw(st.sampled_from(("/", "/x", "/status/x", "//", "/..", "/%00")))
    method = route.method if draw(st.integers(0, 10)) else draw(st.sampled_from(
        ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE")))
    names = list(route.params) + list(QUERY_NAMES)
    query = draw(st.lists(st.tuples(st.one_of(st.sampled_from(names), st.text(max_size=10)),
                                    st.one_of(st.sampled_from(HOSTILE_STRINGS), st.text(max_size=30),
                                              st.integers(-(10 ** 20), 10 ** 20).map(str))), max_size=4))
    if any(k == "watch" for k, _ in query) or "/watch/" in path:
        query = [(k, v) for k, v in query if k != "timeoutSeconds"] + [("timeoutSeconds", "1")]
    headers = {"Authorization": f"Bearer {token}"}
    auth = draw(st.integers(0, 30))
    if auth == 0:
        del headers["Authorization"]
    elif auth == 1:
        headers["Authorization"] = draw(st.sampled_from(("Bearer ", "Basic YTpi", "Bearer abcdef.0123456789abcdef",
                                                         f"Bearer {token}x", "bearer " + token)))
    if draw(st.integers(0, 5)) == 0:
        headers["Accept"] = draw(st.sampled_from(ACCEPTS))
    body = None
    if method in ("POST", "PUT", "PATCH") or draw(st.integers(0, 10)) == 0:
        headers["Content-Type"] = draw(st.sampled_from(JSON_TYPES))
        kind = draw(st.integers(0, 3))
        if kind == 0:
            body = draw(st.sampled_from(HOSTILE_BODIES))
        elif kind == 1:
            body = json.dumps(draw(json_values())).encode()
        else:
            body = json.dumps(draw(_object(route, name))).encode()
    return FuzzRequest(method, path, query, headers, body)


# -- the cluster under test, in a thread of its own --------------------------------------------------------------
class ClusterThread:
    """A cluster (HTTPS, no components) served from its own thread and event loop, for synchronous callers."""

    def __init__(self, data_dir: Path | None = None) -> None:
        self._tmp = tempfile.TemporaryDirectory() if data_dir is None else None
        self.data_dir = data_dir or Path(self._tmp.name)  # type: ignore[union-attr]
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="fuzzed-cluster", daemon=True)
        self.cluster: Any = None

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # noqa: BLE001 - reported to the caller
            self._error = exc
            self._ready.set()

    async def _serve(self) -> None:
        from minik.cluster import COMPONENTS, Cluster, ClusterSettings

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self.cluster = Cluster(ClusterSettings(data_dir=self.data_dir, port=0, synchronous="NORMAL",
                                               disabled=frozenset(COMPONENTS)))
        await self.cluster.start()
        try:
            self._ready.set()
            await self._stop.wait()
        finally:
            await self.cluster.stop()

    def __enter__(self) -> ClusterThread:
        self._thread.start()
        self._ready.wait(60)
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)
        if self._tmp is not None:
            self._tmp.cleanup()

    @property
    def revision(self) -> int:
        return int(self.cluster.store.revision)

    @property
    def token(self) -> str:
        return str(self.cluster.admin_token)

    def connection(self) -> http.client.HTTPSConnection:
        context = ssl.create_default_context(cadata=self.cluster.credentials.ca_pem.decode())
        return http.client.HTTPSConnection("127.0.0.1", self.cluster.port, context=context, timeout=30)

    def openapi(self) -> dict[str, dict[str, Any]]:
        conn = self.connection()
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            conn.request("GET", "/openapi/v3", headers=headers)
            index = json.loads(conn.getresponse().read())
            docs = {}
            for path in index["paths"]:
                conn.request("GET", f"/openapi/v3/{path}", headers=headers)
                docs[path] = json.loads(conn.getresponse().read())
            return docs
        finally:
            conn.close()


class Fuzzer:
    """Sends requests one at a time over one kept-alive connection and checks each."""

    def __init__(self, target: ClusterThread) -> None:
        self.target = target
        self.conn = target.connection()
        self.sent = 0
        self.failures: list[str] = []

    def send(self, request: FuzzRequest) -> tuple[int, bytes]:
        query = urllib.parse.urlencode(request.query)
        url = urllib.parse.quote(request.path, safe="/%:@") + ("?" + query if query else "")
        for attempt in (1, 2):
            try:
                self.conn.request(request.method, url, body=request.body, headers=request.headers)
                response = self.conn.getresponse()
                streamed = response.getheader("Transfer-Encoding") == "chunked" and response.status == 200
                body = response.read(1 << 20) if request.method != "HEAD" and not streamed else b""
                if streamed or response.will_close:
                    self.conn.close()  # a watch (not read to its end), or a connection the server closes
                    self.conn = self.target.connection()
                return response.status, body
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = self.target.connection()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def check(self, request: FuzzRequest) -> str | None:
        """Send one request; the problem with its answer, or None."""
        before = self.target.revision
        try:
            status, body = self.send(request)
        except (http.client.HTTPException, OSError) as exc:  # the server dropped the connection: a failure
            status, body = 599, f"no answer: {type(exc).__name__}: {exc}".encode()
        after = self.target.revision
        self.sent += 1
        problem = None
        if status == 504 and b"Too large resource version" in body:
            pass  # Kubernetes' answer to a resourceVersion the store has not reached (after waiting for it)
        elif status >= 500:
            problem = f"HTTP {status}: {body[:300]!r}" if status != 599 else body.decode()
        elif status >= 400 and after != before:
            problem = f"HTTP {status} but the store moved from revision {before} to {after}: {body[:200]!r}"
        if problem is not None:
            problem = f"{problem} for {request.describe()}"
            self.failures.append(problem)
        return problem

    def still_serving(self) -> bool:
        status, _ = self.send(FuzzRequest("GET", "/readyz"))
        created, _ = self.send(FuzzRequest("POST", "/api/v1/namespaces/default/configmaps", [],
                                           {"Authorization": f"Bearer {self.target.token}",
                                            "Content-Type": "application/json"},
                                           json.dumps({"metadata": {"generateName": "alive-"}}).encode()))
        return status == 200 and created == 201

    def close(self) -> None:
        self.conn.close()
