"""`minik node join`: run a node for this machine in a cluster elsewhere (or a second node beside `minik up`),
until Ctrl-C or SIGTERM. It registers the Node, runs the pods bound to it and serves their logs and exec; its
containers keep running when it stops, and the next join with the same data directory adopts them.

The first join pins the cluster's CA (``--ca-hash``) before it sends the join token, and exchanges the token
for the node's own credential (``minik.kubelet.join``), kept in DATA_DIR/credentials so that a restart needs
no token. The kubelet's endpoint serves over TLS with the serving certificate the join brought, to the API
server and admins only."""

from __future__ import annotations

import asyncio
import signal
import ssl
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from minik import log as logging_setup
from minik.api.errors import StatusError
from minik.cli.common import CliError, fail
from minik.cli.instance import AlreadyRunning, Instance
from minik.cli.up import run
from minik.client import TransportError
from minik.kubelet.agent import AgentSettings, NodeAgent
from minik.kubelet.component import default_node_name
from minik.kubelet.node import host_address, parse_labels, parse_taints
from minik.kubelet.server import DEFAULT_PORT
from minik.pki.files import private_data_dir

if TYPE_CHECKING:
    from minik.kubelet.join import JoinedNode

#: where a joined node keeps its credential (kubelet.conf, kubelet.crt/.key, ca.crt), under its data directory
CREDENTIALS_DIR = "credentials"


def _labels(_ctx: click.Context, _param: click.Parameter, value: str | None) -> dict[str, str]:
    """The extra labels, refused here when NodeRestriction would refuse the Node that carries them (as the
    kubelet refuses such --node-labels at start rather than failing to register)."""
    from minik.apiserver.admission.node_restriction import forbidden_labels

    try:
        labels = parse_labels(value or "")
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    bad = forbidden_labels(labels)
    if bad:
        raise click.BadParameter(f"a node may not set {', '.join(bad)} on itself: of the kubernetes.io and k8s.io "
                                 "labels only the kubelet's own (kubernetes.io/hostname, topology.kubernetes.io/..., "
                                 "node.kubernetes.io/..., kubelet.kubernetes.io/...) are allowed; an admin sets the "
                                 "others on the Node")
    return labels


def _taints(_ctx: click.Context, _param: click.Parameter, value: str | None) -> list[dict[str, str]]:
    try:
        return parse_taints(value or "")
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.group()
def node() -> None:
    """Nodes of a cluster: `minik node join` runs one for this machine."""


async def _check_server(joined: JoinedNode) -> None:
    """Fail early and clearly when the server cannot be reached or refuses the node's credential."""
    async with joined.client(timeout_seconds=10) as client:
        try:
            await client.create("selfsubjectreviews.authentication.k8s.io", {})  # who am I: any credential may ask
        except StatusError as exc:
            if exc.code == 401:
                raise fail(f"the server at {joined.server} refused this node's credential (401 Unauthorized): it "
                           f"was revoked; remove {joined.kubeconfig_path.parent} and join again with a new token "
                           "(`minik token create` on the cluster)") from None
            raise fail(f"the server at {joined.server} answered {exc.code} {exc.reason}: {exc.message}") from None
        except TransportError as exc:
            raise fail(f"cannot reach the server at {joined.server}: {exc}") from None


async def _serve(server: str, token: str | None, ca_hash: str | None, state_dir: Path, name: str,
                 address: str, make_settings: Callable[[ssl.SSLContext], AgentSettings]) -> None:
    from minik.kubelet.join import JoinError, join_cluster  # cryptography: only for a node that joins
    from minik.pki.kubelet import serving_context

    try:
        joined = await join_cluster(server, token, ca_hash, name, state_dir, addresses=(address,))
    except JoinError as exc:
        raise fail(str(exc)) from None
    if joined.serving_cert_path is None or joined.serving_key_path is None:
        raise fail(f"{state_dir} holds no serving certificate for the kubelet; remove it and join again")
    await _check_server(joined)
    settings = make_settings(serving_context(joined.serving_cert_path, joined.serving_key_path, joined.ca_pem))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with joined.client() as client:
        agent = NodeAgent(client, settings)
        await agent.start()
        try:
            assert agent.kubelet is not None and agent.server is not None
            click.echo(f"minik: node {settings.name!r} joined the cluster at {server} as system:node:{name} "
                       f"(runtime {agent.kubelet.runtime.name}, kubelet on port {agent.server.port} over TLS, data "
                       f"in {settings.data_dir}); stop it with Ctrl-C")
            sys.stdout.flush()
            await stop.wait()
        finally:
            click.echo(f"minik: node {settings.name!r} stopping (its containers keep running)")
            await agent.stop()


@node.command()
@click.option("--server", required=True,
              help="The cluster's API server URL (https://HOST:PORT, as `minik up` printed it).")
@click.option("--token", default=None,
              help="A join token (`minik up` prints one; `minik token create` makes more). Not needed to restart a "
                   "node that has joined.")
@click.option("--ca-hash", default=None, metavar="sha256:HEX",
              help="The hash of the cluster CA's public key: the server must prove it holds that CA before the "
                   "token is sent.")
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
def join(server: str, token: str | None, ca_hash: str | None, name: str | None, labels: dict[str, str],
         taints: list[dict[str, str]], runtime: str, address: str | None, zone: str | None, region: str | None,
         kubelet_port: int, data_dir: Path | None, log_level: str, log_file: Path | None) -> None:
    """Join a cluster as a node and run its pods until stopped (Ctrl-C or SIGTERM)."""
    node_name = name or default_node_name()
    data = data_dir or Path.home() / ".minik" / "nodes" / node_name
    instance = Instance(data)
    try:
        private_data_dir(data)  # 0700, and files an older minik left readable made 0600
        instance.acquire()
    except AlreadyRunning as exc:
        raise fail(f"a node already runs from {data} (PID {exc.pid}); give this one another --name or "
                   "--data-dir") from None
    except OSError as exc:
        raise fail(f"cannot use {data}: {exc.strerror or exc}") from None
    try:
        if str(log_file) == "-":
            logging_setup.configure(log_level, stream=sys.stderr)
        else:
            logging_setup.configure(log_level, path=log_file or data / "kubelet.log")
        node_address = address or host_address()

        def settings(tls: ssl.SSLContext) -> AgentSettings:
            return AgentSettings(node_name, data / "kubelet", tls, runtime, address=node_address, labels=labels,
                                 taints=list(taints), zone=zone, region=region, port=kubelet_port)

        run(_serve(server.rstrip("/"), token, ca_hash, data / CREDENTIALS_DIR, node_name, node_address, settings))
    except CliError:
        raise
    except OSError as exc:
        raise fail(f"cannot start the node: {exc.strerror or exc}") from None
    finally:
        instance.release()
