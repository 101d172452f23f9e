"""`minik up`: run a cluster in the foreground until Ctrl-C or SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import click

from minik import log as logging_setup
from minik.cluster import Cluster, ClusterSettings


def run(main: Coroutine[Any, Any, None]) -> None:
    """Run on uvloop where it is installed (it roughly halves the event loop's own cost), else on asyncio's."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


def default_data_dir(name: str) -> Path:
    return Path.home() / ".minik" / name


async def _run(settings: ClusterSettings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    cluster = Cluster(settings)
    click.echo(f"minik: starting cluster {settings.name!r} (data in {settings.data_dir})")
    try:
        await cluster.start()
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {settings.bind}:{settings.port}: {exc.strerror or exc}"
                                   ) from None
    click.echo(f"minik: ready in {cluster.started_seconds:.2f}s, API at {cluster.url}")
    try:
        await stop.wait()
    finally:
        click.echo("minik: shutting down")
        await cluster.stop()
        click.echo("minik: stopped; state kept in " + str(settings.data_dir))


@click.command()
@click.option("--name", default="minik", show_default=True, help="Cluster name.")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="State directory [default: ~/.minik/NAME].")
@click.option("--bind", default="127.0.0.1", show_default=True, help="Address the API server listens on.")
@click.option("--port", default=6443, show_default=True, type=click.IntRange(0, 65535), help="API server port.")
@click.option("--sync", "synchronous", type=click.Choice(["FULL", "NORMAL"], case_sensitive=False), default="FULL",
              show_default=True, help="Durability: FULL survives power loss, NORMAL only a process crash.")
@click.option("--log-level", default="info", show_default=True, help="Log level for the JSON log.")
@click.option("--log-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the JSON log goes [default: DATA_DIR/minik.log; '-' for stderr].")
def up(name: str, data_dir: Path | None, bind: str, port: int, synchronous: str, log_level: str,
       log_file: Path | None) -> None:
    """Start a cluster in the foreground (Ctrl-C stops it; the state is kept)."""
    data = data_dir or default_data_dir(name)
    if str(log_file) == "-":
        logging_setup.configure(log_level, stream=sys.stderr)
    else:
        logging_setup.configure(log_level, path=log_file or data / "minik.log")
    settings = ClusterSettings(data_dir=data, name=name, bind=bind, port=port, synchronous=synchronous.upper())
    run(_run(settings))
