"""The resource quota controller in a cluster as `minik up` runs it (each controller writing as its own service
account under RBAC): a quota's status.hard follows its spec and status.used follows what the namespace holds."""

from __future__ import annotations

from controller_helpers import eventually

from minik.client import Client


def pod(name: str, cpu: str) -> dict:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu},
                                                   "limits": {"cpu": cpu, "memory": "64Mi"}}}]}}


async def test_status_used_follows_what_the_namespace_holds(api: Client) -> None:
    await api.create("resourcequotas", {"metadata": {"name": "q"}, "spec": {"hard": {
        "pods": "5", "requests.cpu": "2", "limits.memory": "1Gi", "count/deployments.apps": "3",
        "configmaps": "10"}}}, "default")

    async def status() -> dict:
        return (await api.get("resourcequotas", "q", "default")).get("status") or {}

    first = await eventually(status)
    assert first["hard"] == {"pods": "5", "requests.cpu": "2", "limits.memory": "1Gi",
                             "count/deployments.apps": "3", "configmaps": "10"}
    await api.create("pods", pod("a", "500m"), "default")
    await api.create("pods", pod("b", "250m"), "default")
    await api.create("configmaps", {"metadata": {"name": "settings"}}, "default")
    await api.create("deployments.apps", {"metadata": {"name": "web"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "app", "image": "busybox"}]}}}}, "default")

    async def counted() -> dict:
        used = (await status()).get("used") or {}
        assert used.get("pods") == "2" and used.get("requests.cpu") == "750m", used
        assert used.get("count/deployments.apps") == "1", used
        return used

    used = await eventually(counted)
    assert used["limits.memory"] == "128Mi"
    # kube-root-ca.crt is there too when the root CA publisher runs
    assert int(used["configmaps"]) >= 1
    await api.delete("pods", "a", "default", grace_period_seconds=0)

    async def freed() -> bool:
        used = (await status()).get("used") or {}
        return used.get("pods") == "1" and used.get("requests.cpu") == "250m"

    await eventually(freed)
    await api.patch("resourcequotas", "q", {"spec": {"hard": {"pods": "7"}}}, "default")

    async def raised() -> bool:
        return (await status())["hard"]["pods"] == "7"

    await eventually(raised)
