"""PodSecurity admission: the Pod Security Standards per namespace, as Kubernetes' built-in plugin applies them.

A namespace chooses a level (privileged, baseline, restricted) for each mode with its labels
``pod-security.kubernetes.io/enforce``, ``/warn`` and ``/audit`` (and ``-version`` labels, accepted and read as
"latest"). A namespace without labels is privileged: nothing is checked.

- **enforce**: a pod that violates the level is refused (403: ``pods "x" is forbidden: violates PodSecurity
  "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)``);
- **warn**: the request succeeds with a ``Warning`` header (``would violate PodSecurity "restricted:latest":
  ...``); workloads with pod templates (Deployments, Jobs, ...) are checked for warn and audit only, as their
  pods will be checked when they are created;
- **audit**: the violation is logged (``pod-security.kubernetes.io/audit-violations``), the request succeeds.

Pods are checked when created and when an update changes their spec, through the ephemeralcontainers subresource
too (a debug container is held to the namespace's level, as in Kubernetes); status and the other subresources are
not.
Setting an enforce level on a namespace warns about the pods already in it that would violate it.
"""

from __future__ import annotations

from typing import Any

import structlog

from minik.api.errors import forbidden
from minik.apiserver.admission.base import Attributes, ObjectReader
from minik.apiserver.admission.pod_security_checks import LEVELS, Violation, evaluate
from minik.apiserver.warnings import add_warning

log = structlog.get_logger("minik.admission.podsecurity")

Obj = dict[str, Any]

LABEL_PREFIX = "pod-security.kubernetes.io/"
#: what a write may go through and still be checked: the object itself, or a pod's ephemeral containers
_CHECKED_SUBRESOURCES = (None, "ephemeralcontainers")
MODES = ("enforce", "warn", "audit")

#: (group, plural) -> where the pod template is in the object
TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "replicationcontrollers"): ("spec", "template"),
    ("", "podtemplates"): ("template",),
    ("apps", "replicasets"): ("spec", "template"),
    ("apps", "deployments"): ("spec", "template"),
    ("apps", "statefulsets"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"),
    ("batch", "jobs"): ("spec", "template"),
    ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template"),
}


def _dig(obj: Obj | None, path: tuple[str, ...]) -> Obj:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj if isinstance(obj, dict) else {}


def namespace_levels(namespace: Obj | None) -> dict[str, tuple[str, str]]:
    """mode -> (level, version) from a namespace's labels; modes without a valid label are left out."""
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    levels = {}
    for mode in MODES:
        level = labels.get(LABEL_PREFIX + mode)
        if level in LEVELS and level != "privileged":
            levels[mode] = (level, str(labels.get(f"{LABEL_PREFIX}{mode}-version") or "latest"))
    return levels


def summary(violations: list[Violation]) -> str:
    return ", ".join(str(v) for v in violations)


class PodSecurity:
    name = "PodSecurity"

    def __init__(self, reader: ObjectReader) -> None:
        self._reader = reader

    async def validate(self, attrs: Attributes) -> None:
        group, plural = attrs.resource.group, attrs.resource.plural
        if (group, plural) == ("", "namespaces"):
            await self._namespace(attrs)
            return
        if attrs.operation not in ("CREATE", "UPDATE") or attrs.subresource not in _CHECKED_SUBRESOURCES or \
                attrs.obj is None:
            return
        if (group, plural) == ("", "pods"):
            pod_path: tuple[str, ...] = ()
        elif (group, plural) in TEMPLATES:
            pod_path = TEMPLATES[(group, plural)]
        else:
            return
        spec = _dig(_dig(attrs.obj, pod_path), ("spec",)) if pod_path else _dig(attrs.obj, ("spec",))
        if attrs.operation == "UPDATE":
            old = _dig(attrs.old, pod_path) if pod_path else (attrs.old or {})
            if _dig(old, ("spec",)) == spec and (not pod_path or _dig(old, ("metadata",)).get("annotations") ==
                                                 _dig(_dig(attrs.obj, pod_path), ("metadata",)).get("annotations")):
                return  # the pod (template) is unchanged: nothing new to check
        levels = namespace_levels(self._reader.get("", "v1", "namespaces", None, attrs.namespace or ""))
        if not levels:
            return
        meta = _dig(_dig(attrs.obj, pod_path), ("metadata",)) if pod_path else _dig(attrs.obj, ("metadata",))
        enforce = levels.get("enforce")
        if enforce is not None and not pod_path:
            found = evaluate(enforce[0], meta, spec)
            if found:
                what = f'{attrs.resource.group_resource} "{attrs.name}"' if attrs.name else \
                    attrs.resource.group_resource
                raise forbidden(f'{what} is forbidden: violates PodSecurity "{enforce[0]}:{enforce[1]}": '
                                f"{summary(found)}", plural, group, attrs.name)
        warn = levels.get("warn")
        if warn is not None:
            found = evaluate(warn[0], meta, spec)
            if found:
                add_warning(f'would violate PodSecurity "{warn[0]}:{warn[1]}": {summary(found)}')
        audit = levels.get("audit")
        if audit is not None:
            found = evaluate(audit[0], meta, spec)
            if found:
                log.warning("pod security audit", namespace=attrs.namespace, resource=plural, name=attrs.name,
                            user=attrs.user.name, **{"pod-security.kubernetes.io/audit-violations":
                                                     f'would violate PodSecurity "{audit[0]}:{audit[1]}": '
                                                     f"{summary(found)}"})

    async def _namespace(self, attrs: Attributes) -> None:
        """Refuse invalid level labels; on a new or stricter enforce level, warn about the pods that violate it."""
        if attrs.operation not in ("CREATE", "UPDATE") or attrs.obj is None:
            return
        labels = (attrs.obj.get("metadata") or {}).get("labels") or {}
        for mode in MODES:
            value = labels.get(LABEL_PREFIX + mode)
            if value is not None and value not in LEVELS:
                raise forbidden(f'namespaces "{attrs.name}" is forbidden: metadata.labels[{LABEL_PREFIX}{mode}]: '
                                f'Invalid value: "{value}": must be one of privileged, baseline, restricted',
                                "namespaces", "", attrs.name)
        new = namespace_levels(attrs.obj).get("enforce")
        if attrs.operation != "UPDATE" or new is None or new == namespace_levels(attrs.old).get("enforce"):
            return
        await self._warn_existing(attrs.name, new)

    async def _warn_existing(self, namespace: str, enforce: tuple[str, str]) -> None:
        offending = []
        for pod in await self._reader.list("", "v1", "pods", namespace):
            found = evaluate(enforce[0], _dig(pod, ("metadata",)), _dig(pod, ("spec",)))
            if found:
                offending.append((str(pod["metadata"].get("name")), found))
        if offending:
            add_warning(f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce level '
                        f'"{enforce[0]}:{enforce[1]}"')
            for name, found in offending:
                add_warning(f"{name}: {', '.join(v.reason for v in found)}")
