"""`minik controllers`: the controller manager as a process of its own against a cluster that runs
none."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from controller_helpers import eventually, pod_template, pods

from minik.cluster import Cluster
from tests.access import admin_kubeconfig


async def test_the_controller_manager_runs_alone_against_a_server_and_stops_on_sigterm(cluster: Cluster,
                                                                                      tmp_path: Path) -> None:
    config = admin_kubeconfig(cluster, tmp_path / "kubeconfig")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "minik", "controllers", "--kubeconfig", str(config), "--controller", "replicaset",
        "--controller", "garbage-collector", "--log-level", "warning", env=dict(os.environ),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    try:
        started = (await asyncio.wait_for(process.stdout.readline(), 30)).decode().strip()
        assert started == f"minik: controllers running against {cluster.url} (replicaset, garbage-collector)"
        async with cluster.admin_client() as api:
            rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
                  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                           "template": pod_template({"app": "web"})}}
            await api.create("replicasets", rs, "default")

            async def created() -> bool:
                return len(await pods(api, selector="app=web")) == 2
            await eventually(created, timeout=20)
            await api.delete("replicasets", "web", "default")

            async def collected() -> bool:
                return not await pods(api, selector="app=web")
            await eventually(collected, timeout=20)
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 30)
    assert process.returncode == 0


async def test_an_unknown_controller_name_is_a_usage_error(cluster: Cluster, tmp_path: Path) -> None:
    config = admin_kubeconfig(cluster, tmp_path / "kubeconfig")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "minik", "controllers", "--kubeconfig", str(config), "--controller", "nope",
        env=dict(os.environ), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert "unknown controllers ['nope']" in err.decode()


async def test_a_standalone_garbage_collector_finds_custom_resources_by_discovery(cluster: Cluster,
                                                                                 tmp_path: Path) -> None:
    from tests.crds import widget, widget_crd

    local = cluster.in_process_client()
    await local.create("customresourcedefinitions", widget_crd())

    async def served() -> bool:
        return local.registry.get("example.com", "v1", "widgets") is not None
    await eventually(served, timeout=5)
    owner = await local.create("widgets", widget("owner"), "default")
    config = admin_kubeconfig(cluster, tmp_path / "kubeconfig")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "minik", "controllers", "--kubeconfig", str(config), "--controller",
        "garbage-collector", "--log-level", "warning", env=dict(os.environ),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    try:
        await asyncio.wait_for(process.stdout.readline(), 30)
        refs = [{"apiVersion": "example.com/v1", "kind": "Widget", "name": "owner",
                 "uid": owner["metadata"]["uid"]}]
        await local.create("configmaps", {"metadata": {"name": "owned", "ownerReferences": refs}}, "default")
        await local.delete("widgets", "owner", "default")

        async def collected() -> bool:
            return not [c for c in (await local.list("configmaps", "default"))["items"]
                        if c["metadata"]["name"] == "owned"]
        await eventually(collected, timeout=20)
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 30)
    assert process.returncode == 0
