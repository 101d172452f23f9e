"""pods/proxy and services/proxy: an HTTP request to ``.../pods/[scheme:]NAME[:PORT]/proxy/PATH`` or
``.../services/[scheme:]NAME[:PORT]/proxy/PATH`` is sent on to the pod's IP (a service's: one of its ready
endpoints, picked at random), whatever its method, and the answer streamed back, as kube-apiserver's proxy does.

The target port of a pod is the one named, else the first port a container declares, else the scheme's (80 or
443). A service's port is named by its name or its number; the endpoint port of the same name is the one dialed.
The caller's credentials (Authorization, Impersonate-*) stay here, as Kubernetes' authentication filters drop
them; hop-by-hop headers are not passed either way; a redirect to an absolute path stays under the proxy's path.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, urlencode

import aiohttp
import structlog

from minik.api.errors import StatusError, bad_request, not_found
from minik.apiserver.admission import ObjectReader
from minik.apiserver.request import ApiRequest, ApiResponse
from minik.apiserver.requestinfo import RequestInfo

log = structlog.get_logger("minik.apiserver.httpproxy")

Obj = dict[str, Any]

_CONNECT_SECONDS = 5.0
#: answers up to this size (by their Content-Length) are read whole and sent in one write; longer ones stream
_WHOLE_BYTES = 256 * 1024
#: what a path keeps unescaped when it is passed on
_PATH_SAFE = "/:@!$&'()*+,;=~"
#: request headers not passed to the pod: the connection's own, and the caller's credentials for the API server
_DROPPED_REQUEST = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
                              "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "host",
                              "content-length", "authorization"})
#: response headers not passed back (the API server frames its own answer)
_DROPPED_RESPONSE = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "te",
                               "trailer", "transfer-encoding", "upgrade", "content-length", "content-type", "date"})


def split_scheme_name_port(value: str) -> tuple[str, str, str] | None:
    """``[scheme:]name[:port]`` as Kubernetes splits it; None when malformed."""
    parts = value.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        return None
    if not name or scheme not in ("", "http", "https"):
        return None
    return scheme, name, port


def refuse_simulated(reader: ObjectReader, pod: Obj, what: str) -> None:
    """400 when the pod's node runs the simulated runtime (its pods have no network to reach), rather than a
    connection that waits for an address nothing answers on."""
    node_name = (pod.get("spec") or {}).get("nodeName")
    node = reader.get("", "v1", "nodes", None, node_name) if node_name else None
    runtime = str((((node or {}).get("status") or {}).get("nodeInfo") or {}).get("containerRuntimeVersion") or "")
    if runtime.startswith("fake://"):
        raise bad_request(f"cannot {what} pod {pod['metadata'].get('name')}: it runs on node {node_name}, whose "
                          f"runtime ({runtime}) simulates containers without a network")


class HttpProxy:
    def __init__(self, reader: ObjectReader) -> None:
        self.reader = reader
        self._http: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_SECONDS), auto_decompress=False,
                connector=aiohttp.TCPConnector(limit=0, ssl=False))  # Kubernetes does not check pods' certificates
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def handle(self, info: RequestInfo, request: ApiRequest) -> ApiResponse:
        resource = info.resource.plural
        kind = "pod" if resource == "pods" else "service"
        namespace, raw_name = info.namespace or "", info.name or ""
        prefix = f"/api/v1/namespaces/{namespace}/{resource}/{raw_name}/proxy"
        rest = request.path[len(prefix):] if request.path.startswith(prefix) else ""
        query = _query_string(request.query)
        prefix = quote(prefix, safe=_PATH_SAFE)
        if not rest:  # as Kubernetes answers a path without its trailing slash (kubernetes/kubernetes#4958)
            location = prefix + "/" + (f"?{query}" if query else "")
            return ApiResponse(301, b"", content_type="text/html", headers={"Location": location})
        split = split_scheme_name_port(raw_name)
        if split is None:
            raise bad_request(f"invalid {kind} request {raw_name!r}")
        scheme, name, port = split
        if resource == "pods":
            host, port = self._pod_location(namespace, name, scheme, port)
        else:
            host, port = self._service_location(namespace, name, raw_name, port)
        url = f"{scheme or 'http'}://{f'[{host}]' if ':' in host else host}:{port}{quote(rest, safe=_PATH_SAFE)}" + \
            (f"?{query}" if query else "")
        return await self._send(request, url, prefix)

    # -- where to -----------------------------------------------------------------------------------------------
    def _pod_location(self, namespace: str, name: str, scheme: str, port: str) -> tuple[str, str]:
        pod = self.reader.get("", "v1", "pods", namespace, name)
        if pod is None:
            raise not_found("pods", "", name)
        if not port:
            declared = [p.get("containerPort") for c in (pod.get("spec") or {}).get("containers") or []
                        for p in c.get("ports") or [] if p.get("containerPort")]
            port = str(declared[0]) if declared else ("443" if scheme == "https" else "80")
        refuse_simulated(self.reader, pod, "proxy to")
        address = str((pod.get("status") or {}).get("podIP") or "")
        if not address:
            raise bad_request("address not allowed")
        return address, port

    def _service_location(self, namespace: str, name: str, raw_name: str, port: str) -> tuple[str, str]:
        service = self.reader.get("", "v1", "services", namespace, name)
        if service is None:
            raise not_found("services", "", name)
        port_name: str | None = None
        for service_port in (service.get("spec") or {}).get("ports") or []:
            own = str(service_port.get("name") or "")
            if own == port or str(service_port.get("port")) == port:
                port_name = own
                break
        if port_name is None:
            raise StatusError(503, "ServiceUnavailable", f'no service port "{port}" found for service "{name}"')
        endpoints = self.reader.get("", "v1", "endpoints", namespace, name) or {}
        for subset in endpoints.get("subsets") or []:
            for endpoint_port in subset.get("ports") or []:
                if str(endpoint_port.get("name") or "") != port_name:
                    continue
                addresses = [a.get("ip") for a in subset.get("addresses") or [] if a.get("ip")]
                if addresses:
                    return str(random.choice(addresses)), str(endpoint_port.get("port"))  # noqa: S311
        raise StatusError(503, "ServiceUnavailable", f'no endpoints available for service "{raw_name}"')

    # -- the exchange -------------------------------------------------------------------------------------------
    async def _send(self, request: ApiRequest, url: str, prefix: str) -> ApiResponse:
        headers = [(k, v) for k, v in _items(request.headers)
                   if k.lower() not in _DROPPED_REQUEST and not k.lower().startswith("impersonate-")]
        try:
            upstream = await self._session().request(request.method, url, headers=headers, data=request.body or None,
                                                     allow_redirects=False, skip_auto_headers=("User-Agent",
                                                                                               "Accept-Encoding"))
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.info("proxy failed", url=url, error=str(exc))
            raise StatusError(503, "ServiceUnavailable",
                              f"error trying to reach service: {exc or type(exc).__name__}") from None
        out: dict[str, str] = {}
        for key, value in upstream.headers.items():
            lower = key.lower()
            if lower in _DROPPED_RESPONSE:
                continue
            if lower == "location" and value.startswith("/"):
                value = prefix + value
            out[key] = value if key not in out else f"{out[key]}, {value}"
        content_type = upstream.headers.get("Content-Type", "application/octet-stream")
        length = upstream.content_length
        if request.method == "HEAD" or upstream.status in (204, 304) or \
                (length is not None and length <= _WHOLE_BYTES):
            try:
                body = b"" if request.method == "HEAD" else await upstream.read()
            except (aiohttp.ClientError, OSError) as exc:
                raise StatusError(503, "ServiceUnavailable", f"error reading from the service: {exc}") from None
            finally:
                upstream.release()
            return ApiResponse(upstream.status, body, content_type=content_type, headers=out)
        return ApiResponse(upstream.status, content_type=content_type, headers=out, stream=_relay(upstream))


async def _relay(upstream: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    try:
        while chunk := await upstream.content.readany():
            yield chunk
    except (aiohttp.ClientError, OSError):
        pass  # the pod went away: the answer ends here
    finally:
        upstream.release()


def _items(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    items = getattr(headers, "items", None)
    return list(items()) if items is not None else []


def _query_string(query: Mapping[str, str]) -> str:
    """The query as the target gets it (a key without a value stays bare: ``?watch``, not ``?watch=``)."""
    items = getattr(query, "items", None)
    if items is None or not query:
        return ""
    return "&".join(urlencode([(k, v)]) if v else quote_plus(k) for k, v in items())
