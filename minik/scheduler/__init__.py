"""The scheduler: assigns pending pods to nodes through the API, shaped like kube-scheduler's framework.

``framework`` (plugin protocols, Status, CycleState, PodInfo/NodeInfo), ``plugins/`` (one module per plugin and
the registry with weights), ``queue`` (active, backoff, unschedulable), ``cache`` (nodes, pods, assumed pods),
``algorithm`` (one decision, and its explanation), ``preemption`` and ``scheduler`` (informers, the loop, binding).
"""

from minik.scheduler.scheduler import Scheduler, SchedulerSettings

__all__ = ["Scheduler", "SchedulerSettings"]
