"""`minik logs` and `minik exec`: a container's output and a command run in it, through the API server
(pods/log and pods/exec, which it relays to the node's kubelet), as `kubectl logs` and `kubectl exec` do."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import termios
import tty as terminal
from collections.abc import Iterator
from typing import Any

import aiohttp
import click

from minik.api import remotecommand as rc
from minik.api.podcontainers import default_container
from minik.api.selectors import selector_from_dict, selector_from_set
from minik.cli.common import Session, fail, kind_label, namespace_option, resolve_kind, target_options
from minik.client import Client

Obj = dict[str, Any]

_DURATION = re.compile(r"(\d+)(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def _read_to_end(fd: int) -> bytes:
    """All of a regular file open at ``fd`` (left open)."""
    with open(fd, "rb", closefd=False) as handle:
        return handle.read()


def parse_duration(text: str) -> int:
    """Go's duration as kubectl takes it for --since (5s, 2m, 1h30m) in whole seconds, at least 1."""
    parts = _DURATION.findall(text)
    if not text or "".join(f"{n}{u}" for n, u in parts) != text:
        raise click.BadParameter(f'invalid duration "{text}": use e.g. 30s, 5m or 1h30m')
    return max(1, round(sum(int(n) * _UNITS[u] for n, u in parts)))


def _pod_rank(pod: Obj) -> tuple[int, int, int, str]:
    """Which of a workload's pods `logs`/`exec` pick first, as kubectl does: scheduled, running and ready pods
    before the others, then the oldest."""
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return (0 if (pod.get("spec") or {}).get("nodeName") else 1, 0 if status.get("phase") == "Running" else 1,
            0 if ready else 1, (pod.get("metadata") or {}).get("creationTimestamp") or "")


async def resolve_pod(client: Client, target: str, namespace: str) -> Obj:
    """The pod a user named: ``NAME`` or ``pod/NAME``, or ``KIND/NAME`` of a workload or Service (deploy/web),
    which picks one of the pods its selector matches, telling which on stderr when there are several."""
    kind, sep, name = target.partition("/")
    if not sep:
        return await client.get("pods", target, namespace)
    resource = resolve_kind(kind)
    if resource.plural == "pods":
        return await client.get("pods", name, namespace)
    owner = await client.get(resource.plural, name, namespace)
    raw = (owner.get("spec") or {}).get("selector")
    if not isinstance(raw, dict) or not raw:
        raise fail(f"cannot find the pods of {kind_label(resource)}/{name}: it has no selector")
    selector = selector_from_dict(raw) if ("matchLabels" in raw or "matchExpressions" in raw) else \
        selector_from_set(raw)
    pods = (await client.list("pods", namespace, label_selector=str(selector)))["items"]
    if not pods:
        raise fail(f"no pods found for {kind_label(resource)}/{name}")
    pods.sort(key=_pod_rank)
    if len(pods) > 1:
        click.echo(f"Found {len(pods)} pods, using pod/{pods[0]['metadata']['name']}", err=True)
    return pods[0]


def _pick_container(pod: Obj, given: str | None) -> str | None:
    """The container to use; says which when it chose one of several, as kubectl does."""
    if given:
        return given
    chosen = default_container(pod)
    spec = pod.get("spec") or {}
    names = [c["name"] for c in spec.get("containers") or []]
    inits = [f"{c['name']} (init)" for c in spec.get("initContainers") or []]
    if chosen is not None and len(names) + len(inits) > 1:
        click.echo(f'Defaulted container "{chosen}" out of: {", ".join(names + inits)}', err=True)
    return chosen


# -- logs -------------------------------------------------------------------------------------------------------
@click.command()
@click.argument("pod")
@click.option("--container", "-c", default=None, help="The container [default: the pod's default container].")
@click.option("--follow", "-f", is_flag=True, help="Keep streaming the output while the container runs.")
@click.option("--tail", default=-1, show_default=True, type=int, help="Lines from the end to show (-1: all).")
@click.option("--since", default=None, help="Only output younger than this (5s, 2m, 3h).")
@click.option("--timestamps", is_flag=True, help="Prefix each line with its RFC 3339 timestamp.")
@click.option("--previous", "-p", is_flag=True, help="The output of the container's previous run.")
@click.option("--limit-bytes", default=None, type=click.IntRange(min=1), help="Stop after this many bytes.")
@namespace_option
@target_options
def logs(pod: str, container: str | None, follow: bool, tail: int, since: str | None, timestamps: bool,
         previous: bool, limit_bytes: int | None, namespace: str | None) -> None:
    """Print a container's output (`kubectl logs`). POD is a pod's name, or TYPE/NAME of a workload or Service
    (deploy/web), which picks one of its pods."""
    session = Session.current()
    since_seconds = parse_duration(since) if since else None

    async def main() -> None:
        async with session.client() as client:
            ns = session.namespace(namespace)
            obj = await resolve_pod(client, pod, ns)
            response = await client.logs(obj["metadata"]["name"], ns, container=_pick_container(obj, container), follow=follow,
                                         tail_lines=tail if tail >= 0 else None, since_seconds=since_seconds,
                                         timestamps=timestamps, previous=previous, limit_bytes=limit_bytes)
            out = sys.stdout.buffer
            try:
                async for chunk in response.chunks:
                    out.write(chunk)
                    out.flush()
            finally:
                await response.close()

    session.run(main)


