"""JSON kept for long takes its own size in memory, whatever buffer orjson wrote it in."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import orjson

from minik.jsonbytes import dumps_kept, kept
from minik.store import Store, StoreSettings


def allocated_per_item(make: object, count: int = 200) -> float:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        items = [make() for _ in range(count)]  # type: ignore[operator]
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(items) == count
    return grown / count


def test_kept_json_is_the_same_bytes_in_a_buffer_of_their_own_size() -> None:
    doc = {"metadata": {"name": "a"}, "data": {"k": "v" * 100}}
    assert kept(orjson.dumps(doc)) == dumps_kept(doc) == orjson.dumps(doc)
    assert allocated_per_item(lambda: dumps_kept(doc)) < 300


async def test_a_stored_record_takes_about_its_own_size_in_memory(tmp_path: Path) -> None:
    store = await Store.open(StoreSettings(path=tmp_path / "state.db"))
    try:
        for i in range(20):  # the first writes grow the store's own tables
            await store.create(f"/configmaps/default/warm{i}", {"metadata": {"name": f"warm{i}"}})
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(200):
                await store.create(f"/configmaps/default/c{i}",
                                   {"metadata": {"name": f"c{i}"}, "data": {"k": "v" * 300}})
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    finally:
        await store.close()
    # the JSON is about 350 bytes; the record, its event and the state's entries add some hundreds more (orjson's
    # own buffer would be 4 KB)
    assert grown / 200 < 2_000
