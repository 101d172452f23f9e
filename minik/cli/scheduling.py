"""`minik scheduler` (run a scheduler against any cluster) and `minik explain pod NAME` (why a pod goes where it
goes, or why it stays Pending)."""

from __future__ import annotations

import asyncio
import signal

import click

from minik.cli.common import Session, namespace_option, target_options
from minik.cli.output import align

#: short column names for the score plugins in `minik explain`
_SHORT = {"NodeResourcesFit": "FIT", "NodeResourcesBalancedAllocation": "BALANCED", "TaintToleration": "TAINTS",
          "NodeAffinity": "NODE-AFFINITY", "InterPodAffinity": "POD-AFFINITY", "PodTopologySpread": "SPREAD"}


@click.command("scheduler")
@target_options
@click.option("--name", default="default-scheduler", show_default=True,
              help="The spec.schedulerName of the pods to place (and the source of the events).")
@click.option("--percentage-of-nodes-to-score", type=click.IntRange(0, 100), default=0, show_default=True,
              help="Share of the nodes to find feasible before scoring; 0 is adaptive.")
@click.option("--scoring-strategy", type=click.Choice(["LeastAllocated", "MostAllocated"]), default="LeastAllocated",
              show_default=True, help="Spread pods over nodes, or pack them onto the fullest nodes that fit.")
def scheduler(name: str, percentage_of_nodes_to_score: int, scoring_strategy: str) -> None:
    """Run a scheduler against a cluster until Ctrl-C or SIGTERM (for a cluster started with
    `minik up --disable scheduler`, or beside its scheduler under another --name)."""
    from minik import log as logging_setup
    from minik.collector import settle_after_start
    from minik.scheduler import Scheduler, SchedulerSettings
    from minik.scheduler.plugins.registry import ProfileConfig

    session = Session.current()
    logging_setup.configure("info")

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with session.client("kube-scheduler") as client:
            settings = SchedulerSettings(name=name, percentage_of_nodes_to_score=percentage_of_nodes_to_score,
                                         profile=ProfileConfig(scoring_strategy=scoring_strategy))
            running = Scheduler(client, settings)
            await running.start()
            await running.warm_up()
            settle_after_start()  # the informers' caches live as long as the process (minik.collector)
            click.echo(f"minik: scheduler {name!r} running against {session.endpoint.server}", err=True)
            try:
                await stop.wait()
            finally:
                await running.stop()
                click.echo(f"minik: scheduler {name!r} stopped after binding {running.scheduled} pods", err=True)

    session.run(main)


@click.group("explain")
def explain() -> None:
    """Explain the scheduler's decision for an object."""


@explain.command("pod")
@target_options
@namespace_option
@click.argument("name")
def explain_pod_command(name: str, namespace: str | None) -> None:
    """For each node: the filter that rejects the pod and why, or each score and the total; then the best node."""
    from minik.scheduler.explain import explain_pod

    session = Session.current()

    async def main() -> None:
        async with session.client() as client:
            result = await explain_pod(client, name, session.namespace(namespace))
        plugins: list[str] = []
        for entry in result.nodes:
            for plugin in entry.scores:
                if plugin not in plugins:
                    plugins.append(plugin)
        rows = [["NODE", "FILTERS", *[_SHORT.get(p, p.upper()) for p in plugins], "TOTAL"]]
        ordered = sorted(result.nodes, key=lambda e: (not e.status.ok, -e.total, e.node))
        for entry in ordered:
            if entry.status.ok:
                rows.append([entry.node, "passed", *[str(entry.scores.get(p, 0)) for p in plugins], str(entry.total)])
            else:
                rows.append([entry.node, f"{entry.status.plugin}: {entry.status.message}"])
        click.echo(f"Pod {result.pod}: {result.message}")
        for line in align(rows):
            click.echo(line)
        click.echo(f"Best node: {result.chosen}" if result.chosen else "Best node: none (the pod stays Pending)")

    session.run(main)
