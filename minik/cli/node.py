"""`minik node join`: run a node for this machine in a cluster elsewhere (or a second node beside `minik up`),
until Ctrl-C or SIGTERM. It registers the Node, runs the pods bound to it and serves their logs and exec; its
containers keep running when it stops, and the next join with the same data directory adopts them."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import click

from minik import log as logging_setup
from minik.api.errors import StatusError
from minik.cli.common import CliError, fail
from minik.cli.instance import AlreadyRunning, Instance
from minik.cli.up import run
from minik.client import Client, TransportError
from minik.kubelet.agent import AgentSettings, NodeAgent
from minik.kubelet.component import default_node_name
from minik.kubelet.node import parse_labels, parse_taints
from minik.kubelet.server import DEFAULT_PORT


def _labels(_ctx: click.Context, _param: click.Parameter, value: str | None) -> dict[str, str]:
    try:
        return parse_labels(value or "")
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _taints(_ctx: click.Context, _param: click.Parameter, value: str | None) -> list[dict[str, str]]:
    try:
        return parse_taints(value or "")  # type: ignore[return-value]
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.group()
def node() -> None:
    """Nodes of a cluster: `minik node join` runs one for this machine."""


async def _check_server(server: str, token: str) -> None:
    """Fail early and clearly when the server cannot be reached or refuses the token."""
    async with Client.http(server, token, timeout_seconds=10) as client:
        try:
            await client.get("namespaces", "kube-node-lease")
        except StatusError as exc:
            if exc.code == 401:
                raise fail(f"the server at {server} refused the token (401 Unauthorized): use the token "
                           "`minik up` printed (DATA_DIR/join-token)") from None
            raise fail(f"the server at {server} answered {exc.code} {exc.reason}: {exc.message}") from None
        except TransportError as exc:
            raise fail(f"cannot reach the server at {server}: {exc}") from None


async def _serve(server: str, token: str, settings: AgentSettings) -> None:
    await _check_server(server, token)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with Client.http(server, token) as client:
        agent = NodeAgent(client, settings)
        await agent.start()
        try:
            assert agent.kubelet is not None and agent.server is not None
            click.echo(f"minik: node {settings.name!r} joined the cluster at {server} (runtime "
                       f"{agent.kubelet.runtime.name}, kubelet on port {agent.server.port}, data in "
                       f"{settings.data_dir}); stop it with Ctrl-C")
            sys.stdout.flush()
            await stop.wait()
        finally:
            click.echo(f"minik: node {settings.name!r} stopping (its containers keep running)")
            await agent.stop()


@node.command()
@click.option("--server", required=True, help="The cluster's API server URL (as `minik up` printed it).")
@click.option("--token", required=True, help="The cluster's join token (as `minik up` printed it).")
@click.option("--name", default=None, help="The node's name [default: this machine's host name].")
@click.option("--labels", default=None, callback=_labels, help="Extra node labels: k=v,k2=v2.")
@click.option("--taints", default=None, callback=_taints, help="Node taints: k=v:NoSchedule,k2:NoExecute.")
@click.option("--runtime", type=click.Choice(["auto", "docker", "process", "fake"]), default="auto",
              show_default=True, help="How pods run (auto: Docker when an engine answers, else local processes).")
@click.option("--address", default=None, help="The node's InternalIP [default: this machine's default-route "
                                                "address].")
@click.option("--zone", default=None, help="The topology.kubernetes.io/zone label.")
@click.option("--region", default=None, help="The topology.kubernetes.io/region label.")
@click.option("--kubelet-port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535),
              help="The port of the node's logs/exec endpoint (another free one when it is taken).")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The node's state (its identity and pod volumes) [default: ~/.minik/nodes/NAME].")
@click.option("--log-level", default="info", show_default=True, help="Log level for the JSON log.")
@click.option("--log-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the JSON log goes [default: DATA_DIR/kubelet.log; '-' for stderr].")
def join(server: str, token: str, name: str | None, labels: dict[str, str], taints: list[dict[str, str]],
         runtime: str, address: str | None, zone: str | None, region: str | None, kubelet_port: int,
         data_dir: Path | None, log_level: str, log_file: Path | None) -> None:
    """Join a cluster as a node and run its pods until stopped (Ctrl-C or SIGTERM)."""
    node_name = name or default_node_name()
    data = data_dir or Path.home() / ".minik" / "nodes" / node_name
    instance = Instance(data)
    try:
        instance.acquire()
    except AlreadyRunning as exc:
        raise fail(f"a node already runs from {data} (PID {exc.pid}); give this one another --name or "
                   "--data-dir") from None
    try:
        if str(log_file) == "-":
            logging_setup.configure(log_level, stream=sys.stderr)
        else:
            logging_setup.configure(log_level, path=log_file or data / "kubelet.log")
        settings = AgentSettings(node_name, data / "kubelet", runtime, address=address, labels=labels,
                                 taints=list(taints), zone=zone, region=region, port=kubelet_port, token=token)
        run(_serve(server.rstrip("/"), token, settings))
    except CliError:
        raise
    except OSError as exc:
        raise fail(f"cannot start the node: {exc.strerror or exc}") from None
    finally:
        instance.release()
