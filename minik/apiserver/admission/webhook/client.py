"""Calling a webhook: an HTTPS POST of the AdmissionReview, its server certificate checked against the webhook's
caBundle (the system's CAs when it has none), bounded by the webhook's timeoutSeconds.

One aiohttp session (and connection pool) serves every webhook; each call has its own deadline, so a slow webhook
holds only the requests that wait for it. A ``clientConfig.service`` is reached as Kubernetes' endpoint routing
does: the Service's port (``port``, default 443) is looked up, then a ready address of its Endpoints with that
port's name, at the endpoint's port; the connection presents ``NAME.NAMESPACE.svc`` as the TLS server name and
Host. Failures are worded as Kubernetes' Go client words them (``Post "URL": dial tcp HOST:PORT: connect:
connection refused``, ``context deadline exceeded``), since clients and people match on them."""

from __future__ import annotations

import asyncio
import random
import ssl
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import structlog

from minik.apiserver.admission.base import ObjectReader
from minik.apiserver.admission.webhook.config import ServiceRef, Webhook
from minik.apiserver.admission.webhook.review import CallError

log = structlog.get_logger("minik.admission.webhook")

Obj = dict[str, Any]

#: TLS contexts kept (one per distinct caBundle)
_CONTEXTS_KEPT = 64


@dataclass(frozen=True)
class Target:
    """Where a call goes: ``url`` as the webhook is known (in messages, and its Host), ``connect`` where the
    connection is made (the same, or an endpoint of the Service), and the TLS server name to check."""

    url: str
    connect: str
    server_hostname: str | None = None
    host_header: str | None = None


class ResolveError(Exception):
    pass


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _with_timeout(url: str, seconds: int) -> str:
    return f"{url}{'&' if '?' in url else '?'}timeout={seconds}s"


def resolve_service(reader: ObjectReader, ref: ServiceRef) -> tuple[str, int]:
    """A ready endpoint (address, port) of the Service's port ``ref.port``; ResolveError in Kubernetes' words."""
    service = reader.get("", "v1", "services", ref.namespace, ref.name)
    if service is None:
        raise ResolveError(f'service "{ref.name}" not found')
    spec = service.get("spec") or {}
    if spec.get("type", "ClusterIP") not in ("ClusterIP", "NodePort", "LoadBalancer"):
        raise ResolveError(f'unsupported service type "{spec.get("type")}"')
    port_name = None
    for port in spec.get("ports") or []:
        if isinstance(port, dict) and port.get("port") == ref.port:
            port_name = str(port.get("name") or "")
            break
    if port_name is None:
        raise ResolveError(f'no service port {ref.port} found for service "{ref.name}"')
    endpoints = reader.get("", "v1", "endpoints", ref.namespace, ref.name) or {}
    for subset in endpoints.get("subsets") or []:
        if not isinstance(subset, dict):
            continue
        for port in subset.get("ports") or []:
            if isinstance(port, dict) and str(port.get("name") or "") == port_name:
                addresses = [a.get("ip") for a in subset.get("addresses") or [] if isinstance(a, dict) and a.get("ip")]
                if addresses:
                    return str(random.choice(addresses)), int(port.get("port") or 0)
    raise ResolveError(f'no endpoints available for service "{ref.name}"')


def _go_error(exc: BaseException, target: Target) -> str:
    """A connection failure as Go's net/http client words it."""
    if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return "context deadline exceeded"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return f"tls: failed to verify certificate: x509: {_x509(exc.certificate_error, target)}"
    if isinstance(exc, aiohttp.ClientConnectorSSLError):
        return f"remote error: tls: {exc.os_error}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        address = _host_port(exc.host, exc.port or 443)
        error = exc.os_error
        if isinstance(error, ConnectionRefusedError):
            return f"dial tcp {address}: connect: connection refused"
        return f"dial tcp {address}: connect: {(error.strerror or str(error)).lower()}"
    if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, ConnectionResetError)):
        return "EOF"
    return str(exc) or type(exc).__name__


def _x509(error: BaseException, target: Target) -> str:
    if isinstance(error, ssl.SSLCertVerificationError):
        message = error.verify_message or ""
        if "issuer" in message or "self-signed" in message or "self signed" in message:
            return "certificate signed by unknown authority"
        if "Hostname mismatch" in message or "IP address mismatch" in message:
            host = target.server_hostname or target.url.split("//", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
            return f"certificate is not valid for {host.strip('[]')}"
        if "expired" in message:
            return "certificate has expired or is not yet valid"
        return message or str(error)
    return str(error)


class WebhookClient:
    """Posts AdmissionReviews; one session for every webhook, created on the first call."""

    def __init__(self, reader: ObjectReader) -> None:
        self._reader = reader
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[bytes, ssl.SSLContext] = {}

    def _tls(self, ca_bundle: bytes) -> ssl.SSLContext:
        context = self._contexts.get(ca_bundle)
        if context is None:
            context = ssl.create_default_context(cadata=ca_bundle.decode("ascii", "replace")) if ca_bundle \
                else ssl.create_default_context()
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            if len(self._contexts) >= _CONTEXTS_KEPT:
                self._contexts.clear()
            self._contexts[ca_bundle] = context
        return context

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, enable_cleanup_closed=True),
                timeout=aiohttp.ClientTimeout(total=None), auto_decompress=True)
        return self._session

    def target(self, hook: Webhook) -> Target:
        """The webhook's URL (with Kubernetes' ``?timeout=Ns``); for a service, where it is reached."""
        if hook.url is not None:
            url = _with_timeout(hook.url, hook.timeout_seconds)
            return Target(url, url)
        ref = hook.service
        assert ref is not None, "validation requires a url or a service"
        host = f"{ref.name}.{ref.namespace}.svc"
        url = _with_timeout(f"https://{host}:{ref.port}{ref.path}", hook.timeout_seconds)
        try:
            address, port = resolve_service(self._reader, ref)
        except ResolveError as exc:
            raise CallError(hook.name, f'failed to call webhook: Post "{url}": {exc}') from None
        connect = _with_timeout(f"https://{_host_port(address, port)}{ref.path}", hook.timeout_seconds)
        return Target(url, connect, host, f"{host}:{ref.port}")

    async def post(self, hook: Webhook, body: bytes) -> bytes:
        """The webhook's answer to ``body``; CallError when it cannot be had within the webhook's timeout."""
        target = self.target(hook)
        try:
            tls = self._tls(hook.ca_bundle)
        except (ssl.SSLError, ValueError) as exc:
            raise CallError(hook.name, f"failed to call webhook: unable to load the caBundle: {exc}") from None
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*"}
        if target.host_header:
            headers["Host"] = target.host_header
        try:
            async with asyncio.timeout(hook.timeout_seconds):
                async with self._http().post(target.connect, data=body, headers=headers, ssl=tls,
                                             server_hostname=target.server_hostname) as response:
                    answer = await response.read()
                    status = response.status
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise CallError(hook.name, f'failed to call webhook: Post "{target.url}": {_go_error(exc, target)}') \
                from None
        if status != 200:
            raise CallError(hook.name, f"failed to call webhook: {_status_error(status, answer)}")
        return answer

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _status_error(code: int, body: bytes) -> str:
    """A webhook's answer other than 200, as Kubernetes' REST client reports it."""
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status" and status.get("message"):
        return str(status["message"])
    if code == 404:
        return "the server could not find the requested resource"
    if code == 400:
        return "the server rejected our request for an unknown reason"
    text = body.decode("utf-8", "replace").strip()
    return f'an error on the server ("{text}") has prevented the request from succeeding'
