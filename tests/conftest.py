"""Fixtures shared by every test: a fresh store, and a check that no test leaves tasks running."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from minik.store import Store, StoreSettings

if TYPE_CHECKING:
    import aiohttp

    from minik.cluster import Cluster


@pytest.fixture(autouse=True)
async def no_leaked_tasks() -> AsyncIterator[None]:
    """Fail a test that leaves asyncio tasks behind (kopf does the same)."""
    before = set(asyncio.all_tasks())
    yield
    await asyncio.sleep(0)
    leaked = [t for t in asyncio.all_tasks() - before if not t.done() and t is not asyncio.current_task()]
    for task in leaked:
        task.cancel()
    assert not leaked, f"tasks left running: {[t.get_name() for t in leaked]}"


@pytest.fixture
def store_settings(tmp_path: Path) -> StoreSettings:
    return StoreSettings(path=tmp_path / "state.db", synchronous="NORMAL", compaction_interval_seconds=3600)


@pytest.fixture
async def store(store_settings: StoreSettings) -> AsyncIterator[Store]:
    s = await Store.open(store_settings)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """A real cluster: store on a temporary SQLite file, API server on 127.0.0.1 with an ephemeral port (HTTPS,
    every request authenticated, as `minik up` serves), and none of the components (scheduler, controllers,
    node...), so API tests see only what they write themselves."""
    from minik.cluster import COMPONENTS, Cluster, ClusterSettings

    c = Cluster(ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                                disabled=frozenset(COMPONENTS)))
    await c.start()
    try:
        yield c
    finally:
        await c.stop()


@pytest.fixture
async def http(cluster: Cluster) -> AsyncIterator[ApiHttp]:
    """An aiohttp session against the cluster's API as the admin, with small helpers that return (status, decoded
    body)."""
    from tests.access import admin_session

    async with admin_session(cluster) as session:
        yield ApiHttp(session)


class ApiHttp:
    def __init__(self, session: aiohttp.ClientSession) -> None:  # noqa: F821
        self.session = session

    async def call(self, method: str, path: str, body: object = None, *, data: bytes | None = None,
                   content_type: str = "application/json", params: dict[str, str] | None = None
                   ) -> tuple[int, dict]:
        import orjson

        payload = data if data is not None else (orjson.dumps(body) if body is not None else None)
        headers = {"Content-Type": content_type} if payload is not None else {}
        async with self.session.request(method, path, data=payload, headers=headers, params=params) as response:
            raw = await response.read()
            try:
                decoded = orjson.loads(raw) if raw else {}
            except orjson.JSONDecodeError:
                decoded = {"raw": raw.decode(errors="replace")}
            return response.status, decoded

    async def get(self, path: str, **params: str) -> tuple[int, dict]:
        return await self.call("GET", path, params=params or None)

    async def post(self, path: str, body: object) -> tuple[int, dict]:
        return await self.call("POST", path, body)

    async def put(self, path: str, body: object) -> tuple[int, dict]:
        return await self.call("PUT", path, body)

    async def patch(self, path: str, body: object, content_type: str = "application/merge-patch+json"
                    ) -> tuple[int, dict]:
        return await self.call("PATCH", path, body, content_type=content_type)

    async def delete(self, path: str, body: object = None, **params: str) -> tuple[int, dict]:
        return await self.call("DELETE", path, body, params=params or None)
