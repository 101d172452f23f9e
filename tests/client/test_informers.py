"""Informers against a real cluster: the cache fills, handlers fire, and nothing is missed across broken watches."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import pytest

from minik.aio import Backoff
from minik.client import Client
from minik.cluster import Cluster
from minik.informers import NODE_NAME_INDEX, Informer, SharedLines, SharedObjects, by_node_name, object_key, split_key
from minik.testing.clock import FakeClock


class Recorder:
    """Handlers that write down what they were told, as (event, key, value of data.v)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None]] = []

    @staticmethod
    def _v(obj: dict[str, Any]) -> str | None:
        return (obj.get("data") or {}).get("v")

    def on_add(self, obj: dict[str, Any]) -> None:
        self.events.append(("add", object_key(obj), self._v(obj)))

    async def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        await asyncio.sleep(0)  # handlers may be coroutines
        self.events.append(("update", object_key(new), self._v(new)))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.events.append(("delete", object_key(obj), self._v(obj)))

    def attach(self, informer: Informer) -> None:
        informer.add_handlers(self.on_add, self.on_update, self.on_delete)


async def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


def configmap(name: str, v: str = "1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "data": {"v": v}}


async def test_the_cache_fills_from_a_paged_list_and_reports_synced(client: Client) -> None:
    for i in range(7):
        await client.create("configmaps", configmap(f"cm-{i}"), "default")
    informer = Informer(client, "configmaps", "default", page_size=3)
    recorder = Recorder()
    recorder.attach(informer)
    assert not informer.has_synced
    async with informer:
        await informer.wait_for_sync(timeout=5)
        assert informer.has_synced
        assert sorted(informer.keys()) == [f"default/cm-{i}" for i in range(7)]
        assert informer.get("default/cm-3")["metadata"]["name"] == "cm-3"  # type: ignore[index]
        assert len(informer.list("default")) == 7 and informer.list("kube-system") == []
        assert sorted(e[1] for e in recorder.events if e[0] == "add") == sorted(informer.keys())
        assert informer.resource_version


async def test_handlers_fire_for_add_update_and_delete_in_order(client: Client) -> None:
    informer = Informer(client, "configmaps", "default")
    recorder = Recorder()
    recorder.attach(informer)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        await client.create("configmaps", configmap("a", "1"), "default")
        await client.patch("configmaps", "a", {"data": {"v": "2"}}, "default")
        await client.delete("configmaps", "a", "default")
        await eventually(lambda: len(recorder.events) == 3)
        assert informer.get("default/a") is None
    assert recorder.events == [("add", "default/a", "1"), ("update", "default/a", "2"), ("delete", "default/a", "2")]


async def test_cluster_scoped_objects_are_keyed_by_name(client: Client) -> None:
    async with Informer(client, "namespaces") as informer:
        await informer.wait_for_sync(timeout=5)
        assert informer.get("default") is not None
    assert split_key("default") == (None, "default") and split_key("ns/a") == ("ns", "a")


async def test_the_informer_resumes_after_the_server_ends_its_watch_without_missing_events(
        cluster: Cluster, client: Client) -> None:
    assert cluster.store is not None
    informer = Informer(client, "configmaps", "default", backoff=Backoff(initial=0.01, maximum=0.05))
    recorder = Recorder()
    recorder.attach(informer)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        await client.create("configmaps", configmap("a", "1"), "default")
        await eventually(lambda: len(recorder.events) == 1)
        for round_ in range(3):
            cluster.store.close_watches()  # every watch ends, as when a server restarts
            await client.patch("configmaps", "a", {"data": {"v": f"{round_ + 2}"}}, "default")
            await client.create("configmaps", configmap(f"b{round_}", "1"), "default")
        await client.delete("configmaps", "a", "default")
        await eventually(lambda: len(recorder.events) == 8)
        await asyncio.sleep(0.05)  # and nothing arrives twice
    assert recorder.events == [
        ("add", "default/a", "1"),
        ("update", "default/a", "2"), ("add", "default/b0", "1"),
        ("update", "default/a", "3"), ("add", "default/b1", "1"),
        ("update", "default/a", "4"), ("add", "default/b2", "1"),
        ("delete", "default/a", "4"),
    ]
    assert sorted(informer.keys()) == ["default/b0", "default/b1", "default/b2"]


async def test_an_expired_resource_version_relists_and_reports_what_changed_meanwhile(
        cluster: Cluster, client: Client) -> None:
    assert cluster.store is not None
    for name in ("gone", "changed", "same"):
        await client.create("configmaps", configmap(name, "1"), "default")
    paused = asyncio.Event()
    resume = asyncio.Event()

    async def sleep(seconds: float) -> None:
        paused.set()
        await resume.wait()

    informer = Informer(client, "configmaps", "default", sleep=sleep)
    recorder = Recorder()
    recorder.attach(informer)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        recorder.events.clear()
        # the watch ends with no event, so the informer backs off...
        async with asyncio.timeout(5):
            while not paused.is_set():  # the watch may still be opening: end it until the informer backs off
                cluster.store.close_watches()
                await asyncio.sleep(0.01)
        # ...and while it is away, things change and history is compacted past its resourceVersion
        await client.delete("configmaps", "gone", "default")
        await client.patch("configmaps", "changed", {"data": {"v": "2"}}, "default")
        await client.create("configmaps", configmap("new", "1"), "default")
        await cluster.store.compact(cluster.store.revision - 1)
        resume.set()
        await eventually(lambda: len(recorder.events) == 3)
        assert sorted(informer.keys()) == ["default/changed", "default/new", "default/same"]
    assert sorted(recorder.events) == [("add", "default/new", "1"), ("delete", "default/gone", "1"),
                                       ("update", "default/changed", "2")]


async def test_an_object_leaving_the_label_selector_is_reported_as_deleted(client: Client) -> None:
    informer = Informer(client, "configmaps", "default", label_selector={"tier": "web"})
    recorder = Recorder()
    recorder.attach(informer)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        await client.create("configmaps", configmap("db", "1", tier="db"), "default")
        await client.create("configmaps", configmap("web", "1", tier="web"), "default")
        await client.patch("configmaps", "web", {"metadata": {"labels": {"tier": "db"}}}, "default")
        await eventually(lambda: len(recorder.events) == 2)
        assert informer.keys() == []
    assert [e[:2] for e in recorder.events] == [("add", "default/web"), ("delete", "default/web")]


async def test_resync_calls_update_handlers_with_the_same_object(client: Client) -> None:
    await client.create("configmaps", configmap("a"), "default")
    resynced: list[bool] = []
    informer = Informer(client, "configmaps", "default", resync_seconds=0.02)
    informer.add_handlers(on_update=lambda old, new: resynced.append(old is new))
    async with informer:
        await eventually(lambda: len(resynced) >= 3)
    assert all(resynced)


async def test_a_failing_handler_does_not_stop_the_informer(client: Client) -> None:
    seen: list[str] = []

    def explode(obj: dict[str, Any]) -> None:
        raise RuntimeError("handler bug")

    informer = Informer(client, "configmaps", "default")
    informer.add_handlers(on_add=explode)
    informer.add_handlers(on_add=lambda obj: seen.append(obj["metadata"]["name"]))
    async with informer:
        await informer.wait_for_sync(timeout=5)
        await client.create("configmaps", configmap("a"), "default")
        await client.create("configmaps", configmap("b"), "default")
        await eventually(lambda: seen == ["a", "b"])


async def test_handlers_must_be_added_before_the_informer_starts(client: Client) -> None:
    async with Informer(client, "configmaps", "default") as informer:
        with pytest.raises(RuntimeError):
            informer.add_handlers(on_add=lambda obj: None)


async def test_waiting_for_sync_fails_when_the_informer_stops_first(unused_tcp_port: int) -> None:
    async with Client.http(f"http://127.0.0.1:{unused_tcp_port}", timeout_seconds=1) as unreachable:
        informer = Informer(unreachable, "configmaps", "default", backoff=Backoff(initial=0.01, maximum=0.02))
        informer.start()
        waiting = asyncio.create_task(informer.wait_for_sync())
        await asyncio.sleep(0.1)  # a few failed lists, each backed off
        assert not informer.has_synced and not waiting.done()
        await informer.stop()
        with pytest.raises(RuntimeError):
            await waiting


async def test_informers_of_one_process_share_one_copy_of_each_object_without_managed_fields(client: Client) -> None:
    await client.create("configmaps", configmap("shared", "1"), "default")
    first, second = Informer(client, "configmaps", "default"), Informer(client, "configmaps", "default")
    async with first, second:
        await first.wait_for_sync(timeout=5)
        await second.wait_for_sync(timeout=5)
        assert first.get("default/shared") is second.get("default/shared")
        await client.patch("configmaps", "shared", {"data": {"v": "2"}}, "default")
        await eventually(lambda: all((i.get("default/shared") or {}).get("data", {}).get("v") == "2"
                                     for i in (first, second)))
        cached = first.get("default/shared")
        assert cached is second.get("default/shared")
        assert cached is not None and "managedFields" not in cached["metadata"]
    assert first.get("default/shared") is cached  # a stopped informer's cache stays readable


def test_shared_objects_intern_the_strings_of_the_versions_held_for_a_while_but_not_their_own() -> None:
    def version(uid: str) -> dict[str, Any]:
        # strings built at run time, as a decoder makes them: not the interned copies until interned
        return {"metadata": {"uid": uid, "resourceVersion": "1", "name": "".join(("we", "b")),
                             "namespace": "".join(("defa", "ult"))},
                "status": {"phase": "".join(("Run", "ning"))}}

    def interned(obj: dict[str, Any], value: str) -> bool:
        return any(s is sys.intern(value) for s in (obj["status"]["phase"], obj["metadata"]["namespace"],
                                                     obj["metadata"]["name"]) if s == value)

    clock = FakeClock(0.0)
    shared = SharedObjects(young_seconds=2.0, clock=clock)
    short_lived = shared.hold(version("a"))
    shared.release(short_lived)  # replaced within the second
    kept = shared.hold(version("b"))
    clock.set(1.5)
    assert not interned(kept, "Running")
    shared.hold(version("c"))
    clock.set(2.5)
    later = shared.hold(version("d"))
    assert interned(kept, "Running") and interned(kept, "default")  # held for 2 s, then another object came
    assert not interned(kept, "web")  # its name is its own: never worth a place in the table
    assert not interned(short_lived, "Running")  # released before then: never paid for
    assert not interned(later, "Running")


async def test_an_update_from_a_cached_object_keeps_the_stored_managed_fields(client: Client) -> None:
    await client.create("configmaps", configmap("kept", "1"), "default")
    before = (await client.get("configmaps", "kept", "default"))["metadata"].get("managedFields") or []
    async with Informer(client, "configmaps", "default") as informer:
        await informer.wait_for_sync(timeout=5)
        copy = {**informer.get("default/kept"), "data": {"v": "2"}}  # type: ignore[dict-item]
        await client.update("configmaps", copy, "default")
    stored = await client.get("configmaps", "kept", "default")
    assert stored["data"] == {"v": "2"}
    after = stored["metadata"].get("managedFields") or []
    assert {e["manager"] for e in after} == {e["manager"] for e in before}  # kept (empty in-process: no agent)


async def test_a_transform_keeps_only_what_it_returns_and_its_objects_are_not_shared(client: Client) -> None:
    await client.create("configmaps", configmap("slim", "1"), "default")

    def names_only(obj: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"]}}

    slim, full = Informer(client, "configmaps", "default", transform=names_only), Informer(client, "configmaps",
                                                                                            "default")
    deleted: list[dict[str, Any]] = []
    slim.add_handlers(on_delete=deleted.append)
    async with slim, full:
        await slim.wait_for_sync(timeout=5)
        await full.wait_for_sync(timeout=5)
        assert slim.get("default/slim") == {"metadata": {"name": "slim", "namespace": "default"}}
        assert (full.get("default/slim") or {}).get("data") == {"v": "1"}
        await client.delete("configmaps", "slim", "default")
        await eventually(lambda: bool(deleted))
    assert deleted == [{"metadata": {"name": "slim", "namespace": "default"}}]


def pod(name: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name}, "spec": spec}


async def test_an_index_follows_binds_deletes_and_relists_and_namespaces_are_always_indexed(
        cluster: Cluster, client: Client) -> None:
    assert cluster.store is not None
    await client.create("pods", pod("a", "n1"), "default")
    await client.create("pods", pod("b", "n2"), "default")
    await client.create("pods", pod("c"), "kube-system")
    informer = Informer(client, "pods")
    informer.add_indexers({NODE_NAME_INDEX: by_node_name})

    def on(node: str) -> list[str]:
        return sorted(object_key(p) for p in informer.by_index(NODE_NAME_INDEX, node))

    async with informer:
        await informer.wait_for_sync(timeout=5)
        assert (on("n1"), on("n2")) == (["default/a"], ["default/b"])
        assert [object_key(p) for p in informer.list("kube-system")] == ["kube-system/c"]
        await client.bind("c", "n1", "kube-system")
        await client.delete("pods", "a", "default", grace_period_seconds=0)
        await eventually(lambda: on("n1") == ["kube-system/c"])
        cluster.store.close_watches()  # the informer resumes its watch; what it missed is indexed too
        await client.create("pods", pod("d", "n2"), "default")
        await eventually(lambda: on("n2") == ["default/b", "default/d"])
        assert sorted(object_key(p) for p in informer.list("default")) == ["default/b", "default/d"]
        assert informer.by_index(NODE_NAME_INDEX, "n3") == []
        with pytest.raises(KeyError):
            informer.by_index("spec.schedulerName", "default-scheduler")


async def test_indexers_are_added_before_start_and_a_shared_informer_takes_the_same_one_twice(
        client: Client) -> None:
    informer = Informer(client, "pods")
    informer.add_indexers({NODE_NAME_INDEX: by_node_name})
    informer.add_indexers({NODE_NAME_INDEX: by_node_name})
    with pytest.raises(ValueError):
        informer.add_indexers({NODE_NAME_INDEX: lambda obj: ()})
    async with informer:
        with pytest.raises(RuntimeError):
            informer.add_indexers({"other": by_node_name})


async def test_informers_of_one_process_decode_each_watch_line_once(client: Client, monkeypatch) -> None:
    from minik import informers

    decoded: list[bytes] = []

    class Counting(informers.SharedLines):
        def decode(self, line: bytes) -> Any:
            if line not in self._events:
                decoded.append(line)
            return super().decode(line)

    monkeypatch.setattr(informers, "LINES", Counting())
    await client.create("configmaps", configmap("once", "1"), "default")
    first, second = Informer(client, "configmaps", "default"), Informer(client, "configmaps", "default")
    async with first, second:
        await first.wait_for_sync(timeout=5)
        await second.wait_for_sync(timeout=5)
        await client.patch("configmaps", "once", {"data": {"v": "2"}}, "default")
        await eventually(lambda: all((i.get("default/once") or {}).get("data", {}).get("v") == "2"
                                     for i in (first, second)))
    assert len([line for line in decoded if b'"MODIFIED"' in line]) == 1


def test_shared_lines_keep_only_the_latest() -> None:
    lines = SharedLines()
    lines.LIMIT = 3
    events = [lines.decode(b'{"type":"ADDED","object":{"n":%d}}' % i) for i in range(5)]
    assert lines.decode(b'{"type":"ADDED","object":{"n":4}}') is events[4]
    assert lines.decode(b'{"type":"ADDED","object":{"n":0}}') is not events[0]
    assert lines.decode(b'{"type":"ADDED","object":{"n":0}}') == events[0]
