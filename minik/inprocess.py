"""The in-process client transport: a ``minik.client.Client`` whose requests go to ``ApiServer.handle`` directly,
with no socket but through the same pipeline (authentication with the token given, authorization, admission).

It joins the client and the API server, which know nothing of each other, so it lives above both, with the
cluster that makes one per in-process component (``Cluster.in_process_client``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

from multidict import CIMultiDict, CIMultiDictProxy

from minik.apiserver.request import ApiRequest
from minik.apiserver.server import ApiServer
from minik.client import DEFAULT_USER_AGENT, JSON, Client, Response, StreamedResponse


class _Chunks:
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> bytes:
        if not self._chunks:
            raise StopAsyncIteration
        return self._chunks.pop(0)


async def _aclose(iterator: AsyncIterator[bytes]) -> None:
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()


class InProcessTransport:
    """Calls ``ApiServer.handle`` directly: no socket, the same request pipeline.

    The request is awaited in the caller's task, so cancelling the caller cancels the request, as a client
    going away would.
    """

    def __init__(self, api: ApiServer, token: str | None = None, agent: str = DEFAULT_USER_AGENT) -> None:
        self.api = api
        self._token = token
        self._agent = agent
        # the request headers for each content type, made once (the server only reads them)
        self._headers: dict[str | None, CIMultiDictProxy[str]] = {}

    def _request(self, method: str, path: str, query: Mapping[str, str], body: bytes | None,
                 content_type: str | None) -> ApiRequest:
        headers = self._headers.get(content_type)
        if headers is None:
            made: CIMultiDict[str] = CIMultiDict({"Accept": JSON, "User-Agent": self._agent})
            if content_type:
                made["Content-Type"] = content_type
            if self._token:
                made["Authorization"] = f"Bearer {self._token}"
            headers = self._headers[content_type] = CIMultiDictProxy(made)
        return ApiRequest(method, path, dict(query), headers, body or b"")

    async def request(self, method: str, path: str, query: Mapping[str, str], body: bytes | None = None,
                      content_type: str | None = None) -> Response:
        result = await self.api.handle(self._request(method, path, query, body, content_type))
        if result.stream is not None:  # not asked for; read it all rather than leave it open
            stream = result.stream
            try:
                return Response(result.status, b"".join([chunk async for chunk in stream]))
            finally:
                await _aclose(stream)
        return Response(result.status, result.body)

    async def stream(self, method: str, path: str, query: Mapping[str, str]) -> StreamedResponse:
        result = await self.api.handle(self._request(method, path, query, None, None))
        if result.stream is None:
            async def nothing() -> None:
                return None

            return StreamedResponse(result.status, _Chunks([result.body]), nothing)
        stream = result.stream

        async def close() -> None:
            await _aclose(stream)

        return StreamedResponse(result.status, stream, close)

    async def close(self) -> None:
        return None


def in_process_client(api: ApiServer, token: str | None = None, agent: str = DEFAULT_USER_AGENT) -> Client:
    """A client of ``api`` in this process, authenticating with ``token``; ``agent`` is its User-Agent, which
    names the field manager of its writes."""
    return Client(InProcessTransport(api, token, agent), api.registry)
