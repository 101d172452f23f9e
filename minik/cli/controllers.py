"""`minik controllers`: run the controller manager alone against a cluster (one started with
``minik up --disable controllers``, or any server that speaks the API)."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys

import click

from minik import log as logging_setup
from minik.cli.common import Session, target_options
from minik.cli.up import run


async def _run(session: Session, workers: int, only: tuple[str, ...]) -> None:
    from minik.controllers.manager import ControllerManager, ControllerSettings

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    client = session.client()
    try:
        manager = ControllerManager(client, ControllerSettings(workers=workers, enabled=list(only) or None,
                                                               host=socket.gethostname()))
        await manager.start()
        click.echo(f"minik: controllers running against {session.endpoint.server} "
                   f"({', '.join(manager.controllers)})")
        try:
            await stop.wait()
        finally:
            await manager.stop()
    finally:
        await client.close()


@click.command("controllers")
@target_options
@click.option("--workers", default=4, show_default=True, help="Workers per controller.")
@click.option("--controller", "only", multiple=True, help="Run only this controller (repeatable).")
@click.option("--log-level", default="info", show_default=True)
def controllers(workers: int, only: tuple[str, ...], log_level: str) -> None:
    """Run the controllers (ReplicaSet, Deployment, Job, ...) against a cluster until Ctrl-C or SIGTERM."""
    logging_setup.configure(log_level, stream=sys.stderr)
    try:
        run(_run(Session.current(), workers, only))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
