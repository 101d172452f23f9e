"""Rules between pods, through a real API server with simulated nodes: pod anti-affinity per hostname and per
zone, pod affinity, and topology spread constraints."""

from __future__ import annotations

from collections import Counter
from typing import Any

from minik.client import Client
from tests.scheduler.helpers import (
    SimulatedNodes,
    pod_object,
    scheduled_condition,
    simulated_node,
    wait_bound,
    wait_for,
)

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def anti_affinity(key: str, app: str) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}


async def test_pod_anti_affinity_per_hostname_puts_each_replica_on_its_own_node(
        api: Client, nodes: SimulatedNodes) -> None:
    await nodes.add(*(simulated_node(f"n{i}") for i in range(3)))
    for i in range(4):
        await api.create("pods", pod_object(f"db-{i}", labels={"app": "db"}, affinity=anti_affinity(HOST, "db")))
    placed = [await wait_bound(api, f"db-{i}") for i in range(3)]
    assert sorted(placed) == ["n0", "n1", "n2"]
    condition = await wait_for(lambda: scheduled_condition(api, "db-3"))
    assert condition["message"].startswith("0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.")


async def test_pod_anti_affinity_per_zone_puts_each_replica_in_its_own_zone(
        api: Client, nodes: SimulatedNodes) -> None:
    await nodes.add(simulated_node("a1", zone="a"), simulated_node("a2", zone="a"), simulated_node("b1", zone="b"))
    for i in range(3):
        await api.create("pods", pod_object(f"db-{i}", labels={"app": "db"}, affinity=anti_affinity(ZONE, "db")))
    zones = {"a1": "a", "a2": "a", "b1": "b"}
    placed = [zones[await wait_bound(api, f"db-{i}")] for i in range(2)]
    assert sorted(placed) == ["a", "b"]
    await wait_for(lambda: scheduled_condition(api, "db-2"))
    # a pod the running replicas' anti-affinity selects is kept out of their zones too
    await api.create("pods", pod_object("intruder", labels={"app": "db"}))
    condition = await wait_for(lambda: scheduled_condition(api, "intruder"))
    assert condition["message"].startswith(
        "0/3 nodes are available: 3 node(s) didn't satisfy existing pods anti-affinity rules.")


async def test_pod_affinity_brings_a_pod_next_to_the_pods_it_names(api: Client, nodes: SimulatedNodes) -> None:
    await nodes.add(*(simulated_node(f"n{i}") for i in range(4)))
    await api.create("pods", pod_object("cache", labels={"app": "cache"}))
    home = await wait_bound(api, "cache")
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": HOST}]}}
    for i in range(3):
        await api.create("pods", pod_object(f"web-{i}", affinity=affinity))
    assert {await wait_bound(api, f"web-{i}") for i in range(3)} == {home}


async def test_topology_spread_keeps_zones_within_max_skew_even_when_one_zone_is_roomier(
        api: Client, nodes: SimulatedNodes) -> None:
    # zone a's nodes are far bigger: left to the resource scores, every pod would go there
    await nodes.add(simulated_node("a1", zone="a", cpu="64", memory="256Gi"),
                    simulated_node("a2", zone="a", cpu="64", memory="256Gi"),
                    simulated_node("b1", zone="b", cpu="4"), simulated_node("b2", zone="b", cpu="4"))
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    zones = {"a1": "a", "a2": "a", "b1": "b", "b2": "b"}
    for i in range(6):
        await api.create("pods", pod_object(f"web-{i}", cpu="500m", labels={"app": "web"},
                                            topologySpreadConstraints=spread))
        await wait_bound(api, f"web-{i}")
    per_zone = Counter([zones[await wait_bound(api, f"web-{i}")] for i in range(6)])
    assert per_zone == {"a": 3, "b": 3}


async def test_a_spread_pod_waits_when_every_placement_would_skew_too_much(
        api: Client, nodes: SimulatedNodes) -> None:
    await nodes.add(simulated_node("a1", zone="a"), simulated_node("b1", zone="b", cpu="1"))
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    for i in range(4):
        await api.create("pods", pod_object(f"web-{i}", cpu="600m", labels={"app": "web"},
                                            topologySpreadConstraints=spread))
    # b1 holds one 600m pod; a1 then takes one more than b, and no more
    placed = Counter()
    for i in range(4):
        async def placed_or_pending(name: str = f"web-{i}") -> str:
            pod = await api.get("pods", name, "default")
            if pod["spec"].get("nodeName"):
                return pod["spec"]["nodeName"]
            return "pending" if await scheduled_condition(api, name) else ""
        placed[await wait_for(placed_or_pending)] += 1
    assert placed == {"a1": 2, "b1": 1, "pending": 1}
