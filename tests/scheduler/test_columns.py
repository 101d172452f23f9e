"""The column forms of the hot filters and scores (``filter_mask``, ``score_array``) give exactly what the
per-node forms give, over randomly made clusters: the scheduler uses the first, ``minik explain`` the second."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from minik.scheduler.arrays import LazyModule
from minik.scheduler.framework import CycleState, NodeInfo, PodInfo, StaticNodes
from minik.scheduler.plugins.balanced_allocation import BalancedAllocation
from minik.scheduler.plugins.node_resources_fit import LEAST_ALLOCATED, MOST_ALLOCATED, NodeResourcesFit
from minik.scheduler.plugins.node_unschedulable import NodeUnschedulable
from minik.scheduler.plugins.taint_toleration import TaintToleration
from tests.scheduler.helpers import node_info, pod_info, pod_object

ROOT = Path(__file__).resolve().parents[2]

TAINTS = [{"key": "gpu", "effect": "NoSchedule"}, {"key": "old", "value": "yes", "effect": "NoExecute"},
          {"key": "spot", "effect": "PreferNoSchedule"}]


def random_cluster(rng: random.Random, size: int) -> list[NodeInfo]:
    nodes = []
    for i in range(size):
        running = [pod_object(f"r{j}", cpu=f"{rng.randrange(1, 2000)}m", memory=f"{rng.randrange(1, 4096)}Mi")
                   for j in range(rng.randrange(0, 4))]
        nodes.append(node_info(f"n{i:03d}", cpu=str(rng.choice([1, 2, 4, 8])), memory=f"{rng.choice([1, 4, 8])}Gi",
                               pods=str(rng.choice([2, 3, 110])), unschedulable=rng.random() < 0.1,
                               taints=rng.sample(TAINTS, rng.randrange(0, 2)), running=running))
    return nodes


def random_pod(rng: random.Random, i: int) -> PodInfo:
    spec = {"tolerations": [{"key": "gpu", "operator": "Exists"}] if rng.random() < 0.3 else []}
    if rng.random() < 0.2:
        spec["tolerations"].append({"operator": "Exists"})
    if rng.random() < 0.8:
        return pod_info(f"p{i}", cpu=f"{rng.randrange(1, 3000)}m", memory=f"{rng.randrange(1, 6000)}Mi", **spec)
    return pod_info(f"p{i}", **spec)


@pytest.mark.parametrize("seed", range(5))
def test_column_filters_and_scores_equal_the_per_node_ones(seed: int) -> None:
    rng = random.Random(seed)
    nodes = random_cluster(rng, 60)
    node_list = StaticNodes(nodes)
    arrays = node_list.arrays()
    rows = np.arange(len(nodes), dtype=np.int64)
    assert arrays.all_allocatable
    for i in range(20):
        pod = random_pod(rng, i)
        state = CycleState(node_list)
        for plugin in (NodeUnschedulable(), TaintToleration(), NodeResourcesFit()):
            mask = plugin.filter_mask(state, pod, arrays)
            assert mask is not None
            passed = [True] * len(nodes) if mask is True else mask.tolist()  # True: every node passes
            assert passed == [plugin.filter(state, pod, n).ok for n in nodes], plugin.name
        for plugin in (NodeResourcesFit(LEAST_ALLOCATED), NodeResourcesFit(MOST_ALLOCATED), BalancedAllocation()):
            assert plugin.score_array(state, pod, arrays, rows).tolist() == \
                [plugin.score(state, pod, n) for n in nodes], plugin.name


def test_column_scores_equal_the_per_node_ones_when_a_node_has_no_allocatable_cpu_or_memory() -> None:
    rng = random.Random(7)
    nodes = [*random_cluster(rng, 10), node_info("no-cpu", cpu="0"), node_info("no-memory", memory="0")]
    node_list = StaticNodes(nodes)
    arrays = node_list.arrays()
    assert not arrays.all_allocatable
    rows = np.arange(len(nodes), dtype=np.int64)
    for i in range(10):
        pod = random_pod(rng, i)
        state = CycleState(node_list)
        for plugin in (NodeResourcesFit(LEAST_ALLOCATED), NodeResourcesFit(MOST_ALLOCATED), BalancedAllocation()):
            scores = plugin.score_array(state, pod, arrays, rows).tolist()
            assert scores == [plugin.score(state, pod, n) for n in nodes], plugin.name
        assert BalancedAllocation().score_array(state, pod, arrays, rows).tolist()[-2:] == [0, 0]


def test_filters_pass_every_node_without_an_array_until_a_node_is_cordoned_or_tainted() -> None:
    nodes = [node_info("a"), node_info("b")]
    node_list = StaticNodes(nodes)
    arrays = node_list.arrays()
    pod, state = pod_info("p"), CycleState(node_list)
    assert NodeUnschedulable().filter_mask(state, pod, arrays) is True
    assert TaintToleration().filter_mask(state, pod, arrays) is True
    nodes[0].set_node({**nodes[0].node, "spec": {"unschedulable": True}})
    nodes[1].set_node({**nodes[1].node, "spec": {"taints": [TAINTS[0]]}})
    assert NodeUnschedulable().filter_mask(state, pod, arrays).tolist() == [False, True]  # type: ignore[union-attr]
    assert TaintToleration().filter_mask(state, pod, arrays).tolist() == [True, False]  # type: ignore[union-attr]


def test_columns_follow_the_pods_added_to_and_removed_from_a_node() -> None:
    nodes = [node_info("a"), node_info("b")]
    arrays = StaticNodes(nodes).arrays()
    running = PodInfo({**pod_object("r", cpu="1500m", memory="1Gi"), "spec": {
        **pod_object("r", cpu="1500m", memory="1Gi")["spec"], "nodeName": "b"}})
    nodes[1].add_pod(running)
    assert (arrays.free_cpu.tolist(), arrays.free_pods.tolist()) == ([4000, 2500], [110, 109])
    nodes[1].remove_pod(running.key)
    assert arrays.free_cpu.tolist() == [4000, 4000]


def test_a_cluster_whose_scheduler_has_no_pod_yet_has_not_imported_numpy() -> None:
    """numpy costs about 130 ms to import and 14 MB: `minik up` must reach ready, and idle, without it (the
    scheduler imports it in a thread at its first pod)."""
    code = ("import asyncio, sys, tempfile\n"
            "from pathlib import Path\n"
            "from minik.cluster import Cluster, ClusterSettings\n"
            "async def main():\n"
            "    with tempfile.TemporaryDirectory() as tmp:\n"
            "        settings = ClusterSettings(data_dir=Path(tmp), port=0, disabled=frozenset(['controllers', 'node',"
            " 'proxy']))\n"
            "        async with Cluster(settings) as cluster:\n"
            "            assert 'scheduler' in cluster.components\n"
            "            print('numpy imported:', 'numpy' in sys.modules)\n"
            "            await asyncio.sleep(1.5)\n"
            "            print('numpy imported when idle:', 'numpy' in sys.modules)\n"
            "asyncio.run(main())\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "numpy imported: False" in done.stdout, done.stdout
    assert "numpy imported when idle: False" in done.stdout, done.stdout


def test_a_lazy_module_imports_once_and_keeps_what_it_gave() -> None:
    lazy = LazyModule("json")
    assert not lazy.loaded
    dumps = lazy.dumps
    assert lazy.loaded and lazy.load() is sys.modules["json"]
    assert lazy.dumps is dumps and "dumps" in vars(lazy)
    with pytest.raises(AttributeError):
        _ = lazy.no_such_function
