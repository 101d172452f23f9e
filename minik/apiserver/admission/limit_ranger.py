"""LimitRanger: the LimitRanges of a pod's namespace give its containers the requests and limits they leave out
(the ``default`` and ``defaultRequest`` of Container items, noted in the ``kubernetes.io/limit-ranger``
annotation), then refuse a pod whose containers or whole self fall outside a min, a max or a
maxLimitRequestRatio, with Kubernetes' words (``pods "x" is forbidden: minimum cpu usage per Container is 100m,
but request is 50m``).

As Kubernetes' plugin, it acts on pod creates only: a pod's containers cannot change once it exists.
minik serves no PersistentVolumeClaims, so the PersistentVolumeClaim items are stored and validated but bind
nothing.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal
from typing import Any

from minik.api.errors import StatusError, forbidden
from minik.api.kinds.common import dict_at, dicts_at, ensure_dict
from minik.api.kinds.limitrange import CONTAINER, POD
from minik.api.kinds.podspec import pod_qos_class
from minik.api.podresources import container_resources, pod_totals
from minik.api.quantity import Quantity, ResourceList, resource_list
from minik.apiserver.admission.base import Attributes, ObjectReader

Obj = dict[str, Any]

ANNOTATION = "kubernetes.io/limit-ranger"
#: the largest value whose thousandths still fit an int64 (Kubernetes compares in thousandths below it)
MAX_MILLI_VALUE = (2 ** 63 - 1) // 1000


def _whole(q: Quantity) -> int:
    return int(q.value.to_integral_value(rounding=ROUND_CEILING))


def _milli(q: Quantity) -> int:
    return int((q.value * 1000).to_integral_value(rounding=ROUND_CEILING))


def _comparable(*amounts: Quantity | None) -> list[int]:
    """The amounts at one precision, as Kubernetes compares them: thousandths when every amount allows, else
    whole units (both rounded up). A missing amount counts as zero."""
    present = [a if a is not None else Quantity(Decimal(0)) for a in amounts]
    if all(_whole(a) <= MAX_MILLI_VALUE for a in present):
        return [_milli(a) for a in present]
    return [_whole(a) for a in present]


def min_violation(kind: str, name: str, enforced: Quantity, requests: ResourceList, limits: ResourceList) -> str:
    request, limit = requests.get(name), limits.get(name)
    observed_request, observed_limit, bound = _comparable(request, limit, enforced)
    if request is None:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    if observed_request < bound:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {request}"
    if limit is not None and observed_limit < bound:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {limit}"
    return ""


def max_violation(kind: str, name: str, enforced: Quantity, requests: ResourceList, limits: ResourceList) -> str:
    request, limit = requests.get(name), limits.get(name)
    observed_request, observed_limit, bound = _comparable(request, limit, enforced)
    if limit is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    if observed_limit > bound:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {limit}"
    if request is not None and observed_request > bound:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {request}"
    return ""


def ratio_violation(kind: str, name: str, enforced: Quantity, requests: ResourceList, limits: ResourceList) -> str:
    request, limit = requests.get(name), limits.get(name)
    observed_request, observed_limit, _ = _comparable(request, limit, enforced)
    if request is None or observed_request == 0:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, but no request is specified or "
                f"request is 0")
    if limit is None or observed_limit == 0:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, but no limit is specified or limit "
                f"is 0")
    observed = observed_limit / observed_request
    shown = observed
    allowed = float(_whole(enforced))
    if _whole(enforced) <= MAX_MILLI_VALUE:
        observed *= 1000
        allowed = float(_milli(enforced))
    if observed > allowed:
        return f"{name} max limit to request ratio per {kind} is {enforced}, but provided ratio is {shown:f}"
    return ""


_CHECKS = (("min", min_violation), ("max", max_violation), ("maxLimitRequestRatio", ratio_violation))


def _violations(item: Obj, kind: str, requests: ResourceList, limits: ResourceList) -> list[str]:
    found = []
    for field, check in _CHECKS:
        for name, enforced in sorted(resource_list(item.get(field)).items()):
            problem = check(kind, name, enforced, requests, limits)
            if problem:
                found.append(problem)
    return found


def aggregate(messages: list[str]) -> str:
    """Kubernetes' aggregate error: one message as it is, several (each once) in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def pod_violations(limit_range: Obj, spec: Obj) -> list[str]:
    """Why the pod's containers or the pod itself fall outside ``limit_range`` (empty when they do not)."""
    found: list[str] = []
    for item in dicts_at(dict_at(limit_range, "spec"), "limits"):
        kind = item.get("type")
        if kind == CONTAINER:
            for key in ("containers", "initContainers"):
                for container in dicts_at(spec, key):
                    found += _violations(item, CONTAINER, container_resources(container, "requests"),
                                         container_resources(container, "limits"))
        elif kind == POD:
            found += _violations(item, POD, pod_totals(spec, "requests"), pod_totals(spec, "limits"))
    return found


