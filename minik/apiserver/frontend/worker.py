"""A front-end worker process: ``python -m minik.apiserver.frontend.worker OPTIONS_JSON``.

It accepts connections on the API server's listening socket (inherited), speaks HTTP to clients and forwards each
request over its channel (an inherited socket-pair end). It loads aiohttp and the small transport modules only,
not the API server. It dies with the API server process: the kernel kills it when its parent goes (Linux), and it
exits at once when its channel closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import socket
import sys

from aiohttp import web

from minik.apiserver.frontend.relay import WebSocketRelay, wants_websocket
from minik.apiserver.frontend.upstream import Upstream
from minik.apiserver.frontend.wire import Frame, WorkerOptions
from minik.apiserver.http import HANDLER_ARGS, limited_request

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when the API server process dies, however it dies (kill -9 included),
    so no worker keeps its port; then make sure the parent did not die before that was in place."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        sys.exit(0)


async def serve(options: WorkerOptions) -> None:
    upstream = Upstream()
    await upstream.open(socket.socket(fileno=options.channel_fd))
    relay = WebSocketRelay(options.private_path)

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        if wants_websocket(request):
            return await relay.handle(request)
        return await upstream.handle(request)

    # aiohttp's low-level server: one handler for every path, so no application, router or middleware. A handler
    # is cancelled when its client goes away, so an idle watch ends with its connection (a request forwarded
    # before is left to finish at the API server).
    server = web.Server(handle, request_factory=limited_request, handler_cancellation=True, access_log=None,
                        **HANDLER_ARGS)
    runner = web.ServerRunner(server, shutdown_timeout=options.shutdown_timeout_seconds)
    await runner.setup()
    site = web.SockSite(runner, socket.socket(fileno=options.listen_fd))
    await site.start()
    upstream.send(0, Frame.READY)
    why = await upstream.done
    if why == "lost":  # the API server is gone: nothing could answer what is in flight
        os._exit(0)
    await site.stop()  # stop accepting,
    upstream.end_streams()  # end the streams,
    await runner.cleanup()  # let the requests in flight finish
    await relay.close()
    upstream.log("info", "api worker stopped", pid=os.getpid())
    upstream.close()


def main() -> None:
    options = WorkerOptions.decode(sys.argv[1])
    _die_with_parent(options.parent)
    try:
        import uvloop
    except ImportError:
        asyncio.run(serve(options))
    else:
        uvloop.run(serve(options))


if __name__ == "__main__":
    main()
