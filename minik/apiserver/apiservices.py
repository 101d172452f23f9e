"""The local APIServices: one per group-version the API server serves (``v1.``, ``v1.apps``, ...), with the
priorities Kubernetes gives them, kept in step with the registry as Kubernetes' autoregister controller (built-in
groups, labelled ``kube-aggregator.kubernetes.io/automanaged: onstart``) and CRD registration controller (the
groups CRDs add, labelled ``true``, priority 1000/100) keep them.

``LocalAPIServices.sync`` makes the stored APIServices match the registry: it runs when the server starts, and
whoever changes the registry at run time (the CustomResourceDefinitions) calls it after each change. APIServices
a person created (not automanaged) are left alone.
"""

from __future__ import annotations

from typing import Any

import structlog

from minik.api.errors import StatusError
from minik.api.registry import Registry, ResourceType
from minik.apiserver.request import User
from minik.apiserver.rest import ResourceRest

log = structlog.get_logger("minik.apiserver.apiservices")

Obj = dict[str, Any]

GROUP = "apiregistration.k8s.io"
AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"
#: the label of the APIServices of the built-in groups, and of those custom resources add
ON_START, CUSTOM = "onstart", "true"

#: (group, version) -> (groupPriorityMinimum, versionPriority), Kubernetes' table for its own group-versions
PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apiregistration.k8s.io", "v1"): (18000, 15),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
}
#: what a group-version of a custom resource gets (Kubernetes' crdRegistrationController)
CUSTOM_PRIORITY = (1000, 100)


def apiservice_name(group: str, version: str) -> str:
    return f"{version}.{group}"


def local_apiservice(group: str, version: str, custom: bool = False) -> Obj:
    """The local APIService of one group-version."""
    minimum, priority = CUSTOM_PRIORITY if custom else PRIORITIES.get((group, version), CUSTOM_PRIORITY)
    return {"apiVersion": f"{GROUP}/v1", "kind": "APIService",
            "metadata": {"name": apiservice_name(group, version),
                         "labels": {AUTOMANAGED: CUSTOM if custom else ON_START}},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": minimum,
                     "versionPriority": priority}}


def _is_custom(resource: ResourceType) -> bool:
    return getattr(resource, "custom", None) is not None  # set for the types CustomResourceDefinitions add


def wanted(registry: Registry) -> dict[str, Obj]:
    """The local APIService of every group-version the registry serves, by name (a group-version is a custom
    resource's when every type in it is)."""
    custom: dict[tuple[str, str], bool] = {}
    for t in registry.types:
        key = (t.group, t.version)
        custom[key] = custom.get(key, True) and _is_custom(t)
    return {apiservice_name(g, v): local_apiservice(g, v, is_custom) for (g, v), is_custom in custom.items()}


def _label(obj: Obj) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(AUTOMANAGED) or "")


class LocalAPIServices:
    """Keeps the stored local APIServices equal to what the registry serves."""

    def __init__(self, rest: ResourceRest, registry: Registry, user: User) -> None:
        self.rest = rest
        self.registry = registry
        self.user = user

    async def sync(self) -> None:
        """Create the missing, correct the changed and delete the gone automanaged APIServices."""
        want = wanted(self.registry)
        store = self.rest.store
        for record in (await store.list(self.rest.resource.prefix())).items:
            current = record.object()
            name = current["metadata"]["name"]
            if name in want:
                await self._correct(current, want.pop(name))
            elif _label(current) in (ON_START, CUSTOM):
                await self._ignore_gone(self.rest.delete(None, name, {}, self.user))
        for obj in want.values():
            try:
                await self.rest.create(obj, None, self.user)
            except StatusError as exc:
                if exc.reason != "AlreadyExists":
                    raise

    async def _correct(self, current: Obj, want: Obj) -> None:
        spec = current.get("spec") or {}
        if _label(current) not in (ON_START, CUSTOM) and spec.get("service") is not None:
            log.warning("an APIService points a served group-version elsewhere; left as it is",
                        apiservice=current["metadata"]["name"])
            return
        if spec == want["spec"] and _label(current) == _label(want):
            return

        def correct(obj: Obj) -> Obj:
            obj["spec"] = want["spec"]
            obj["metadata"].setdefault("labels", {})[AUTOMANAGED] = _label(want)
            return obj

        await self._ignore_gone(self.rest.patch(None, current["metadata"]["name"], correct, self.user))

    @staticmethod
    async def _ignore_gone(call: Any) -> None:
        try:
            await call
        except StatusError as exc:
            if exc.code != 404:
                raise
