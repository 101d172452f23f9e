"""Fixtures shared by every test: a fresh store, and a check that no test leaves tasks running."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.store import Store, StoreSettings


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
