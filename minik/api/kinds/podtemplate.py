"""PodTemplate (core/v1): a stored pod template (what `kubectl get podtemplates` lists; some controllers and tools
keep their templates so). Validated as the templates of workloads are, by the pod spec rules."""

from __future__ import annotations

from minik.api.kinds.common import Causes, Obj
from minik.api.kinds.podspec import default_pod_template
from minik.api.kinds.podvalidation import validate_pod_template
from minik.api.strategy import Strategy

__all__ = ["PodTemplateStrategy"]


class PodTemplateStrategy(Strategy):
    #: the generation counts changes of the template (Kubernetes' podTemplate strategy)
    tracks_generation = True

    def default(self, obj: Obj) -> None:
        default_pod_template(obj)

    def validate(self, obj: Obj) -> Causes:
        return super().validate(obj) + validate_pod_template(obj.get("template"), "template")
