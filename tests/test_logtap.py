"""The component logs behind the control plane pods' `kubectl logs`: lines routed to their component, the most
recent kept up to a size, served with tail, since and timestamps, and followed as they come from any thread."""

from __future__ import annotations

import asyncio
import re
import threading

from minik.logtap import SOURCE, ComponentLogs, route


def test_a_line_belongs_to_its_loggers_component_else_to_the_component_whose_task_logs_it() -> None:
    assert route("minik.scheduler.queue") == "scheduler"
    assert route("minik.proxy.dns") == "dns" and route("minik.proxy.iptables") == "proxy"
    assert route("minik.store.watch") == "apiserver"
    assert route("minik.informers") is None
    token = SOURCE.set("controllers")
    try:
        assert route("minik.informers") == "controllers"  # shared code, run by the controllers
        assert route("minik.apiserver") == "apiserver"  # the API server, called in-process by a controller
    finally:
        SOURCE.reset(token)


async def collect(logs: ComponentLogs, **options: object) -> str:
    return b"".join([chunk async for chunk in logs.stream("c", **options)]).decode()  # type: ignore[arg-type]


async def test_the_most_recent_lines_are_kept_up_to_the_limit_and_served_as_a_containers_log() -> None:
    logs = ComponentLogs(limit_bytes=40)
    for i in range(10):
        logs.add("c", f"line {i:02d}", at=1000.0 + i)  # 7 bytes and a newline each: 5 fit
    assert await collect(logs) == "".join(f"line {i:02d}\n" for i in range(5, 10))
    assert await collect(logs, tail_lines=2) == "line 08\nline 09\n"
    assert await collect(logs, tail_lines=0) == ""
    assert await collect(logs, since_seconds=1) == ""  # written long ago
    stamped = await collect(logs, tail_lines=1, timestamps=True)
    assert re.fullmatch(r"1970-01-01T00:16:49\.000000000Z line 09\n", stamped), stamped


async def test_a_follower_gets_each_new_line_even_from_another_thread() -> None:
    logs = ComponentLogs()
    logs.add("c", "before")
    running = True
    stream = logs.stream("c", follow=True, running=lambda: running)
    assert await anext(stream) == b"before\n"
    writer = threading.Thread(target=logs.add, args=("c", "from a thread"))
    writer.start()
    assert await asyncio.wait_for(anext(stream), 5) == b"from a thread\n"
    writer.join()
    logs.add("other", "not this one")
    logs.add("c", "after")
    assert await asyncio.wait_for(anext(stream), 5) == b"after\n"
    running = False
    assert await asyncio.wait_for(anext(stream, None), 5) is None  # the component is gone: the follow ends
