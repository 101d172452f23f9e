"""DefaultTolerationSeconds: every pod tolerates the not-ready and unreachable NoExecute taints for 300 s unless it
says otherwise, so a node that goes away takes five minutes to lose its pods rather than none."""

from __future__ import annotations

from typing import Any

from minik.api.placement import TAINT_NOT_READY, TAINT_UNREACHABLE
from minik.apiserver.admission.base import Attributes

#: Kubernetes' --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds
DEFAULT_TOLERATION_SECONDS = 300


def _tolerates_key(toleration: Any, key: str) -> bool:
    """A toleration that covers ``key``'s NoExecute taint (an empty key or effect covers every one)."""
    if not isinstance(toleration, dict):
        return False
    return toleration.get("key") in (None, "", key) and toleration.get("effect") in (None, "", "NoExecute")


class DefaultTolerationSeconds:
    name = "DefaultTolerationSeconds"

    def __init__(self, not_ready_seconds: int = DEFAULT_TOLERATION_SECONDS,
                 unreachable_seconds: int = DEFAULT_TOLERATION_SECONDS) -> None:
        self.defaults = ((TAINT_NOT_READY, not_ready_seconds), (TAINT_UNREACHABLE, unreachable_seconds))

    async def admit(self, attrs: Attributes) -> None:
        if attrs.resource.plural != "pods" or attrs.resource.group or attrs.subresource or \
                attrs.operation not in ("CREATE", "UPDATE") or not isinstance(attrs.obj, dict):
            return
        spec = attrs.obj.get("spec")
        if not isinstance(spec, dict):
            return
        tolerations = spec.get("tolerations")
        if tolerations is None:
            tolerations = []
        if not isinstance(tolerations, list):
            return  # validation reports it
        added = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
                 for key, seconds in self.defaults if not any(_tolerates_key(t, key) for t in tolerations)]
        if added:
            spec["tolerations"] = tolerations + added