# -- exec -------------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _raw_terminal(fd: int, wanted: bool) -> Iterator[bool]:
    """The local terminal in raw mode (keys go to the remote shell as typed) while the command runs."""
    if not wanted or not os.isatty(fd):
        yield False
        return
    saved = termios.tcgetattr(fd)
    terminal.setraw(fd)
    try:
        yield True
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class _Exec:
    """One exec session: stdin (and terminal size) to the WebSocket, its channels to stdout and stderr."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse, stdin: bool, tty: bool) -> None:
        self.socket = socket
        self.stdin = stdin
        self.tty = tty
        self.status: Obj | None = None

    async def _send_stdin(self) -> None:
        loop = asyncio.get_running_loop()
        fd = sys.stdin.fileno()
        chunks: asyncio.Queue[bytes] = asyncio.Queue()

        def readable() -> None:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return
            chunks.put_nowait(data)
            if not data:
                loop.remove_reader(fd)

        try:
            loop.add_reader(fd, readable)
        except PermissionError:  # a regular file: it cannot be polled, and it ends (read in a thread)
            chunks.put_nowait(await asyncio.to_thread(_read_to_end, fd))
            chunks.put_nowait(b"")
        else:
            os.set_blocking(fd, False)
        try:
            while data := await chunks.get():
                await self.socket.send_bytes(rc.frame(rc.STDIN, data))
            if self.socket.protocol == rc.V5:
                await self.socket.send_bytes(rc.frame(rc.CLOSE, bytes((rc.STDIN,))))
        finally:
            loop.remove_reader(fd)
            os.set_blocking(fd, True)

    async def _send_size(self) -> None:
        try:
            size = os.get_terminal_size(sys.stdout.fileno())
        except OSError:
            return
        await self.socket.send_bytes(rc.resize_message(size.columns, size.lines))

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        sender = loop.create_task(self._send_stdin()) if self.stdin else None
        if self.tty:
            await self._send_size()
            loop.add_signal_handler(signal.SIGWINCH, lambda: loop.create_task(self._send_size()))
        try:
            async for message in self.socket:
                if message.type != aiohttp.WSMsgType.BINARY:
                    continue
                channel, payload = rc.parse(message.data)
                if channel in (rc.STDOUT, rc.STDERR):
                    stream = sys.stdout.buffer if channel == rc.STDOUT else sys.stderr.buffer
                    stream.write(payload)
                    stream.flush()
                elif channel == rc.ERROR:
                    self.status = json.loads(payload or b"{}")
        finally:
            if self.tty:
                loop.remove_signal_handler(signal.SIGWINCH)
            if sender is not None:
                sender.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sender
        return rc.exit_code(self.status) if self.status is not None else 0


@click.command("exec", context_settings={"ignore_unknown_options": True})
@click.argument("pod")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--container", "-c", default=None, help="The container [default: the pod's default container].")
@click.option("--stdin", "-i", is_flag=True, help="Pass this terminal's stdin to the command.")
@click.option("--tty", "-t", is_flag=True, help="Give the command a terminal.")
@namespace_option
@target_options
def exec_command(pod: str, command: tuple[str, ...], container: str | None, stdin: bool, tty: bool,
                 namespace: str | None) -> None:
    """Run a command in a container: minik exec POD [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]."""
    session = Session.current()
    argv = list(command[1:] if command and command[0] == "--" else command)
    if not argv:
        raise fail("you must specify at least one command for the container")
    if tty and not os.isatty(sys.stdin.fileno()):
        click.echo("Unable to use a TTY - input is not a terminal or the right kind of file", err=True)
        tty = False

    async def main() -> int:
        async with session.client() as client:
            ns = session.namespace(namespace)
            obj = await resolve_pod(client, pod, ns)
            phase = (obj.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                raise fail(f"cannot exec into a container in a completed pod; current phase is {phase}")
            return await _run(client, obj, ns, argv, _pick_container(obj, container), stdin, tty)

    code = session.run(main)
    if code:
        click.echo(f"command terminated with exit code {code}", err=True)
        raise click.exceptions.Exit(code)


async def _run(client: Client, pod: Obj, namespace: str, argv: list[str], container: str | None, stdin: bool,
               tty: bool) -> int:
    socket = await client.exec_socket(pod["metadata"]["name"], namespace, argv, container=container, stdin=stdin,
                                      tty=tty)
    async with socket:
        with _raw_terminal(sys.stdin.fileno(), tty):
            return await _Exec(socket, stdin, tty).run()
