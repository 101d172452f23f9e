"""pods/log, pods/exec and pods/attach: the API server finds the pod's node and relays the request to that
node's kubelet (its InternalIP and status.daemonEndpoints.kubeletEndpoint.Port), as kube-apiserver does.

Logs come back as a text/plain stream through the transport-free pipeline (``ApiResponse.stream``). Exec and
attach are WebSockets: the pipeline authenticates, authorizes and checks the request, then hands the HTTP transport an
``upgrade`` that connects to the kubelet with the client's subprotocols (v5.channel.k8s.io...) and relays the
messages both ways until either side closes.
"""

from __future__ import annotations

import asyncio
import math
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson
import structlog
from aiohttp import web

from minik.aio import start_task, stop_task
from minik.api import remotecommand as rc
from minik.api.errors import StatusError, bad_request, method_not_allowed, not_found
from minik.api.params import parse_int64
from minik.api.podcontainers import bound_node, resolve_container
from minik.api.timestamps import parse_rfc3339
from minik.apiserver.admission import ObjectReader
from minik.apiserver.admission.node_restriction import MIRROR_ANNOTATION
from minik.apiserver.request import ApiRequest, ApiResponse
from minik.apiserver.requestinfo import RequestInfo

log = structlog.get_logger("minik.apiserver.podproxy")

Obj = dict[str, Any]

KUBELET_PORT = 10250
_CONNECT_SECONDS = 5.0
_LOG_FLAGS = ("follow", "timestamps", "previous")


def _unavailable(what: str, exc: BaseException) -> StatusError:
    return StatusError(503, "ServiceUnavailable", f"{what}: {exc or type(exc).__name__}")


def _log_query(query: Mapping[str, str]) -> dict[str, str]:
    """PodLogOptions from the query, checked as Kubernetes checks them, as the kubelet's query."""
    out = {flag: "true" for flag in _LOG_FLAGS if query.get(flag, "").lower() in ("true", "1")}
    for name, minimum in (("tailLines", 0), ("sinceSeconds", 1), ("limitBytes", 1)):
        value = query.get(name)
        if value in (None, ""):
            continue
        number = parse_int64(name, value)
        if number < minimum:
            raise StatusError(422, "Invalid", f'PodLogOptions "" is invalid: {name}: Invalid value: {number}: must '
                              f"be greater than {'or equal to ' if minimum == 0 else ''}{minimum - (minimum > 0)}")
        out[name] = str(number)
    if query.get("sinceTime"):
        if "sinceSeconds" in out:
            raise StatusError(422, "Invalid", 'PodLogOptions "" is invalid: sinceSeconds: Forbidden: at most one of '
                                              "`sinceTime` or `sinceSeconds` may be specified")
        try:
            since = parse_rfc3339(query["sinceTime"])
        except ValueError:
            raise bad_request(f"sinceTime: Invalid value: {query['sinceTime']!r}: must be RFC 3339") from None
        out["sinceSeconds"] = str(max(1, math.ceil(time.time() - since)))
    return out


@dataclass(frozen=True)
class KubeletTarget:
    """Where a node's kubelet answers and what to present to it."""

    base_url: str
    ssl: ssl.SSLContext | bool
    server_hostname: str
    """The name the kubelet's serving certificate must carry: the node's name, whatever address the Node gives
    (so a node that points its address at another node's kubelet does not get that kubelet's answers)."""


