"""Each in-process component's own log lines, kept in memory for `kubectl logs` of its mirror pod.

minik's components log with structlog under their logger names (``minik.scheduler``, ``minik.controllers.job``,
``minik.proxy.dns``...). The tap wraps the last step of structlog's chain (the renderer): every line it renders is
also kept, as rendered, for the component it belongs to: by its logger's name, and for the modules every component
shares (informers, events, ...) by the component whose task wrote it (``SOURCE``, set while a component starts, is
inherited by the tasks it starts). A component keeps its most recent lines up to ``LIMIT_BYTES``, as a kubelet
keeps a container's log up to a size; followers are woken as lines arrive, from any thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

#: the component whose task is running (set around a component's start; its tasks inherit it)
SOURCE: contextvars.ContextVar[str | None] = contextvars.ContextVar("minik_log_source", default=None)

#: logger name prefixes, most specific first, and the component they belong to
ROUTES: tuple[tuple[str, str], ...] = (
    ("minik.proxy.dns", "dns"),
    ("minik.proxy", "proxy"),
    ("minik.scheduler", "scheduler"),
    ("minik.controllers", "controllers"),
    ("minik.kubelet", "node"),
    ("minik.apiserver", "apiserver"),
    ("minik.admission", "apiserver"),
    ("minik.store", "apiserver"),
    ("minik.pki", "apiserver"),
    ("minik.cluster", "apiserver"),
)

#: the components whose lines are kept: those shown as pods (minik.controlplane.PODS)
KEPT = frozenset({"apiserver", "scheduler", "controllers", "proxy", "dns"})

#: how much of each component's log is kept
LIMIT_BYTES = 512 * 1024

#: how often a follower with no new line checks that its component still runs
FOLLOW_CHECK_SECONDS = 1.0


def route(logger_name: str | None) -> str | None:
    """The component a line of ``logger_name`` belongs to, else the component whose task logs it."""
    if logger_name:
        for prefix, component in ROUTES:
            if logger_name == prefix or logger_name.startswith(prefix + "."):
                return component
    return SOURCE.get()


@dataclass
class _Log:
    lines: deque[tuple[int, float, str]] = field(default_factory=deque)
    size: int = 0
    next_seq: int = 0
    waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = field(default_factory=list)


class ComponentLogs:
    """The recent lines of each component, and their followers."""

    def __init__(self, limit_bytes: int = LIMIT_BYTES) -> None:
        self.limit_bytes = limit_bytes
        self._logs: dict[str, _Log] = {}
        self._lock = threading.Lock()

    def _log(self, component: str) -> _Log:
        log = self._logs.get(component)
        if log is None:
            log = self._logs[component] = _Log()
        return log

    def add(self, component: str, line: str, at: float | None = None) -> None:
        with self._lock:
            log = self._log(component)
            log.lines.append((log.next_seq, time.time() if at is None else at, line))
            log.next_seq += 1
            log.size += len(line) + 1
            while log.size > self.limit_bytes and len(log.lines) > 1:
                log.size -= len(log.lines.popleft()[2]) + 1
            waiters, log.waiters = log.waiters, []
        for loop, event in waiters:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that loop is closed: its follower is gone
                pass

    def _after(self, component: str, seq: int) -> list[tuple[int, float, str]]:
        with self._lock:
            return [entry for entry in self._log(component).lines if entry[0] >= seq]

    def _arm(self, component: str, seq: int, event: asyncio.Event) -> None:
        """Have ``event`` set when the line ``seq`` is there (now, if it is)."""
        with self._lock:
            log = self._log(component)
            if log.next_seq > seq:
                event.set()
            elif not any(waiting is event for _, waiting in log.waiters):
                log.waiters.append((asyncio.get_running_loop(), event))

    async def stream(self, component: str, *, follow: bool = False, tail_lines: int | None = None,
                     since_seconds: int | None = None, timestamps: bool = False,
                     running: Callable[[], bool] = lambda: True) -> AsyncIterator[bytes]:
        """The component's log as a container's is served: the kept lines (the last ``tail_lines``, those of the
        last ``since_seconds``), then, with ``follow``, each new line while ``running()`` holds."""
        entries = self._after(component, 0)
        if since_seconds is not None:
            entries = [e for e in entries if e[1] >= time.time() - since_seconds]
        if tail_lines is not None:
            entries = entries[-tail_lines:] if tail_lines else []
        seq = entries[-1][0] + 1 if entries else self._next(component)
        yield _render(entries, timestamps)
        arrived = asyncio.Event()
        while follow and running():
            self._arm(component, seq, arrived)
            try:
                async with asyncio.timeout(FOLLOW_CHECK_SECONDS):  # then look again whether it still runs
                    await arrived.wait()
            except TimeoutError:
                continue
            arrived.clear()
            fresh = self._after(component, seq)
            if fresh:
                seq = fresh[-1][0] + 1
                yield _render(fresh, timestamps)

    def _next(self, component: str) -> int:
        with self._lock:
            return self._log(component).next_seq


def _render(entries: list[tuple[int, float, str]], timestamps: bool) -> bytes:
    if timestamps:
        return "".join(f"{_nano(at)} {line}\n" for _, at, line in entries).encode()
    return "".join(f"{line}\n" for _, _, line in entries).encode()


def _nano(seconds: float) -> str:
    """RFC 3339 with nanoseconds, as the kubelet prefixes lines for --timestamps."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}000Z"


#: the process's component logs
LOGS = ComponentLogs()


class Tap:
    """Wraps structlog's renderer: renders the line, and keeps it for its component (see the module's doc)."""

    def __init__(self, renderer: Callable[..., Any], logs: ComponentLogs = LOGS) -> None:
        self.renderer = renderer
        self.logs = logs

    def __call__(self, logger: Any, method: str, event_dict: Any) -> Any:
        component = route(getattr(logger, "name", None))
        rendered = self.renderer(logger, method, event_dict)
        if component is not None and component in KEPT:
            text = rendered.decode("utf-8", "replace") if isinstance(rendered, bytes) else str(rendered)
            self.logs.add(component, text.rstrip("\n"))
        return rendered


class NamedLoggerFactory:
    """Wraps a structlog logger factory so that each logger knows the name it was asked for
    (``structlog.get_logger("minik.scheduler")``), which the tap routes by."""

    def __init__(self, inner: Callable[..., Any]) -> None:
        self.inner = inner

    def __call__(self, *args: Any) -> Any:
        logger = self.inner(*args)
        if args and isinstance(args[0], str):
            try:
                logger.name = args[0]
            except AttributeError:  # a logger with a name of its own (the standard library's)
                pass
        return logger


def add_logger_name(logger: Any, method: str, event_dict: Any) -> Any:
    """structlog processor: the ``logger`` field, the name the logger was asked for (when it has one)."""
    name = getattr(logger, "name", None)
    if name:
        event_dict.setdefault("logger", name)
    return event_dict


def install() -> None:
    """Add the tap to structlog's configuration as it is (idempotent): what `minik up` configures
    (``minik.log.configure``) has it already; a program that configured structlog otherwise (or not at all: the
    tests) gets it here."""
    import structlog

    config = structlog.get_config()
    processors = list(config["processors"])
    if processors and isinstance(processors[-1], Tap):
        return
    if processors:
        processors[-1] = Tap(processors[-1])
    factory = config["logger_factory"]
    structlog.configure(processors=processors, logger_factory=factory if isinstance(factory, NamedLoggerFactory)
                        else NamedLoggerFactory(factory))
