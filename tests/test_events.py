"""The event recorder every component uses: Events as Kubernetes writes them, repeats aggregated."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from minik.client import Client
from minik.cluster import Cluster
from minik.events import EventRecorder


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[Client]:
    assert cluster.api is not None
    async with cluster.in_process_client() as c:
        yield c


@pytest.fixture
async def recorder(client: Client) -> AsyncIterator[EventRecorder]:
    r = EventRecorder(client, "default-scheduler", host="node-1", similar_limit=3)
    await r.start()
    try:
        yield r
    finally:
        await r.stop()


async def pod(client: Client, name: str = "web") -> dict:
    return await client.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, "default")


async def events_of(client: Client, name: str, namespace: str = "default") -> list[dict]:
    listed = await client.list("events", namespace, field_selector=f"involvedObject.name={name}")
    return listed["items"]


async def test_an_event_names_its_object_reason_message_and_source(client: Client, recorder: EventRecorder) -> None:
    web = await pod(client)
    recorder.event(web, "Normal", "Scheduled", "Successfully assigned default/web to node-1")
    await recorder.flush()
    [event] = await events_of(client, "web")
    assert event["involvedObject"] == {"kind": "Pod", "apiVersion": "v1", "namespace": "default", "name": "web",
                                       "uid": web["metadata"]["uid"],
                                       "resourceVersion": web["metadata"]["resourceVersion"]}
    assert (event["type"], event["reason"], event["count"]) == ("Normal", "Scheduled", 1)
    assert event["message"] == "Successfully assigned default/web to node-1"
    assert event["source"] == {"component": "default-scheduler", "host": "node-1"}
    assert event["metadata"]["name"].startswith("web.")
    assert event["firstTimestamp"] == event["lastTimestamp"]


async def test_a_repeated_event_bumps_the_count_of_one_event(client: Client, recorder: EventRecorder) -> None:
    web = await pod(client)
    recorder.event(web, "Warning", "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.")
    await recorder.flush()
    for _ in range(4):  # some folded in memory, some written as patches
        recorder.event(web, "Warning", "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.")
    recorder.event(web, "Warning", "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.")
    await recorder.flush()
    [event] = await events_of(client, "web")
    assert event["count"] == 6


async def test_events_of_cluster_scoped_objects_go_to_the_default_namespace(client: Client,
                                                                           recorder: EventRecorder) -> None:
    node = await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}})
    recorder.event(node, "Normal", "NodeReady", "Node node-1 status is now: NodeReady")
    await recorder.flush()
    [event] = await events_of(client, "node-1")
    assert event["metadata"]["namespace"] == "default"
    assert event["involvedObject"]["kind"] == "Node" and "namespace" not in event["involvedObject"]


async def test_many_similar_events_are_combined_into_one(client: Client, recorder: EventRecorder) -> None:
    web = await pod(client)
    for n in range(6):  # the limit is 3 distinct messages: the 4th on are combined
        recorder.event(web, "Warning", "BackOff", f"attempt {n}")
        await recorder.flush()
    events = await events_of(client, "web")
    assert sorted(e["message"] for e in events if not e["message"].startswith("(combined")) == [
        "attempt 0", "attempt 1", "attempt 2"]
    [combined] = [e for e in events if e["message"].startswith("(combined")]
    assert combined["message"] == "(combined from similar events): attempt 5"
    assert combined["count"] == 3


async def test_an_expired_event_is_written_afresh(client: Client, recorder: EventRecorder) -> None:
    web = await pod(client)
    recorder.event(web, "Normal", "Pulled", "Container image already present")
    await recorder.flush()
    [first] = await events_of(client, "web")
    await client.delete("events", first["metadata"]["name"], "default")
    recorder.event(web, "Normal", "Pulled", "Container image already present")
    await recorder.flush()
    [again] = await events_of(client, "web")
    assert again["metadata"]["name"] != first["metadata"]["name"] and again["count"] == 1


async def test_stop_writes_what_is_pending(client: Client) -> None:
    r = EventRecorder(client, "kubelet")
    await r.start()
    web = await pod(client)
    r.event(web, "Normal", "Started", "Started container c")
    await r.stop()
    [event] = await events_of(client, "web")
    assert event["reason"] == "Started"


async def test_an_object_without_kind_is_refused_at_once(recorder: EventRecorder) -> None:
    with pytest.raises(ValueError, match="kind and apiVersion"):
        recorder.event({"metadata": {"name": "x"}}, "Normal", "R", "m")
