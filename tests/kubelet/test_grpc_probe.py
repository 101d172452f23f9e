"""The grpc probe against a real gRPC server (grpcio) speaking the standard health service: SERVING passes,
any other status fails with Kubernetes' words, and so do an error status and a port nobody listens on."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import aiohttp
import grpc
import pytest

from minik.kubelet.actions import Target, run_action

#: HealthCheckResponse{status} by the service asked for
STATUSES = {"": 1, "sick": 2, "unsure": 0}


async def check(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    service = request[2:].decode() if request[:1] == b"\x0a" else ""
    if service not in STATUSES:
        await context.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
    status = STATUSES[service]
    return b"\x08" + bytes([status]) if status else b""


@pytest.fixture
async def port() -> AsyncIterator[int]:
    server = grpc.aio.server()
    handler = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
        "Check": grpc.unary_unary_rpc_method_handler(check)})
    server.add_generic_rpc_handlers((handler,))
    bound = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield bound
    await server.stop(None)


async def probe(port: int, service: str | None = None) -> tuple[bool, str]:
    action = {"port": port, **({"service": service} if service is not None else {})}
    target = Target(None, "", {"name": "app"}, "127.0.0.1")  # type: ignore[arg-type]  # no container needed
    async with aiohttp.ClientSession() as session:
        outcome = await run_action(target, {"grpc": action}, 1.0, session)
    return outcome.ok, outcome.message


async def test_a_serving_service_passes_and_other_statuses_fail_as_kubernetes_words_them(port: int) -> None:
    assert await probe(port) == (True, "")
    assert await probe(port, "sick") == (False, 'service unhealthy (responded with "NOT_SERVING")')
    assert await probe(port, "unsure") == (False, 'service unhealthy (responded with "UNKNOWN")')
    ok, message = await probe(port, "missing")
    assert not ok and message.startswith("error: health rpc probe failed")


async def test_a_port_nobody_listens_on_fails_to_connect() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    assert await probe(free) == (False, f'timeout: failed to connect service "127.0.0.1:{free}" within 1s: '
                                        "context deadline exceeded")
