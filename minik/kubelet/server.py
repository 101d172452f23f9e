"""The kubelet's own HTTP endpoint, which the API server calls for `kubectl logs` and `kubectl exec`:

- ``GET /containerLogs/NAMESPACE/POD/CONTAINER`` with follow, tailLines, sinceSeconds, timestamps, previous and
  limitBytes: the container's output as text/plain, streamed while ``follow`` holds and the container runs;
- ``GET /exec/NAMESPACE/POD/CONTAINER?command=...&stdin&stdout&stderr&tty``: a WebSocket speaking
  v5.channel.k8s.io (or v4), relayed to a command started in the container;
- ``GET /portForward/NAMESPACE/POD[?port=...]``: a WebSocket (``minik.api.portforward``'s protocols) relayed to
  TCP connections to the pod's IP (``minik.kubelet.portforward``); a simulated runtime's pods have no network, and
  say so;
- ``GET /attach/NAMESPACE/POD/CONTAINER?stdin&stdout&stderr&tty``: the same protocol, relayed to the running
  container's main process (its stdin when the container has one; a terminal when the container has one);
- ``GET /healthz``.

The node's mirror pods (minik's in-process components, ``minik.kubelet.mirror``) have no container: their log is
the component's own log lines (``minik.logtap``), and nothing can be run in them.

It is served over TLS only (``minik.pki.kubelet``): the node's serving certificate signed by the cluster CA,
a client certificate from that CA required, and only admins' (the API server's ``apiserver-kubelet-client``,
an admin's ``admin-client``) let through, on every path.
"""

from __future__ import annotations

import errno
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any

import structlog
from aiohttp import WSMsgType, web

from minik.aio import start_task, stop_task
from minik.api import portforward as pf
from minik.api import remotecommand as rc
from minik.api.errors import StatusError, bad_request, not_found
from minik.api.params import non_negative_int
from minik.api.podcontainers import container_spec, resolve_container, waiting_reason
from minik.controlplane import StaticPod
from minik.kubelet.portforward import ChannelSession, MultiplexSession
from minik.kubelet.runtimes.base import ContainerInfo, ExecSession, PodRecord, Runtime, RuntimeFailure
from minik.pki.kubelet import access_middleware

log = structlog.get_logger("minik.kubelet.server")

Obj = dict[str, Any]

DEFAULT_PORT = 10250


def _status(error: StatusError) -> web.Response:
    return web.Response(body=error.body(), status=error.code, content_type="application/json")


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("true", "1")


