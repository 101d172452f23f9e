"""`minik explain pod NAME`: each node's verdict, the scores of the feasible ones, and the winner."""

from __future__ import annotations

import asyncio

from click.testing import CliRunner

from minik.cli import cli
from minik.client import Client
from minik.cluster import Cluster

from tests.scheduler.helpers import create_node, pod_object


async def explain(cluster: Cluster, *args: str) -> tuple[int, str]:
    result = await asyncio.to_thread(CliRunner().invoke, cli, ["--server", cluster.url, "explain", "pod", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


async def test_explain_shows_the_filter_that_rejects_each_node_and_the_scores_of_the_others(
        cluster: Cluster) -> None:
    async with Client.http(cluster.url) as client:
        await create_node(client, "gpu", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
        await create_node(client, "small", cpu="1")
        await create_node(client, "big", cpu="16", memory="64Gi")
        await create_node(client, "medium", cpu="8", memory="16Gi")
        await client.create("pods", pod_object("web", cpu="2", memory="1Gi"))
    code, out = await explain(cluster, "web")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == "Pod default/web: 2/4 nodes are feasible"
    assert lines[1].split() == ["NODE", "FILTERS", "FIT", "BALANCED", "TOTAL"]
    rows = {line.split()[0]: line for line in lines[2:-1]}
    assert rows["gpu"].split(None, 1)[1] == "TaintToleration: node(s) had untolerated taint {dedicated: gpu}"
    assert rows["small"].split(None, 1)[1] == "NodeResourcesFit: Insufficient cpu"
    big, medium = rows["big"].split(), rows["medium"].split()
    assert big[1] == medium[1] == "passed"
    # LeastAllocated: (16000-2000)/16000 -> 87, (64Gi-1Gi)/64Gi -> 98, averaged 92
    assert big[2] == "92"
    assert int(big[-1]) == sum(int(x) for x in big[2:-1])
    assert lines[2].split()[0] == "big" and lines[-1] == "Best node: big"


async def test_explain_of_a_pod_no_node_fits_gives_kubernetes_message(cluster: Cluster) -> None:
    async with Client.http(cluster.url) as client:
        await create_node(client, "small", cpu="1")
        await client.create("pods", pod_object("huge", cpu="3"))
    code, out = await explain(cluster, "huge")
    assert out.splitlines()[0] == "Pod default/huge: 0/1 nodes are available: 1 Insufficient cpu."
    assert out.splitlines()[-1] == "Best node: none (the pod stays Pending)"