class PodProxy:
    def __init__(self, reader: ObjectReader, kubelet_tls: Callable[[], ssl.SSLContext] | None = None) -> None:
        """``kubelet_tls`` makes the context kubelets are called with (the API server's client certificate, the
        cluster CA), on the first call; without it the kubelet's certificate is checked against the system's
        CAs, and no client certificate is presented."""
        self.reader = reader
        self._make_tls = kubelet_tls
        self._tls: ssl.SSLContext | None = None

    def tls(self) -> ssl.SSLContext | bool:
        if self._make_tls is None:
            return True
        if self._tls is None:
            try:
                self._tls = self._make_tls()
            except (OSError, ValueError) as exc:  # unreadable DATA_DIR/pki (ssl.SSLError is an OSError)
                log.error("no credentials for kubelets", error=str(exc))
                raise _unavailable("the API server has no credentials for kubelets", exc) from None
        return self._tls

    async def handle(self, info: RequestInfo, request: ApiRequest) -> ApiResponse:
        name, namespace = info.name or "", info.namespace
        pod = self.reader.get("", "v1", "pods", namespace, name)
        if pod is None:
            raise not_found("pods", "", name)
        if info.subresource == "log":
            if info.verb != "get":
                raise method_not_allowed(f"the server does not allow this method on the requested resource "
                                         f"({request.method})")
            return await self._logs(pod, request)
        return self._stream(pod, request, info.subresource or "exec")

    def _kubelet(self, pod: Obj) -> KubeletTarget:
        node_name = bound_node(pod)
        node = self.reader.get("", "v1", "nodes", None, node_name)
        if node is None:
            raise not_found("nodes", "", node_name)
        status = node.get("status") or {}
        addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
        host = addresses.get("InternalIP") or addresses.get("Hostname") or node_name
        port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port") or KUBELET_PORT
        return KubeletTarget(f"https://{f'[{host}]' if ':' in host else host}:{port}", self.tls(), node_name)

    #: the kubelet of the pod's node (pods/portforward's relay, ``minik.apiserver.portforward``)
    kubelet = _kubelet

    @staticmethod
    def _path(kind: str, pod: Obj, container: str) -> str:
        meta = pod["metadata"]
        return f"/{kind}/{quote(meta['namespace'])}/{quote(meta['name'])}/{quote(container)}"

    # -- logs -------------------------------------------------------------------------------------------------
    async def _logs(self, pod: Obj, request: ApiRequest) -> ApiResponse:
        container = resolve_container(pod, request.query.get("container"))
        query = _log_query(request.query)
        target = self._kubelet(pod)
        url = target.base_url + self._path("containerLogs", pod, container)
        session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_SECONDS))
        try:
            response = await session.get(url, params=query, ssl=target.ssl, server_hostname=target.server_hostname)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            await session.close()
            raise _unavailable(f'Get "{url}"', exc) from None
        if response.status != 200:
            body = await response.read()
            response.close()
            await session.close()
            raise _kubelet_error(response.status, body)
        return ApiResponse(200, content_type="text/plain", stream=_relay_body(response, session))

    # -- exec and attach --------------------------------------------------------------------------------------
    def _stream(self, pod: Obj, request: ApiRequest, kind: str) -> ApiResponse:
        """``kind``: exec (a command started in the container) or attach (the container's own process)."""
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            action = "exec into" if kind == "exec" else "attach"
            raise bad_request(f"cannot {action} a container in a completed pod; current phase is {phase}")
        container = resolve_container(pod, request.query.get("container"))
        if MIRROR_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {}):
            raise bad_request(f"container {container} of pod {pod['metadata'].get('name')} is part of minik's own "
                              "process (a mirror pod): there is nothing to run a command in")
        if kind == "exec" and not _query_list(request.query, "command"):
            raise bad_request("you must specify at least 1 command")
        target = self._kubelet(pod)
        if "websocket" not in request.headers.get("Upgrade", "").lower():
            raise bad_request("Upgrade request required")
        url = target.base_url + self._path(kind, pod, container)
        keys = ("command", "stdin", "stdout", "stderr", "tty") if kind == "exec" else ("stdin", "stdout", "stderr",
                                                                                      "tty")
        params = [(key, value) for key in keys for value in _query_list(request.query, key)]
        return ApiResponse(101, upgrade=ExecRelay(url, params, target).serve)


def _query_list(query: Mapping[str, str], key: str) -> list[str]:
    getall = getattr(query, "getall", None)
    if getall is not None:
        return list(getall(key, []))
    value = query.get(key)
    return [value] if value is not None else []


def _kubelet_error(code: int, body: bytes) -> StatusError:
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status":
        return StatusError(code, str(status.get("reason") or "BadRequest"), str(status.get("message") or ""))
    return StatusError(code, "BadRequest" if code < 500 else "InternalError",
                       body.decode("utf-8", "replace").strip() or f"the kubelet answered {code}")


async def _relay_body(response: aiohttp.ClientResponse, session: aiohttp.ClientSession) -> AsyncIterator[bytes]:
    try:
        while chunk := await response.content.readany():
            yield chunk
    except (aiohttp.ClientError, OSError):
        pass  # the kubelet went away: the log ends here
    finally:
        response.close()
        await session.close()


class ExecRelay:
    """Joins the client's WebSocket to one opened to the kubelet, message for message (exec and attach)."""

    def __init__(self, url: str, params: list[tuple[str, str]], target: KubeletTarget) -> None:
        self.url = url
        self.params = params
        self.target = target

    async def serve(self, request: web.Request) -> web.StreamResponse:
        offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None,
                                                                       sock_connect=_CONNECT_SECONDS)) as session:
            try:
                upstream = await session.ws_connect(self.url, params=self.params, ssl=self.target.ssl,
                                                    server_hostname=self.target.server_hostname,
                                                    protocols=offered or rc.PROTOCOLS, autoping=True, max_msg_size=0)
            except aiohttp.WSServerHandshakeError as exc:
                error = StatusError(exc.status if exc.status >= 400 else 502, "BadRequest",
                                    f"unable to upgrade connection: {exc.message}")
                return web.Response(body=error.body(), status=error.code, content_type="application/json")
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                error = _unavailable(f"unable to upgrade connection: {self.url}", exc)
                return web.Response(body=error.body(), status=error.code, content_type="application/json")
            async with upstream:
                downstream = web.WebSocketResponse(protocols=(upstream.protocol,) if upstream.protocol else (),
                                                   autoping=True, max_msg_size=0)
                await downstream.prepare(request)
                back = start_task(_pump(upstream, downstream), "exec relay to client")
                try:
                    await _pump(downstream, upstream)
                    # the client closed its side: the kubelet's last words still reach it until the kubelet closes
                    await asyncio.wait([back], timeout=1.0)
                finally:
                    await stop_task(back)
                    await downstream.close()
                return downstream


async def _pump(source: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
                sink: web.WebSocketResponse | aiohttp.ClientWebSocketResponse) -> None:
    async for message in source:
        if sink.closed:
            return
        if message.type == aiohttp.WSMsgType.BINARY:
            await sink.send_bytes(message.data)
        elif message.type == aiohttp.WSMsgType.TEXT:
            await sink.send_str(message.data)
    await sink.close()


#: a kubelet's refusal as the API server answers it (pods/portforward's relay too)
kubelet_error = _kubelet_error
