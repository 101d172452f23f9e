"""A real HTTPS admission webhook for tests: an aiohttp server on 127.0.0.1 whose certificate a test CA signed
(minik.pki), answering AdmissionReviews with whatever each path's handler decides, and remembering the reviews it
was sent. A handler may also sleep (a slow webhook) or answer something that is no AdmissionReview."""

from __future__ import annotations

import asyncio
import base64
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from minik.pki.ca import CertificateAuthority

Obj = dict[str, Any]
#: a path's handler: the review's request -> the response fields (uid and allowed are filled in when absent),
#: or bytes to answer as they are
Handler = Callable[[Obj], Awaitable[Obj | bytes]]


def allow(**fields: Any) -> Handler:
    async def handle(request: Obj) -> Obj:
        return {"allowed": True, **fields}
    return handle


def deny(message: str, code: int = 403, reason: str = "Forbidden") -> Handler:
    async def handle(request: Obj) -> Obj:
        return {"allowed": False, "status": {"code": code, "reason": reason, "message": message}}
    return handle


def patch(*operations: Obj) -> Handler:
    """A mutating webhook's answer: these JSON patch operations."""
    encoded = base64.b64encode(orjson.dumps(list(operations))).decode()

    async def handle(request: Obj) -> Obj:
        return {"allowed": True, "patchType": "JSONPatch", "patch": encoded}
    return handle


def add_label(key: str, value: str) -> Handler:
    """Adds a label (creating metadata.labels when the object has none)."""
    async def handle(request: Obj) -> Obj:
        labels = ((request.get("object") or {}).get("metadata") or {}).get("labels")
        escaped = key.replace("~", "~0").replace("/", "~1")
        ops = [{"op": "add", "path": f"/metadata/labels/{escaped}", "value": value}] if labels is not None else \
            [{"op": "add", "path": "/metadata/labels", "value": {key: value}}]
        return await patch(*ops)(request)
    return handle


def slow(seconds: float) -> Handler:
    """Answers (allowed) after ``seconds``, or at once when the server stops."""
    async def handle(request: Obj) -> Obj:
        try:
            await asyncio.wait_for(STOPPING.get().wait(), timeout=seconds)
        except TimeoutError:
            pass
        return {"allowed": True}
    return handle


#: the serving server's event, set while it stops, so that slow handlers finish
STOPPING: ContextVar[asyncio.Event] = ContextVar("stopping")


class WebhookServer:
    def __init__(self, ca: CertificateAuthority, names: tuple[str, ...] = ("127.0.0.1", "localhost")) -> None:
        self.ca = ca
        self.names = names
        self.handlers: dict[str, Handler] = {}
        #: path -> the AdmissionReview requests it was sent, in order
        self.reviews: dict[str, list[Obj]] = {}
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._dir = tempfile.TemporaryDirectory()
        self._stopping = asyncio.Event()

    @property
    def ca_bundle(self) -> str:
        """The caBundle of a webhook configuration that trusts this server."""
        return base64.b64encode(self.ca.cert_pem).decode()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def client_config(self, path: str) -> Obj:
        return {"url": self.url(path), "caBundle": self.ca_bundle}

    def on(self, path: str, handler: Handler) -> None:
        self.handlers[path] = handler

    def calls(self, path: str) -> list[Obj]:
        return self.reviews.get(path, [])

    def tls(self) -> ssl.SSLContext:
        issued = self.ca.issue("webhook", names=self.names, server=True)
        cert, key = Path(self._dir.name, "tls.crt"), Path(self._dir.name, "tls.key")
        cert.write_bytes(issued.cert_pem)
        key.write_bytes(issued.key_pem)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(cert), str(key))
        return context

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        review = orjson.loads(await request.read())
        admission = review["request"]
        self.reviews.setdefault(request.path, []).append({**admission, "_query": dict(request.query),
                                                          "_apiVersion": review.get("apiVersion")})
        STOPPING.set(self._stopping)
        handler = self.handlers.get(request.path)
        if handler is None:
            return web.Response(status=404, text="no such webhook")
        answer = await handler(admission)
        if isinstance(answer, bytes):
            return web.Response(body=answer, content_type="application/json")
        response = {"uid": admission["uid"], **answer}
        return web.Response(body=orjson.dumps({"apiVersion": review.get("apiVersion"), "kind": "AdmissionReview",
                                               "response": response}), content_type="application/json")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._serve)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.tls())
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        self._stopping.set()
        try:
            if self._runner is not None:
                await self._runner.cleanup()
                self._runner = None
            # the connections' own tasks end a moment after they are closed
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and any(
                    "RequestHandler" in repr(t.get_coro()) and not t.done() for t in asyncio.all_tasks()):
                await asyncio.sleep(0.01)
        finally:
            self._stopping.clear()
        self._dir.cleanup()


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