def apply_defaults(limit_range: Obj, pod: Obj) -> None:
    """Give every container the default requests and limits of the range's Container items it leaves out, and
    say what was set in the pod's ``kubernetes.io/limit-ranger`` annotation."""
    requests: Obj = {}
    limits: Obj = {}
    for item in dicts_at(dict_at(limit_range, "spec"), "limits"):
        if item.get("type") == CONTAINER:
            requests.update(dict_at(item, "defaultRequest"))
            limits.update(dict_at(item, "default"))
    if not requests and not limits:
        return
    spec = dict_at(pod, "spec")
    notes: list[str] = []
    for key, word in (("containers", "container"), ("initContainers", "init container")):
        for container in dicts_at(spec, key):
            resources = ensure_dict(container, "resources")
            if resources is None:
                continue
            set_limits = _fill(resources, "limits", limits)
            set_requests = _fill(resources, "requests", requests)
            name = container.get("name") or ""
            if set_requests:
                notes.append(f"{', '.join(sorted(set_requests))} request for {word} {name}")
            if set_limits:
                notes.append(f"{', '.join(sorted(set_limits))} limit for {word} {name}")
    if notes:
        meta = ensure_dict(pod, "metadata")
        annotations = ensure_dict(meta, "annotations") if meta is not None else None
        if annotations is not None:
            annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


def _fill(resources: Obj, field: str, defaults: Obj) -> list[str]:
    if not defaults:
        return []
    current = ensure_dict(resources, field)
    if current is None:
        return []
    added = [name for name in defaults if name not in current]
    for name in added:
        current[name] = defaults[name]
    if not current:
        resources.pop(field, None)
    return added


class LimitRanger:
    name = "LimitRanger"

    def __init__(self, reader: ObjectReader) -> None:
        self._reader = reader

    @staticmethod
    def _applies(attrs: Attributes) -> bool:
        resource = attrs.resource
        return attrs.operation == "CREATE" and not attrs.subresource and not resource.group and \
            resource.plural == "pods" and isinstance(attrs.obj, dict) and isinstance(attrs.obj.get("spec"), dict)

    async def _ranges(self, namespace: str | None) -> list[Obj]:
        # every pod create asks: a range without limits changes nothing, and the filtered list is kept while no
        # LimitRange is written
        ranges = await self._reader.list("", "v1", "limitranges", namespace, containing=b'"limits"')
        return sorted(ranges, key=lambda r: str(dict_at(r, "metadata").get("name") or ""))

    async def admit(self, attrs: Attributes) -> None:
        if not self._applies(attrs):
            return
        ranges = await self._ranges(attrs.namespace)
        if not ranges:
            return
        pod = attrs.obj
        assert pod is not None
        for limit_range in ranges:
            apply_defaults(limit_range, pod)
        status = pod.get("status")
        if isinstance(status, dict) and "qosClass" in status:  # the defaults may change the pod's class
            status["qosClass"] = pod_qos_class(pod["spec"])

    async def validate(self, attrs: Attributes) -> None:
        if not self._applies(attrs):
            return
        spec = attrs.obj["spec"] if attrs.obj is not None else {}
        for limit_range in await self._ranges(attrs.namespace):
            problems = pod_violations(limit_range, spec)
            if problems:
                raise self._forbidden(attrs, aggregate(problems))

    @staticmethod
    def _forbidden(attrs: Attributes, reason: str) -> StatusError:
        return forbidden(f'pods "{attrs.name}" is forbidden: {reason}', "pods", "", attrs.name)
