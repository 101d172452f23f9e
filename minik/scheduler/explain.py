"""Explain a scheduling decision from the cluster's current state, read through the client: for every node, the
filter that rejects the pod and why, or each score plugin's weighted score and the total; and the winner."""

from __future__ import annotations

from minik.client import Client
from minik.scheduler.algorithm import Algorithm, Explanation
from minik.scheduler.cache import Cache
from minik.scheduler.framework import PodInfo
from minik.scheduler.objects import RESOURCES, ClusterObjects
from minik.scheduler.plugins.registry import ProfileConfig, build_profile


async def load_cache(client: Client) -> Cache:
    """The scheduler's view of the cluster: every node, every pod bound to one that is still running, and the
    pending pods preemption nominated to a node."""
    cache = Cache()
    for node in (await client.list_all("nodes"))["items"]:
        cache.set_node(node)
    for pod in (await client.list_all("pods"))["items"]:
        info = PodInfo(pod)
        if info.terminal:
            continue
        if info.node_name:
            cache.add_pod(info)
        elif info.nominated_node and not info.deleting:
            cache.nominate(info, info.nominated_node)
    return cache


async def load_objects(client: Client) -> ClusterObjects:
    """Namespaces, services and controllers, as the scheduler's informers hold them."""
    objects = ClusterObjects()
    for resource in RESOURCES:
        for obj in (await client.list_all(resource))["items"]:
            objects.set(resource, obj)
    return objects


async def explain_pod(client: Client, name: str, namespace: str, profile: ProfileConfig | None = None
                      ) -> Explanation:
    """How the default profile would place the pod now (a bound pod is taken off its node first)."""
    pod = await client.get("pods", name, namespace)
    info = PodInfo(pod)
    cache = await load_cache(client)
    cache.remove_pod(info.key)
    cache.clear_nomination(info.key)
    return Algorithm(build_profile(profile), cluster=await load_objects(client)).explain(info, cache)
