"""StatefulSets through a real API server with the scheduler, the controllers and simulated nodes (the fake
runtime makes pods Running and Ready): ordered and parallel creation, scale down in reverse, partitioned rolling
updates, OnDelete, and the status fields. Where a test must hold pods back from Ready, it runs the controllers
alone and plays the kubelet itself."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from controller_helpers import eventually, make_ready, pods

from minik.api.timestamps import parse_time
from minik.client import Client
from minik.testing.nodes import SimulatedCluster

Obj = dict[str, Any]


def statefulset(name: str, replicas: int, image: str = "nginx:1.27", **spec: Any) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": image}]}}, **spec}}


def _ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions")
        or [])


@asynccontextmanager
async def pod_history(api: Client) -> AsyncIterator[list[tuple[str, str]]]:
    """What happens to pods, in order, while the block runs: ("created", NAME), ("ready", NAME), ("terminating",
    NAME) and ("deleted", NAME), each once per pod incarnation."""
    listing = await api.list("pods", "default")
    seen: dict[str, set[str]] = {p["metadata"]["uid"]: {"created"} | ({"ready"} if _ready(p) else set())
                                 for p in listing["items"]}
    history: list[tuple[str, str]] = []

    async def watch() -> None:
        async with api.watch("pods", "default", resource_version=listing["metadata"]["resourceVersion"]) as events:
            async for kind, pod in events:
                uid, name = pod["metadata"]["uid"], pod["metadata"]["name"]
                marks = seen.setdefault(uid, set())
                for mark, holds in (("created", True), ("ready", _ready(pod)),
                                    ("terminating", bool(pod["metadata"].get("deletionTimestamp"))),
                                    ("deleted", kind == "DELETED")):
                    if holds and mark not in marks:
                        marks.add(mark)
                        history.append((mark, name))

    task = asyncio.create_task(watch())
    try:
        yield history
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def settled(api: Client, name: str, check: Callable[[Obj], bool] | None = None, timeout: float = 30) -> Obj:
    """The StatefulSet once its controller has seen its generation, all replicas are ready and updated, and
    ``check`` holds."""
    async def done() -> Obj:
        sts = await api.get("statefulsets", name, "default")
        s = sts.get("status") or {}
        want = sts["spec"]["replicas"]
        ok = s.get("observedGeneration") == sts["metadata"]["generation"] and s.get("replicas") == want and \
            s.get("readyReplicas", 0) == want and (check is None or check(sts))
        return sts if ok else {}
    return await eventually(done, timeout=timeout)


async def names(api: Client, selector: str = "app=web") -> list[str]:
    return sorted(p["metadata"]["name"] for p in await pods(api, selector=selector))


async def images(api: Client, selector: str = "app=web") -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in await pods(api, selector=selector)}


async def set_image(api: Client, name: str, image: str) -> None:
    await api.patch("statefulsets", name, {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": image}]}}}}, "default")


async def scale(api: Client, name: str, replicas: int) -> None:
    await api.patch("statefulsets", name, {"spec": {"replicas": replicas}}, "default", subresource="scale")


def _index(history: list[tuple[str, str]], event: tuple[str, str]) -> int:
    assert event in history, f"{event} never happened: {history}"
    return history.index(event)


# -- creation ----------------------------------------------------------------------------------------------------
async def test_ordered_ready_creates_each_pod_only_after_its_predecessor_is_running_and_ready(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    async with pod_history(sim.api) as history:
        await sim.api.create("statefulsets", statefulset("web", 4), "default")
        await settled(sim.api, "web")
    for i in range(1, 4):
        assert _index(history, ("ready", f"web-{i - 1}")) < _index(history, ("created", f"web-{i}")), history
    assert [n for mark, n in history if mark == "created"] == ["web-0", "web-1", "web-2", "web-3"]


async def test_the_pods_have_stable_names_hostnames_subdomain_and_identity_labels(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    await sim.api.create("statefulsets", statefulset("web", 2), "default")
    sts = await settled(sim.api, "web")
    revision = sts["status"]["updateRevision"]
    for i, pod in enumerate(sorted(await pods(sim.api, selector="app=web"), key=lambda p: p["metadata"]["name"])):
        assert pod["metadata"]["name"] == f"web-{i}"
        assert pod["spec"]["hostname"] == f"web-{i}" and pod["spec"]["subdomain"] == "web"
        labels = pod["metadata"]["labels"]
        assert labels["statefulset.kubernetes.io/pod-name"] == f"web-{i}"
        assert labels["apps.kubernetes.io/pod-index"] == str(i)
        assert labels["controller-revision-hash"] == revision
        ref = pod["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("StatefulSet", "web",
                                                                            sts["metadata"]["uid"], True)


async def test_parallel_creates_every_pod_without_waiting_for_readiness(api: Client) -> None:
    """The controllers alone: nothing makes the pods Ready, and all of them are made anyway."""
    await api.create("statefulsets", statefulset("web", 3, podManagementPolicy="Parallel"), "default")

    async def three() -> list[str]:
        found = await names(api)
        return found if len(found) == 3 else []
    assert await eventually(three) == ["web-0", "web-1", "web-2"]
    assert not any(_ready(p) for p in await pods(api, selector="app=web"))


async def test_ordered_ready_makes_nothing_past_a_pod_that_is_not_ready(api: Client) -> None:
    """The controllers alone: web-1 appears only once the test (as the kubelet) makes web-0 Running and Ready."""
    await api.create("statefulsets", statefulset("web", 2), "default")
    assert await eventually(lambda: names(api)) == ["web-0"]
    sts = await eventually(lambda: _observed(api))
    assert sts["status"]["replicas"] == 1 and sts["status"].get("readyReplicas", 0) == 0
    assert await names(api) == ["web-0"]  # the status was written after the sync that would have made web-1
    await make_ready(api, selector="app=web")
    assert await eventually(lambda: _exactly(api, 2)) == ["web-0", "web-1"]


async def _observed(api: Client) -> Obj:
    sts = await api.get("statefulsets", "web", "default")
    return sts if (sts.get("status") or {}).get("replicas") == 1 else {}


async def _exactly(api: Client, count: int) -> list[str]:
    found = await names(api)
    return found if len(found) == count else []


# -- scaling -----------------------------------------------------------------------------------------------------
async def test_scale_down_removes_the_highest_ordinals_one_at_a_time(simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    await sim.api.create("statefulsets", statefulset("web", 4), "default")
    await settled(sim.api, "web")
    async with pod_history(sim.api) as history:
        await scale(sim.api, "web", 1)
        await eventually(lambda: _exactly(sim.api, 1), timeout=30)
        await eventually(lambda: _gone(history, "web-1"))
    assert await names(sim.api) == ["web-0"]
    assert [n for mark, n in history if mark == "terminating"] == ["web-3", "web-2", "web-1"]
    for later, earlier in (("web-2", "web-3"), ("web-1", "web-2")):
        assert _index(history, ("deleted", earlier)) < _index(history, ("terminating", later)), history
    sts = await settled(sim.api, "web")
    assert sts["status"]["replicas"] == 1


async def _gone(history: list[tuple[str, str]], name: str) -> bool:
    return ("deleted", name) in history


async def test_parallel_scale_down_removes_every_surplus_pod_at_once(api: Client) -> None:
    """The controllers alone, the test binding the pods to a node whose kubelet never confirms a deletion: the
    pods stay Terminating, so OrderedReady would stop after web-2; Parallel marks all of them."""
    await api.create("statefulsets", statefulset("web", 3, podManagementPolicy="Parallel"), "default")
    assert await eventually(lambda: _exactly(api, 3)) == ["web-0", "web-1", "web-2"]
    for name in ("web-0", "web-1", "web-2"):
        await api.bind(name, "node-0", "default")
    await make_ready(api, selector="app=web")
    await settled(api, "web")
    await scale(api, "web", 0)

    async def terminating() -> list[str]:
        items = (await api.list("pods", "default", label_selector="app=web"))["items"]
        marked = sorted(p["metadata"]["name"] for p in items if p["metadata"].get("deletionTimestamp"))
        return marked if len(marked) == 3 else []
    assert await eventually(terminating) == ["web-0", "web-1", "web-2"]


async def _none_left(api: Client) -> bool:
    return not await names(api)


async def test_a_deleted_pod_comes_back_with_the_same_name(simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    await sim.api.create("statefulsets", statefulset("web", 3), "default")
    await settled(sim.api, "web")
    old = await sim.api.get("pods", "web-1", "default")
    await sim.api.delete("pods", "web-1", "default")

    async def replaced() -> Obj:
        pod = await sim.api.get("pods", "web-1", "default")
        return pod if pod["metadata"]["uid"] != old["metadata"]["uid"] and _ready(pod) else {}
    await eventually(replaced, timeout=30)
    assert await names(sim.api) == ["web-0", "web-1", "web-2"]


# -- updates -----------------------------------------------------------------------------------------------------
async def test_a_partitioned_rolling_update_replaces_only_the_ordinals_at_or_above_the_partition(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}
    await sim.api.create("statefulsets", statefulset("web", 3, updateStrategy=strategy), "default")
    before = await settled(sim.api, "web")
    async with pod_history(sim.api) as history:
        await set_image(sim.api, "web", "nginx:1.28")
        sts = await settled(sim.api, "web", lambda s: s["status"].get("updatedReplicas") == 2)
    assert await images(sim.api) == {"web-0": "nginx:1.27", "web-1": "nginx:1.28", "web-2": "nginx:1.28"}
    assert [n for mark, n in history if mark == "terminating"] == ["web-2", "web-1"]
    assert _index(history, ("ready", "web-2")) < _index(history, ("terminating", "web-1")), history
    status = sts["status"]
    assert status["currentRevision"] == before["status"]["currentRevision"] != status["updateRevision"]
    assert (status["currentReplicas"], status["updatedReplicas"]) == (1, 2)

    await sim.api.patch("statefulsets", "web", {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}},
                        "default")
    done = await settled(sim.api, "web", lambda s: s["status"].get("currentRevision") == s["status"]["updateRevision"])
    assert done["status"]["updateRevision"] == status["updateRevision"]
    assert (done["status"]["currentReplicas"], done["status"]["updatedReplicas"]) == (3, 3)
    assert set((await images(sim.api)).values()) == {"nginx:1.28"}


async def test_max_unavailable_replaces_that_many_pods_at_once(simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}
    await sim.api.create("statefulsets", statefulset("web", 4, podManagementPolicy="Parallel",
                                                     updateStrategy=strategy), "default")
    await settled(sim.api, "web")
    async with pod_history(sim.api) as history:
        await set_image(sim.api, "web", "nginx:1.28")
        await settled(sim.api, "web", lambda s: s["status"].get("currentRevision") == s["status"]["updateRevision"])
    terminating = [i for i, (mark, _) in enumerate(history) if mark == "terminating"]
    assert [history[i][1] for i in terminating[:2]] == ["web-3", "web-2"]
    # the first two went together: neither waited for the other's replacement to be ready
    assert not any(mark == "ready" for mark, _ in history[terminating[0]:terminating[1]]), history
    assert set((await images(sim.api)).values()) == {"nginx:1.28"}


async def test_on_delete_updates_a_pod_only_when_it_is_deleted(simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    await sim.api.create("statefulsets", statefulset("web", 2, updateStrategy={"type": "OnDelete"}), "default")
    await settled(sim.api, "web")
    await set_image(sim.api, "web", "nginx:1.28")
    sts = await settled(sim.api, "web", lambda s: s["status"]["currentRevision"] != s["status"]["updateRevision"])
    assert sts["status"].get("updatedReplicas", 0) == 0
    assert await images(sim.api) == {"web-0": "nginx:1.27", "web-1": "nginx:1.27"}
    await sim.api.delete("pods", "web-1", "default")
    sts = await settled(sim.api, "web", lambda s: s["status"].get("updatedReplicas") == 1)
    assert await images(sim.api) == {"web-0": "nginx:1.27", "web-1": "nginx:1.28"}
    assert sts["status"]["currentReplicas"] == 1


# -- status and revisions ----------------------------------------------------------------------------------------
async def test_status_counts_the_pods_and_names_the_revisions(simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    await sim.api.create("statefulsets", statefulset("web", 3, minReadySeconds=1), "default")
    sts = await settled(sim.api, "web", lambda s: s["status"].get("availableReplicas") == 3, timeout=30)
    status = sts["status"]
    revisions = (await sim.api.list("controllerrevisions", "default", label_selector="app=web"))["items"]
    assert [r["metadata"]["name"] for r in revisions] == [status["currentRevision"]]
    assert status == {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "currentReplicas": 3,
                      "updatedReplicas": 3, "availableReplicas": 3, "collisionCount": 0,
                      "currentRevision": revisions[0]["metadata"]["name"],
                      "updateRevision": revisions[0]["metadata"]["name"]}
    revision = revisions[0]
    assert revision["revision"] == 1
    assert revision["metadata"]["ownerReferences"][0]["uid"] == sts["metadata"]["uid"]
    assert revision["data"]["spec"]["template"]["$patch"] == "replace"
    assert revision["data"]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"


async def test_min_ready_seconds_holds_the_next_pod_until_the_previous_one_is_available(
        simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    async with pod_history(sim.api) as history:
        await sim.api.create("statefulsets", statefulset("web", 2, minReadySeconds=1), "default")
        sts = await settled(sim.api, "web", lambda s: s["status"].get("availableReplicas") == 2, timeout=30)
    ready0 = await sim.api.get("pods", "web-0", "default")
    web1 = await sim.api.get("pods", "web-1", "default")
    since = parse_time(next(c for c in ready0["status"]["conditions"] if c["type"] == "Ready")["lastTransitionTime"])
    created = parse_time(web1["metadata"]["creationTimestamp"])
    assert since is not None and created is not None and created >= since + 1, (since, created, history)
    assert sts["status"]["availableReplicas"] == 2


async def test_events_say_which_pods_were_created_and_deleted(simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    await sim.api.create("statefulsets", statefulset("web", 2), "default")
    await settled(sim.api, "web")
    await scale(sim.api, "web", 1)
    await eventually(lambda: _exactly(sim.api, 1), timeout=30)

    async def messages() -> set[tuple[str, str]]:
        items = (await sim.api.list("events", "default"))["items"]
        found = {(e["reason"], e["message"]) for e in items if e["involvedObject"].get("kind") == "StatefulSet"}
        return found if ("SuccessfulDelete", "delete Pod web-1 in StatefulSet web successful") in found else set()
    assert await eventually(messages) >= {
        ("SuccessfulCreate", "create Pod web-0 in StatefulSet web successful"),
        ("SuccessfulCreate", "create Pod web-1 in StatefulSet web successful"),
        ("SuccessfulDelete", "delete Pod web-1 in StatefulSet web successful")}


async def test_an_update_back_to_an_old_template_reuses_its_revision_renumbered(simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    await sim.api.create("statefulsets", statefulset("web", 1), "default")
    first = await settled(sim.api, "web")
    await set_image(sim.api, "web", "nginx:1.28")
    await settled(sim.api, "web", lambda s: s["status"]["currentRevision"] != first["status"]["currentRevision"]
                  and s["status"]["currentRevision"] == s["status"]["updateRevision"])
    await set_image(sim.api, "web", "nginx:1.27")
    back = await settled(sim.api, "web", lambda s: s["status"]["currentRevision"] == s["status"]["updateRevision"]
                         == first["status"]["currentRevision"])
    revisions = {r["metadata"]["name"]: r["revision"]
                 for r in (await sim.api.list("controllerrevisions", "default"))["items"]}
    assert revisions[back["status"]["updateRevision"]] == 3 and sorted(revisions.values()) == [2, 3]


async def test_revisions_beyond_the_history_limit_are_deleted(simulated: SimulatedCluster) -> None:
    sim = simulated
    await sim.nodes.add("node-0")
    await sim.api.create("statefulsets", statefulset("web", 1, revisionHistoryLimit=1), "default")
    await settled(sim.api, "web")
    for image in ("nginx:1.28", "nginx:1.29"):
        await set_image(sim.api, "web", image)
        await settled(sim.api, "web", lambda s: s["status"]["currentRevision"] == s["status"]["updateRevision"]
                      and s["status"].get("updatedReplicas") == 1)

    async def two() -> list[int]:
        found = sorted(r["revision"] for r in (await sim.api.list("controllerrevisions", "default"))["items"])
        return found if found == [2, 3] else []
    assert await eventually(two) == [2, 3]

