"""What a PodDisruptionBudget's status means, shared by the two that write it: the disruption controller, which
counts the healthy pods, and the eviction subresource, which spends one allowed disruption per evicted pod.

Both keep the DisruptionAllowed condition as Kubernetes' pdb helpers do: True with reason SufficientPods while
disruptionsAllowed > 0, else False with InsufficientPods; SyncFailed (False, with the error as message) when the
controller cannot compute the status.
"""

from __future__ import annotations

from typing import Any

from minik.api.selectors import LabelSelector, selector_from_dict
from minik.api.timestamps import rfc3339

Obj = dict[str, Any]

DISRUPTION_ALLOWED = "DisruptionAllowed"
SUFFICIENT_PODS = "SufficientPods"
INSUFFICIENT_PODS = "InsufficientPods"
SYNC_FAILED = "SyncFailed"

#: how long a pod the eviction subresource let go stays in status.disruptedPods (not counted healthy) before the
#: controller gives up waiting for its deletion (Kubernetes' DeletionTimeout)
DELETION_TIMEOUT_SECONDS = 120.0

#: more disruptedPods than this and evictions are refused until the controller catches up (MaxDisruptedPodSize)
MAX_DISRUPTED_PODS = 2000


def status_of(pdb: Obj) -> Obj:
    status = pdb.get("status")
    return status if isinstance(status, dict) else {}


def count(status: Obj, field: str) -> int:
    value = status.get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def pod_selector(pdb: Obj) -> LabelSelector:
    """The pods the budget covers, as the controller counts them: in policy/v1 a missing selector selects
    nothing and an empty one every pod of the namespace. ValueError for a selector that cannot be read."""
    spec = pdb.get("spec")
    return selector_from_dict(spec.get("selector") if isinstance(spec, dict) else None)


def set_condition(status: Obj, condition_status: str, reason: str, message: str, now: float) -> None:
    """Set the DisruptionAllowed condition (metav1's SetStatusCondition: lastTransitionTime moves only when the
    status changes), observing the status's observedGeneration."""
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = []
    conditions = [c for c in conditions if isinstance(c, dict)]
    current = next((c for c in conditions if c.get("type") == DISRUPTION_ALLOWED), None)
    transition = rfc3339(now)
    if current is not None and current.get("status") == condition_status and current.get("lastTransitionTime"):
        transition = current["lastTransitionTime"]
    condition = {"type": DISRUPTION_ALLOWED, "status": condition_status,
                 "observedGeneration": count(status, "observedGeneration"), "lastTransitionTime": transition,
                 "reason": reason, "message": message}
    status["conditions"] = [condition if c is current else c for c in conditions] if current is not None \
        else [*conditions, condition]


def update_disruption_allowed(status: Obj, now: float) -> None:
    """The condition that follows disruptionsAllowed (UpdateDisruptionAllowedCondition)."""
    if count(status, "disruptionsAllowed") > 0:
        set_condition(status, "True", SUFFICIENT_PODS, "", now)
    else:
        set_condition(status, "False", INSUFFICIENT_PODS, "", now)


def conditions_up_to_date(status: Obj) -> bool:
    """Whether DisruptionAllowed already says what disruptionsAllowed and observedGeneration say."""
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == DISRUPTION_ALLOWED:
            if condition.get("observedGeneration") != count(status, "observedGeneration"):
                return False
            if count(status, "disruptionsAllowed") > 0:
                return condition.get("status") == "True" and condition.get("reason") == SUFFICIENT_PODS
            return condition.get("status") == "False" and condition.get("reason") == INSUFFICIENT_PODS
    return False