class KubeletServer:
    def __init__(self, runtime: Runtime, find_pod: Callable[[str, str], Obj | None],
                 ssl_context: ssl.SSLContext, static_pod: Callable[[Obj], StaticPod | None] | None = None) -> None:
        """``ssl_context``: the node's serving context (``minik.pki.kubelet.serving_context``), which asks
        every caller for a client certificate signed by the cluster CA. ``static_pod``: the component a mirror pod
        shows (None for any other pod)."""
        self.runtime = runtime
        self.find_pod = find_pod
        self.static_pod = static_pod or (lambda pod: None)
        self.ssl_context = ssl_context
        self.port = 0
        self._runner: web.AppRunner | None = None

    def _app(self) -> web.Application:
        app = web.Application(middlewares=[access_middleware, self._statuses])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._logs)
        app.router.add_route("*", "/exec/{namespace}/{pod}/{container}", self._exec)
        app.router.add_route("*", "/portForward/{namespace}/{pod}", self._port_forward)
        app.router.add_route("*", "/attach/{namespace}/{pod}/{container}", self._attach)
        return app

    async def start(self, host: str = "0.0.0.0", port: int = DEFAULT_PORT) -> int:
        """Listen on ``host``:``port`` (another free port when that one is taken); the port listened on."""
        self._runner = web.AppRunner(self._app(), access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        try:
            site = web.TCPSite(self._runner, host, port, ssl_context=self.ssl_context, reuse_address=True)
            await site.start()
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or port == 0:
                await self.stop()
                raise
            log.info("kubelet port taken; listening on a free one", port=port)
            site = web.TCPSite(self._runner, host, 0, ssl_context=self.ssl_context, reuse_address=True)
            await site.start()
        self.port = int(self._runner.addresses[0][1])
        log.info("kubelet server listening", host=host, port=self.port)
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()  # closes the WebSockets of running execs too
            self._runner = None

    @web.middleware
    async def _statuses(self, request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            return await handler(request)
        except StatusError as exc:
            return _status(exc)

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _target(self, request: web.Request) -> tuple[Obj, str, PodRecord | None]:
        namespace, name = request.match_info["namespace"], request.match_info["pod"]
        pod = self.find_pod(namespace, name)
        if pod is None:
            raise not_found("pods", "", name)
        container = resolve_container(pod, request.match_info["container"])
        return pod, container, await self.runtime.pod(pod["metadata"]["uid"])

    # -- logs -------------------------------------------------------------------------------------------------
    async def _logs(self, request: web.Request) -> web.StreamResponse:
        pod, container, record = await self._target(request)
        pod_name = pod["metadata"]["name"]
        previous = _flag(request, "previous")
        tail, since, limit = (non_negative_int(request.query, name)
                              for name in ("tailLines", "sinceSeconds", "limitBytes"))
        follow = _flag(request, "follow") and not previous
        static = self.static_pod(pod)
        info: ContainerInfo | None = None
        if record is not None:
            info = record.latest(container) if not previous else record.previous(container)
        if previous and (info is None or static is not None):
            raise bad_request(f'previous terminated container "{container}" in pod "{pod_name}" not found')
        if static is not None:
            chunks = self._component_logs(pod, static, follow, tail, since, _flag(request, "timestamps"))
            first = await anext(chunks, b"")
            return await self._stream(request, chunks, first, limit)
        if info is None:
            raise bad_request(f'container "{container}" in pod "{pod_name}" is waiting to start: '
                              f"{waiting_reason(pod, container)}")
        try:
            chunks = self.runtime.logs(info.id, follow=follow, tail_lines=tail, since_seconds=since,
                                       timestamps=_flag(request, "timestamps"))
            first = await anext(chunks, b"")
        except RuntimeFailure as exc:
            raise bad_request(exc.message) from None
        return await self._stream(request, chunks, first, limit)

    def _component_logs(self, pod: Obj, static: StaticPod, follow: bool, tail: int | None, since: int | None,
                        timestamps: bool) -> AsyncIterator[bytes]:
        """An in-process component's log lines, followed while its pod shows it."""
        from minik.logtap import LOGS

        return LOGS.stream(static.component, follow=follow, tail_lines=tail, since_seconds=since,
                           timestamps=timestamps, running=lambda: self.static_pod(pod) is static)

    async def _stream(self, request: web.Request, chunks: AsyncIterator[bytes], first: bytes,
                      limit: int | None) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        sent = 0
        try:
            chunk = first
            while True:
                if limit is not None and sent + len(chunk) >= limit:
                    await response.write(chunk[:limit - sent])
                    break
                if chunk:
                    await response.write(chunk)
                    sent += len(chunk)
                next_chunk = await anext(chunks, None)
                if next_chunk is None:
                    break
                chunk = next_chunk
            await response.write_eof()
        except (ConnectionResetError, RuntimeFailure):
            pass  # the caller went away, or the container with it
        finally:
            close = getattr(chunks, "aclose", None)  # an async generator's: ends a follow at once
            if close is not None:
                await close()
        return response

    # -- exec and attach --------------------------------------------------------------------------------------
    def _running(self, pod: Obj, container: str, record: PodRecord | None) -> ContainerInfo:
        if self.static_pod(pod) is not None:
            raise bad_request(f"container {container} of pod {pod['metadata']['name']} is part of minik's own "
                              "process: there is nothing to run a command in")
        info = record.latest(container) if record is not None else None
        if info is None or info.state != "running":
            raise bad_request(f"container {container} is not running in pod {pod['metadata']['name']}")
        return info

    @staticmethod
    async def _upgrade(request: web.Request) -> web.WebSocketResponse:
        """The WebSocket of a stream request, once upgraded; closed already when the caller's subprotocol is not
        served (it has been told so)."""
        socket = web.WebSocketResponse(protocols=rc.PROTOCOLS, heartbeat=None, autoping=True)
        if not socket.can_prepare(request).ok:
            raise bad_request("Upgrade request required")
        await socket.prepare(request)
        if socket.ws_protocol not in rc.PROTOCOLS:
            await socket.send_bytes(rc.encode_status(rc.failure(f"unsupported subprotocol; use {rc.V5}")))
            await socket.close()
        return socket

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        pod, container, record = await self._target(request)
        info = self._running(pod, container, record)
        command = request.query.getall("command", [])
        if not command:
            raise bad_request("you must specify at least 1 command")
        socket = await self._upgrade(request)
        if socket.closed:
            return socket
        tty = _flag(request, "tty")
        stdin = _flag(request, "stdin")
        try:
            session = await self.runtime.exec(info.id, command, stdin=stdin, tty=tty)
        except RuntimeFailure as exc:
            await socket.send_bytes(rc.encode_status(rc.failure(exc.message)))
            await socket.close()
            return socket
        log.info("exec", pod=f"{pod['metadata']['namespace']}/{pod['metadata']['name']}", container=container,
                 command=command, tty=tty, stdin=stdin)
        return await self._relay(request, socket, session, tty, command)

    async def _attach(self, request: web.Request) -> web.StreamResponse:
        pod, container, record = await self._target(request)
        info = self._running(pod, container, record)
        spec = container_spec(pod, container) or {}
        socket = await self._upgrade(request)
        if socket.closed:
            return socket
        # whether the process has a terminal and a stdin was decided when the container started (its spec)
        tty = _flag(request, "tty") and bool(spec.get("tty"))
        stdin = _flag(request, "stdin") and bool(spec.get("stdin"))
        try:
            session = await self.runtime.attach(info.id, stdin=stdin, tty=tty)
        except RuntimeFailure as exc:
            await socket.send_bytes(rc.encode_status(rc.failure(exc.message)))
            await socket.close()
            return socket
        log.info("attach", pod=f"{pod['metadata']['namespace']}/{pod['metadata']['name']}", container=container,
                 tty=tty, stdin=stdin)
        return await self._relay(request, socket, session, tty, None)

    async def _relay(self, request: web.Request, socket: web.WebSocketResponse, session: ExecSession, tty: bool,
                     command: list[str] | None) -> web.WebSocketResponse:
        """Relay the session's output to the caller and the caller's stdin to the session until the output ends;
        then the final Status: the command's exit code (exec), or success once the attached process ended."""
        wanted = {channel for channel, asked in ((rc.STDOUT, _flag(request, "stdout") or tty),
                                                 (rc.STDERR, _flag(request, "stderr") and not tty)) if asked}
        reader = start_task(self._from_client(socket, session), "stream stdin")
        try:
            while (piece := await session.read()) is not None:
                if piece[0] in wanted and not socket.closed:
                    await socket.send_bytes(rc.frame(piece[0], piece[1]))
            status = rc.success()
            if command is not None:
                code = await session.exit_code()
                status = rc.success() if not code else rc.exit_failure(command, code)
            if not socket.closed:
                await socket.send_bytes(rc.encode_status(status))
        except ConnectionResetError:
            pass
        finally:
            await stop_task(reader)
            await session.close()
            await socket.close()
        return socket

    async def _from_client(self, socket: web.WebSocketResponse, session: ExecSession) -> None:
        """stdin, resizes and the close of stdin, from the caller to the process. Binary messages and text ones
        alike (the official Python client sends a str as a text message, its first character the channel)."""
        async for message in socket:
            if message.type == WSMsgType.BINARY:
                channel, payload = rc.parse(message.data)
            elif message.type == WSMsgType.TEXT and message.data:
                channel, payload = ord(message.data[0]), message.data[1:].encode("utf-8")
            else:
                continue
            if channel == rc.STDIN:
                await session.write(payload)
            elif channel == rc.RESIZE:
                size = rc.parse_resize(payload)
                if size is not None:
                    await session.resize(*size)
            elif channel == rc.CLOSE and payload[:1] == bytes((rc.STDIN,)):
                await session.close_stdin()
        # the caller went away: end the command's streams (an attachment detaches), which ends the relay
        await session.close()


    # -- port-forward -----------------------------------------------------------------------------------------
    async def _port_forward(self, request: web.Request) -> web.StreamResponse:
        namespace, name = request.match_info["namespace"], request.match_info["pod"]
        pod = self.find_pod(namespace, name)
        if pod is None:
            raise not_found("pods", "", name)
        if self.runtime.simulated and self.static_pod(pod) is None:
            raise bad_request(f"pod {name} runs on the {self.runtime.name} runtime, which simulates containers "
                              "without a network: there is no port to forward to")
        if self.static_pod(pod) is not None or self.runtime.name == "process":
            # the pod is on the node's network (a mirror pod is minik's own process): Kubernetes dials localhost in
            # the pod's network namespace, which is the node's here
            address = "127.0.0.1"
        else:
            record = await self.runtime.pod(pod["metadata"]["uid"])
            address = record.sandbox.ip if record is not None and record.sandbox is not None else ""
            address = address or str((pod.get("status") or {}).get("podIP") or "")
        if not address:
            raise bad_request(f"pod {name} has no IP address yet")
        socket = web.WebSocketResponse(protocols=pf.KUBELET_PROTOCOLS, heartbeat=None, autoping=True, max_msg_size=0)
        upgrade = socket.can_prepare(request)
        if not upgrade.ok:
            raise bad_request("Upgrade request required")
        where = f"{namespace}/{name}"
        if upgrade.protocol == pf.MINIK:  # the API server's session: connections come and go inside it
            await socket.prepare(request)
            log.info("port-forward", pod=where, protocol=pf.MINIK)
            await MultiplexSession(socket, address, where).run()
            return socket
        ports = pf.parse_ports(request.query.getall("port", []) + request.query.getall("ports", []), "port")
        await socket.prepare(request)
        log.info("port-forward", pod=where, ports=ports, protocol=socket.ws_protocol)
        await ChannelSession(socket, address, ports, where).run()
        return socket
