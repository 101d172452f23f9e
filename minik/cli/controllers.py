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


async def _run(session: Session, workers: int, only: tuple[str, ...], grace: float, event_ttl: float,
               terminated_threshold: int) -> None:
    from minik.controllers.manager import ControllerManager, ControllerSettings

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    client = session.client("kube-controller-manager")
    try:
        # the root CA publisher publishes the CA this kubeconfig trusts the API server with
        settings = ControllerSettings(workers=workers, enabled=list(only) or None, host=socket.gethostname(),
                                      node_monitor_grace_period_seconds=grace, event_ttl_seconds=event_ttl,
                                      terminated_pod_gc_threshold=terminated_threshold,
                                      root_ca=session.endpoint.ca_data)
        manager = ControllerManager(client, settings)
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
@click.option("--controller", "only", multiple=True, metavar="NAME",
              help="Run only this controller (repeatable): replicaset, replicationcontroller, deployment, daemonset, "
                   "job, cronjob, ttl-after-finished, garbage-collector, namespace, node-lifecycle, taint-eviction, "
                   "event-ttl, pod-garbage-collector, tokencleaner, endpoints, serviceaccount, "
                   "clusterrole-aggregation, root-ca-cert-publisher.")
@click.option("--node-monitor-grace-period", "grace", default=50.0, show_default=True,
              type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="How long a node may go without a heartbeat before it is Ready=Unknown and tainted.")
@click.option("--event-ttl", default=3600.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              metavar="SECONDS", help="How long an Event is kept after its last update.")
@click.option("--terminated-pod-gc-threshold", "terminated_threshold", default=12_500, show_default=True,
              metavar="COUNT", help="Terminated pods kept before the oldest are deleted (0 or less: never).")
@click.option("--log-level", default="info", show_default=True)
def controllers(workers: int, only: tuple[str, ...], grace: float, event_ttl: float, terminated_threshold: int,
                log_level: str) -> None:
    """Run the controllers (ReplicaSet, Deployment, DaemonSet, Job, CronJob, garbage collector, namespaces, node
    lifecycle, ...) against a cluster until Ctrl-C or SIGTERM."""
    logging_setup.configure(log_level, stream=sys.stderr)
    try:
        run(_run(Session.current(), workers, only, grace, event_ttl, terminated_threshold))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
