"""`minik scheduler` runs the scheduler as a process of its own, as kube-scheduler runs beside the
API server: here with bin packing (MostAllocated), against a cluster started without a scheduler."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from minik.cluster import Cluster
from tests.access import admin_kubeconfig
from tests.scheduler.helpers import SimulatedNodes, node_of, pod_object, simulated_node, wait_bound

ROOT = Path(__file__).resolve().parents[2]


async def test_a_standalone_bin_packing_scheduler_fills_one_node_before_the_next(cluster: Cluster,
                                                                                 tmp_path: Path) -> None:
    async with cluster.admin_client() as client:
        nodes = SimulatedNodes(client)
        await nodes.add(simulated_node("a", cpu="2"), simulated_node("b", cpu="2"), simulated_node("c", cpu="2"))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        config = admin_kubeconfig(cluster, tmp_path / "kubeconfig")
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "minik", "scheduler", "--kubeconfig", str(config), "--scoring-strategy",
            "MostAllocated", env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        try:
            for i in range(4):
                await client.create("pods", pod_object(f"p{i}", cpu="500m"))
                await wait_bound(client, f"p{i}", timeout=20)
            placed = [await node_of(client, f"p{i}") for i in range(4)]
            assert len(set(placed)) == 1  # 4 x 500m fill one 2-cpu node
            await client.create("pods", pod_object("p4", cpu="500m"))
            assert await wait_bound(client, "p4") != placed[0]
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(process.communicate(), 20)
            await nodes.stop()
        assert process.returncode == 0, err.decode()
        assert "stopped after binding 5 pods" in err.decode()
