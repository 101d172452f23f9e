"""RuntimeClass: a pod naming a RuntimeClass (spec.runtimeClassName) gets the class's overhead as its
spec.overhead and the class's scheduling constraints merged into its nodeSelector and tolerations; a pod naming a
class that does not exist is refused, as is one whose overhead disagrees with its class's (Kubernetes' plugin and
its messages: ``pod rejected: RuntimeClass "x" not found``)."""

from __future__ import annotations

import copy
from typing import Any

from minik.api.errors import StatusError, forbidden
from minik.api.kinds.common import dict_at
from minik.api.quantity import resource_list
from minik.apiserver.admission.base import Attributes, ObjectReader

Obj = dict[str, Any]

GROUP, VERSION, PLURAL = "node.k8s.io", "v1", "runtimeclasses"


def _same_amounts(a: Any, b: Any) -> bool:
    """Two resource lists of equal amounts (``1Gi`` equals ``1024Mi``)."""
    return {k: q.value for k, q in resource_list(a).items()} == {k: q.value for k, q in resource_list(b).items()}


def _is_superset(ss: Obj, t: Obj) -> bool:
    """Whether toleration ``ss`` tolerates everything ``t`` does (Kubernetes' tolerations.isSuperset)."""
    if ss == t:
        return True
    if t.get("key", "") != ss.get("key", "") and (ss.get("key") or ss.get("operator") != "Exists"):
        return False
    if t.get("effect", "") != ss.get("effect", "") and ss.get("effect"):
        return False
    if ss.get("effect") == "NoExecute" and ss.get("tolerationSeconds") is not None:
        seconds = t.get("tolerationSeconds")
        if seconds is None or seconds > ss["tolerationSeconds"]:
            return False
    operator = ss.get("operator") or "Equal"
    if operator == "Equal":
        return t.get("operator") == "Equal" and t.get("value", "") == ss.get("value", "")
    return operator == "Exists"


def merge_tolerations(first: list[Any], second: list[Any]) -> list[Any]:
    """Both lists, without a toleration another one kept already covers (Kubernetes' MergeTolerations)."""
    everything = [t for t in first + second if isinstance(t, dict)]
    merged: list[Obj] = []
    for i, t in enumerate(everything):
        if any(_is_superset(kept, t) for kept in merged):
            continue
        if any(t != later and _is_superset(later, t) for later in everything[i + 1:]):
            continue
        merged.append(t)
    return merged


class RuntimeClass:
    name = "RuntimeClass"

    def __init__(self, reader: ObjectReader) -> None:
        self._reader = reader

    @staticmethod
    def _spec(attrs: Attributes) -> Obj | None:
        resource = attrs.resource
        if attrs.operation != "CREATE" or attrs.subresource or resource.group or resource.plural != "pods":
            return None
        spec = (attrs.obj or {}).get("spec")
        return spec if isinstance(spec, dict) else None

    def _runtime_class(self, attrs: Attributes, spec: Obj) -> Obj | None:
        name = spec.get("runtimeClassName")
        if name is None:
            return None
        found = self._reader.get(GROUP, VERSION, PLURAL, None, str(name))
        if found is None:
            raise self._forbidden(attrs, f'pod rejected: RuntimeClass "{name}" not found')
        return found

    async def admit(self, attrs: Attributes) -> None:
        spec = self._spec(attrs)
        if spec is None:
            return
        runtime_class = self._runtime_class(attrs, spec)
        if runtime_class is None:
            return
        overhead = runtime_class.get("overhead")
        if isinstance(overhead, dict) and overhead.get("podFixed") is not None:
            fixed = overhead["podFixed"]
            if spec.get("overhead") and not _same_amounts(spec["overhead"], fixed):
                raise self._forbidden(attrs, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined "
                                             "Overhead")
            spec["overhead"] = copy.deepcopy(fixed)
        scheduling = runtime_class.get("scheduling")
        if isinstance(scheduling, dict):
            self._schedule(attrs, spec, scheduling)

    def _schedule(self, attrs: Attributes, spec: Obj, scheduling: Obj) -> None:
        wanted = dict_at(scheduling, "nodeSelector")
        selector = spec.get("nodeSelector")
        if not isinstance(selector, dict):
            selector = dict(wanted) if wanted else selector
        else:
            for key, value in wanted.items():
                have = selector.get(key)
                if have is not None and have != value:
                    raise self._forbidden(attrs, f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = "
                                                 f"{value}; pod.spec.nodeSelector[{key}] = {have}")
                selector[key] = value
        if selector is not None:
            spec["nodeSelector"] = selector
        own = spec.get("tolerations")
        extra = scheduling.get("tolerations")
        if isinstance(extra, list) and extra:
            spec["tolerations"] = merge_tolerations(own if isinstance(own, list) else [], copy.deepcopy(extra))

    async def validate(self, attrs: Attributes) -> None:
        spec = self._spec(attrs)
        if spec is None or not spec.get("overhead"):
            return
        runtime_class = self._runtime_class(attrs, spec)
        fixed = dict_at(runtime_class, "overhead").get("podFixed") if runtime_class is not None else None
        if fixed is None:
            raise self._forbidden(attrs, "pod rejected: Pod Overhead set without corresponding RuntimeClass "
                                         "defined Overhead")
        if not _same_amounts(fixed, spec["overhead"]):
            raise self._forbidden(attrs, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined "
                                         "Overhead")

    @staticmethod
    def _forbidden(attrs: Attributes, reason: str) -> StatusError:
        return forbidden(f'pods "{attrs.name}" is forbidden: {reason}', "pods", "", attrs.name)
