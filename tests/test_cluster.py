"""A cluster starts and stops in order: stop accepting, end watches, drain requests, close the store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from minik.cluster import Cluster, ClusterSettings
from minik.store import Store, StoreSettings
from tests.access import admin_session


async def test_shutdown_ends_watches_drains_requests_and_keeps_every_write(tmp_path: Path) -> None:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="FULL")
    cluster = Cluster(settings)
    await cluster.start()
    created: list[str] = []
    async with admin_session(cluster) as session:
        async def watch() -> list[bytes]:
            lines = []
            # the test's own configmaps: the root CA publisher's kube-root-ca.crt is not one of them
            async with session.get("/api/v1/namespaces/default/configmaps",
                                   params={"watch": "true", "fieldSelector": "metadata.name!=kube-root-ca.crt"}
                                   ) as response:
                async for line in response.content:
                    lines.append(line)
            return lines

        watching = asyncio.create_task(watch())
        for i in range(20):
            async with session.post("/api/v1/namespaces/default/configmaps",
                                    json={"metadata": {"name": f"cm{i}"}}) as response:
                assert response.status == 201
                created.append(f"cm{i}")
        await cluster.stop()
        lines = await asyncio.wait_for(watching, 10)  # the watch ended cleanly when the server stopped
        assert len(lines) == 20
        try:
            async with session.get("/healthz") as response:
                refused = False
        except aiohttp.ClientConnectionError:
            refused = True
        assert refused, "the server still accepts connections after stop()"
    store = await Store.open(StoreSettings(path=settings.db_path))
    try:
        stored = {r.key.rsplit("/", 1)[1] for r in (await store.list("/core/configmaps/default/")).items}
        assert sorted(stored - {"kube-root-ca.crt"}) == sorted(created)
    finally:
        await store.close()


async def test_a_second_start_on_the_same_data_carries_on(tmp_path: Path) -> None:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL")
    async with Cluster(settings) as first:
        async with admin_session(first) as session:
            async with session.post("/api/v1/namespaces/default/configmaps",
                                    json={"metadata": {"name": "kept"}}) as response:
                rv = (await response.json())["metadata"]["resourceVersion"]
    async with Cluster(settings) as second:
        async with admin_session(second) as session:
            async with session.get("/api/v1/namespaces/default/configmaps/kept") as response:
                assert response.status == 200
                assert (await response.json())["metadata"]["resourceVersion"] == rv


@pytest.mark.parametrize("delay", [0.0, 0.005, 0.02, 0.05, 0.1])
async def test_a_stop_while_the_local_node_is_still_starting_leaves_nothing_running(tmp_path: Path,
                                                                                      delay: float) -> None:
    cluster = Cluster(ClusterSettings(data_dir=tmp_path / "c", port=0))
    await cluster.start()  # the local node goes on starting in the background
    await asyncio.sleep(delay)
    await cluster.stop()
    assert cluster.components == {}
    assert cluster.store is None  # and the autouse leak check finds no task of the node's runtime left


def test_settings_that_contradict_the_cluster_are_refused(tmp_path: Path) -> None:
    from minik.proxy import ProxySettings

    with pytest.raises(ValueError, match="synchronous"):
        ClusterSettings(data_dir=tmp_path, synchronous="NORMAL", store=StoreSettings(path=tmp_path / "state.db"))
    with pytest.raises(ValueError, match="not the local node"):
        ClusterSettings(data_dir=tmp_path, node_name="here", proxy=ProxySettings(node_name="elsewhere"))
    given = StoreSettings(path=tmp_path / "elsewhere.db", synchronous="NORMAL", compaction_window_seconds=1.0)
    settings = ClusterSettings(data_dir=tmp_path, synchronous="NORMAL", store=given)
    assert settings.store_settings() is given and settings.db_path == tmp_path / "elsewhere.db"
    assert ClusterSettings(data_dir=tmp_path).store_settings() == StoreSettings(path=tmp_path / "state.db")
