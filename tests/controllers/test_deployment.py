"""Deployments through a real API server with the controllers running; the tests play the kubelet."""

from __future__ import annotations

import asyncio
from typing import Any

from controller_helpers import FakeKubelet, eventually, pod_template, pods

from minik.client import Client

Obj = dict[str, Any]


def deployment(name: str, replicas: int, image: str = "nginx:1.27", **spec: Any) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": pod_template(labels, image), **spec}}


async def rolled_out(api: Client, name: str, replicas: int | None = None) -> Obj:
    """The deployment once its status says what `kubectl rollout status` waits for."""
    async def check() -> Obj:
        d = await api.get("deployments", name, "default")
        s = d.get("status") or {}
        want = d["spec"]["replicas"] if replicas is None else replicas
        ok = s.get("observedGeneration", 0) >= d["metadata"]["generation"] and \
            s.get("updatedReplicas", 0) == want and s.get("replicas", 0) == want and \
            s.get("availableReplicas", 0) == want
        return d if ok else {}
    return await eventually(check, timeout=15)


async def replicasets(api: Client, name: str) -> list[Obj]:
    items = (await api.list("replicasets", "default"))["items"]
    return [rs for rs in items if any(r["name"] == name for r in rs["metadata"].get("ownerReferences") or [])]


async def test_a_deployment_rolls_out_one_hashed_replicaset_and_reports_available(api: Client) -> None:
    async with FakeKubelet(api):
        await api.create("deployments", deployment("web", 3), "default")
        d = await rolled_out(api, "web")
    [rs] = await replicasets(api, "web")
    hash_ = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{hash_}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": hash_}
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    conditions = {c["type"]: c for c in d["status"]["conditions"]}
    assert conditions["Available"]["status"] == "True"
    assert conditions["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert conditions["Progressing"]["message"] == f'ReplicaSet "{rs["metadata"]["name"]}" has successfully progressed.'
    assert all(p["metadata"]["labels"]["pod-template-hash"] == hash_ for p in await pods(api, selector="app=web"))


async def test_a_deployment_of_three_scales_to_five_and_back_through_the_scale_subresource(api: Client) -> None:
    async with FakeKubelet(api):
        await api.create("deployments", deployment("web", 3), "default")
        await rolled_out(api, "web")
        scale = await api.patch("deployments", "web", {"spec": {"replicas": 5}}, "default", subresource="scale")
        assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 5
        await rolled_out(api, "web", 5)
        assert len(await pods(api, selector="app=web")) == 5
        scale = await api.get("deployments", "web", "default", subresource="scale")
        assert scale["status"] == {"replicas": 5, "selector": "app=web"}
        scale["spec"]["replicas"] = 3
        await api.update("deployments", scale, "default", subresource="scale")
        await rolled_out(api, "web", 3)
        await eventually(lambda: _pod_count(api, "app=web", 3))
    assert len(await replicasets(api, "web")) == 1


async def test_a_rolling_update_respects_max_unavailable_and_max_surge_at_every_step(api: Client) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}
    async with FakeKubelet(api):
        await api.create("deployments", deployment("web", 4, strategy=strategy), "default")
        d = await rolled_out(api, "web")
        listing = await api.list("pods", "default")
        ready: dict[str, bool] = {p["metadata"]["name"]: True for p in listing["items"]}
        history: list[tuple[int, int]] = []

        async def watch() -> None:
            async with api.watch("pods", "default", resource_version=listing["metadata"]["resourceVersion"]) as events:
                async for kind, pod in events:
                    name = pod["metadata"]["name"]
                    if kind == "DELETED" or pod["metadata"].get("deletionTimestamp"):
                        ready.pop(name, None)
                    else:
                        conds = {c["type"]: c["status"] for c in (pod.get("status") or {}).get("conditions") or []}
                        ready[name] = conds.get("Ready") == "True"
                    history.append((sum(ready.values()), len(ready)))

        watching = asyncio.create_task(watch())
        try:
            await api.patch("deployments", "web",
                            {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}}},
                            "default")

            async def updated() -> Obj:
                new = await api.get("deployments", "web", "default")
                return new if new["metadata"]["generation"] > d["metadata"]["generation"] else {}
            await eventually(updated)
            await rolled_out(api, "web")
            await eventually(lambda: _pod_count(api, "app=web", 4))
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
    assert history, "the watch saw no pod events"
    assert min(r for r, _ in history) >= 3, f"fewer than replicas - maxUnavailable ready: {history}"
    assert max(n for _, n in history) <= 5, f"more than replicas + maxSurge pods: {history}"
    images = {p["spec"]["containers"][0]["image"] for p in await pods(api, selector="app=web")}
    assert images == {"nginx:1.28"}
    rss = {rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: rs["spec"]["replicas"]
           for rs in await replicasets(api, "web")}
    assert rss == {"1": 0, "2": 4}


