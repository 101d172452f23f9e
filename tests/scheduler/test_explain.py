"""`minik explain pod NAME`: each node's verdict, the scores of the feasible ones, and the winner."""

from __future__ import annotations

import asyncio

from click.testing import CliRunner

from minik.cli import cli
from minik.client import Client
from minik.cluster import Cluster
from tests.access import admin_kubeconfig
from tests.scheduler.helpers import SimulatedNodes, pod_object, simulated_node, wait_bound


async def explain(cluster: Cluster, *args: str) -> tuple[int, str]:
    config = admin_kubeconfig(cluster, cluster.settings.data_dir.parent / "admin-kubeconfig")
    result = await asyncio.to_thread(CliRunner().invoke, cli, ["--kubeconfig", str(config), "explain", "pod", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


async def test_explain_shows_the_filter_that_rejects_each_node_and_the_scores_of_the_others(
        cluster: Cluster) -> None:
    async with cluster.admin_client() as client:
        nodes = SimulatedNodes(client)
        try:
            await nodes.add(simulated_node("gpu", taints=[{"key": "dedicated", "value": "gpu",
                                                            "effect": "NoSchedule"}]),
                            simulated_node("small", cpu="1"), simulated_node("big", cpu="16", memory="64Gi"),
                            simulated_node("medium", cpu="8", memory="16Gi"))
            await client.create("pods", pod_object("web", cpu="2", memory="1Gi"))
            code, out = await explain(cluster, "web")
        finally:
            await nodes.stop()
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
    async with cluster.admin_client() as client:
        nodes = SimulatedNodes(client)
        try:
            await nodes.add(simulated_node("small", cpu="1"))
            await client.create("pods", pod_object("huge", cpu="3"))
            code, out = await explain(cluster, "huge")
        finally:
            await nodes.stop()
    assert out.splitlines()[0] == "Pod default/huge: 0/1 nodes are available: 1 Insufficient cpu."
    assert out.splitlines()[-1] == "Best node: none (the pod stays Pending)"


async def test_explain_shows_rules_between_pods(api: Client, nodes: SimulatedNodes,
                                               scheduled_cluster: Cluster) -> None:
    await nodes.add(*(simulated_node(f"n{i}", zone="a" if i < 2 else "b") for i in range(3)))
    await api.create("pods", pod_object("db", labels={"app": "db"}, nodeSelector={"kubernetes.io/hostname": "n0"}))
    await wait_bound(api, "db")
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    spread = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
               "labelSelector": {"matchLabels": {"app": "db"}}}]
    await api.create("pods", pod_object("replica", labels={"app": "db"}, affinity=anti,
                                        topologySpreadConstraints=spread, schedulerName="nobody"))
    code, out = await explain(scheduled_cluster, "replica")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[1].split() == ["NODE", "FILTERS", "FIT", "SPREAD", "BALANCED", "TOTAL"]
    rows = {line.split()[0]: line for line in lines[2:-1]}
    assert rows["n0"].split(None, 1)[1] == "InterPodAffinity: node(s) didn't match pod anti-affinity rules"
    # zone b runs no db pod: n2 spreads best (weight 2 x 100)
    assert rows["n2"].split()[3] == "200" and rows["n1"].split()[3] == "0"
    assert lines[-1] == "Best node: n2"
