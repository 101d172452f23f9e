"""The registry: plugin names -> factories, and the default profile (which plugins run, each score's weight),
with kube-scheduler's default weights."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from minik.scheduler.framework import Plugin
from minik.scheduler.plugins.balanced_allocation import BalancedAllocation
from minik.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from minik.scheduler.plugins.node_affinity import NodeAffinity
from minik.scheduler.plugins.node_name import NodeName
from minik.scheduler.plugins.node_ports import NodePorts
from minik.scheduler.plugins.node_resources_fit import LEAST_ALLOCATED, NodeResourcesFit
from minik.scheduler.plugins.node_unschedulable import NodeUnschedulable
from minik.scheduler.plugins.pod_topology_spread import PodTopologySpread
from minik.scheduler.plugins.taint_toleration import TaintToleration
from minik.scheduler.plugins.volume_binding import VolumeBinding
from minik.scheduler.plugins.volume_restrictions import VolumeRestrictions

PluginFactory = Callable[["ProfileConfig"], Plugin]


@dataclass(frozen=True)
class ProfileConfig:
    scoring_strategy: str = LEAST_ALLOCATED
    """NodeResourcesFit's scoring: LeastAllocated (spread) or MostAllocated (bin packing)."""

    disabled: frozenset[str] = frozenset()
    """Plugins of the default profile not to run."""

    weights: dict[str, int] = field(default_factory=dict)
    """Score weights overriding DEFAULT_WEIGHTS."""

    hard_pod_affinity_weight: int = 1
    """InterPodAffinity's score for a node where a running pod's required affinity selects the pod (0-100)."""

    volume_bind_timeout_seconds: float = 600.0
    """How long VolumeBinding waits for a pod's claims to be bound before the pod goes back to the queue
    (kube-scheduler's bindTimeoutSeconds)."""


REGISTRY: dict[str, PluginFactory] = {
    "NodeUnschedulable": lambda c: NodeUnschedulable(),
    "NodeName": lambda c: NodeName(),
    "TaintToleration": lambda c: TaintToleration(),
    "NodeAffinity": lambda c: NodeAffinity(),
    "NodePorts": lambda c: NodePorts(),
    "NodeResourcesFit": lambda c: NodeResourcesFit(c.scoring_strategy),
    "PodTopologySpread": lambda c: PodTopologySpread(),
    "InterPodAffinity": lambda c: InterPodAffinity(c.hard_pod_affinity_weight),
    "NodeResourcesBalancedAllocation": lambda c: BalancedAllocation(),
    "VolumeRestrictions": lambda c: VolumeRestrictions(),
    "VolumeBinding": lambda c: VolumeBinding(c.volume_bind_timeout_seconds),
}

#: the default profile in kube-scheduler's order (cheap, decisive filters first)
DEFAULT_PLUGINS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
                   "NodeResourcesFit", "VolumeRestrictions", "VolumeBinding", "PodTopologySpread",
                   "InterPodAffinity", "NodeResourcesBalancedAllocation")

#: kube-scheduler's default score weights
DEFAULT_WEIGHTS = {"TaintToleration": 3, "NodeAffinity": 2, "PodTopologySpread": 2, "InterPodAffinity": 2,
                   "NodeResourcesFit": 1, "NodeResourcesBalancedAllocation": 1}


@dataclass(frozen=True)
class Profile:
    plugins: tuple[Plugin, ...]
    weights: dict[str, int]


def build_profile(config: ProfileConfig | None = None) -> Profile:
    config = config or ProfileConfig()
    unknown = set(config.disabled) - set(REGISTRY)
    if unknown:
        raise ValueError(f"unknown plugins {sorted(unknown)}")
    plugins = tuple(REGISTRY[name](config) for name in DEFAULT_PLUGINS if name not in config.disabled)
    weights = {**DEFAULT_WEIGHTS, **config.weights}
    return Profile(plugins, weights)