async def test_recreate_deletes_every_old_pod_before_creating_new_ones(api: Client) -> None:
    async with FakeKubelet(api):
        await api.create("deployments", deployment("web", 3, strategy={"type": "Recreate"}), "default")
        await rolled_out(api, "web")
        old = {p["metadata"]["name"] for p in await pods(api, selector="app=web")}
        listing = await api.list("pods", "default")
        seen: list[set[str]] = []
        alive = set(old)

        async def watch() -> None:
            async with api.watch("pods", "default", resource_version=listing["metadata"]["resourceVersion"]) as events:
                async for kind, pod in events:
                    if kind == "DELETED":
                        alive.discard(pod["metadata"]["name"])
                    else:
                        alive.add(pod["metadata"]["name"])
                    seen.append(set(alive))

        watching = asyncio.create_task(watch())
        try:
            await api.patch("deployments", "web",
                            {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}}},
                            "default")
            await eventually(lambda: _new_generation_done(api, "web", old))
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
    for state in seen:
        assert not (state & old and state - old), f"old and new pods together: {state}"


async def test_old_replicasets_beyond_the_revision_history_limit_are_deleted(api: Client) -> None:
    async with FakeKubelet(api):
        await api.create("deployments", deployment("web", 1, revisionHistoryLimit=1), "default")
        await rolled_out(api, "web")
        for version in ("1.28", "1.29", "1.30"):
            await api.patch("deployments", "web", {"spec": {"template": {"spec": {"containers": [
                {"name": "app", "image": f"nginx:{version}"}]}}}}, "default")
            await eventually(lambda: _observed(api, "web"))
            await rolled_out(api, "web")

        async def pruned() -> list[str]:
            revisions = sorted(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                               for rs in await replicasets(api, "web"))
            return revisions if revisions == ["3", "4"] else []
        await eventually(pruned)


async def test_a_paused_deployment_does_not_roll_out_until_resumed(api: Client) -> None:
    async with FakeKubelet(api):
        await api.create("deployments", deployment("web", 2), "default")
        await rolled_out(api, "web")
        await api.patch("deployments", "web", {"spec": {"paused": True}}, "default")
        await api.patch("deployments", "web", {"spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "nginx:1.28"}]}}}}, "default")

        async def paused() -> bool:
            d = await api.get("deployments", "web", "default")
            cond = {c["type"]: c for c in d["status"]["conditions"]}["Progressing"]
            return cond["reason"] == "DeploymentPaused" and cond["status"] == "Unknown"
        await eventually(paused)
        await asyncio.sleep(0.2)
        assert len(await replicasets(api, "web")) == 1
        await api.patch("deployments", "web", {"spec": {"paused": False}}, "default")
        await eventually(lambda: _observed(api, "web"))
        await rolled_out(api, "web")
        images = {p["spec"]["containers"][0]["image"] for p in await pods(api, selector="app=web")}
        assert images == {"nginx:1.28"}


async def test_a_rollout_that_makes_no_progress_exceeds_its_deadline(api: Client) -> None:
    await api.create("deployments", deployment("stuck", 1, progressDeadlineSeconds=1), "default")

    async def timed_out() -> Obj:
        d = await api.get("deployments", "stuck", "default")
        cond = {c["type"]: c for c in (d.get("status") or {}).get("conditions") or []}.get("Progressing") or {}
        return cond if cond.get("reason") == "ProgressDeadlineExceeded" else {}
    cond = await eventually(timed_out, timeout=10)
    assert cond["status"] == "False"
    assert cond["message"].endswith("has timed out progressing.")


async def _observed(api: Client, name: str) -> bool:
    d = await api.get("deployments", name, "default")
    return (d.get("status") or {}).get("observedGeneration") == d["metadata"]["generation"]


async def _new_generation_done(api: Client, name: str, old: set[str]) -> bool:
    current = {p["metadata"]["name"] for p in await pods(api, selector=f"app={name}")}
    d = await api.get("deployments", name, "default")
    return len(current) == 3 and not current & old and (d.get("status") or {}).get("availableReplicas") == 3


async def _pod_count(api: Client, selector: str, n: int) -> bool:
    return len(await pods(api, selector=selector)) == n
