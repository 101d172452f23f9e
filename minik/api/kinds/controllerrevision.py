"""ControllerRevision (apps/v1): an immutable snapshot of a controller's state (the StatefulSet controller keeps its
pod templates so), numbered by ``revision``; what `kubectl rollout history` lists and `kubectl rollout undo`
applies back."""

from __future__ import annotations

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj
from minik.api.strategy import Strategy

__all__ = ["ControllerRevisionStrategy"]


class ControllerRevisionStrategy(Strategy):
    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        if obj.get("data") is None:
            causes.append(v.required("data", "data is mandatory"))
        return causes + v.validate_nonnegative(obj.get("revision"), "revision")

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        return super().validate_update(obj, old) + v.validate_immutable(obj.get("data"), old.get("data"), "data")
