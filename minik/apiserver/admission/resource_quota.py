"""ResourceQuota: a write that would take a namespace past a quota's hard limit is refused (403 Forbidden, in
Kubernetes' words: ``exceeded quota: NAME, requested: pods=1, used: pods=2, limited: pods=2``), and so is a pod
that leaves out a cpu or memory request or limit a quota counts (``failed quota: NAME: must specify
requests.cpu``).

Usage is counted here from the store itself (minik.api.quota's rules), not from status.used: the quota controller
writes status.used for people and clients, a moment behind. Charging is race-safe: each namespace's checks run
one at a time, and a write admitted but not yet stored is held as an in-flight charge that later checks add to
the stored usage, until the write is decided (``Attributes.finish``) and the store holds it, or it failed. Two
concurrent creates can therefore never both take the last slot.

As in Kubernetes, pods are charged on create only, Services on create and update (their type may change what
they count), and every other namespaced kind on create, as ``count/<resource>.<group>``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from minik.api.errors import StatusError, forbidden
from minik.api.kinds.common import dict_at
from minik.api.quantity import ResourceList, resource_list
from minik.api.quota import (
    ZERO,
    add,
    constraint_problem,
    counted,
    matching_names,
    pretty,
    quota_selects,
    subtract_nonnegative,
    usage,
)
from minik.api.registry import ResourceType
from minik.apiserver.admission.base import Attributes, ObjectReader
from minik.store import Record

Obj = dict[str, Any]


@dataclass
class _Charge:
    """A write admitted and not yet decided: what it adds, to which object."""

    resource: ResourceType
    key: str
    #: the object's revision when an update was admitted (None for a create)
    revision: int | None
    obj: Obj
    delta: ResourceList

    def landed(self, record: Record | None) -> bool:
        """Whether the store already holds this write (then its usage counts from there)."""
        if self.revision is None:
            return record is not None
        return record is None or record.mod_revision != self.revision


class ResourceQuotaAdmission:
    name = "ResourceQuota"

    #: object usages remembered by store key (with the revision they were worked out at)
    CACHED_USAGES = 50_000

    def __init__(self, reader: ObjectReader) -> None:
        self._reader = reader
        self._locks: dict[str, asyncio.Lock] = {}
        self._charges: dict[str, list[_Charge]] = {}
        self._usages: dict[str, tuple[int, ResourceList, Obj]] = {}

    # -- which requests ------------------------------------------------------------------------------------------
    @staticmethod
    def _applies(attrs: Attributes) -> bool:
        resource = attrs.resource
        if attrs.subresource or not attrs.namespace or not isinstance(attrs.obj, dict) or not counted(resource):
            return False
        if attrs.operation == "CREATE":
            return True
        return attrs.operation == "UPDATE" and resource.group == "" and resource.plural == "services"

    async def _quotas(self, namespace: str) -> list[Obj]:
        # every write in a namespace asks: kept while no quota is written, and quotas without hard limits skipped
        quotas = await self._reader.list("", "v1", "resourcequotas", namespace, containing=b'"hard"')
        return sorted(quotas, key=lambda q: str((q.get("metadata") or {}).get("name") or ""))

    # -- the check -----------------------------------------------------------------------------------------------
    async def validate(self, attrs: Attributes) -> None:
        if not self._applies(attrs):
            return
        namespace = str(attrs.namespace)
        quotas = await self._quotas(namespace)
        if not quotas:
            return
        resource, obj = attrs.resource, attrs.obj
        assert obj is not None
        now = time.time()
        delta = usage(resource, obj, now)
        if attrs.operation == "UPDATE" and attrs.old is not None:
            delta = subtract_nonnegative(delta, usage(resource, attrs.old, now))
        lock = self._locks.setdefault(namespace, asyncio.Lock())
        async with lock:
            for quota in quotas:
                if not quota_selects(quota, resource, obj):
                    continue
                hard = resource_list((quota.get("spec") or {}).get("hard"))
                tracked = matching_names(resource, hard)
                problem = constraint_problem(resource, obj, tracked)
                if problem:
                    raise self._forbidden(attrs, f"failed quota: {quota['metadata']['name']}: {problem}")
                requested = {name: amount for name, amount in delta.items() if name in tracked}
                if not any(amount.value for amount in requested.values()):
                    continue
                used = await self._used(quota, namespace, set(requested), now)
                exceeded = sorted(name for name, amount in requested.items()
                                  if (used[name].value + amount.value) > hard[name].value)
                if exceeded:
                    raise self._forbidden(attrs, (
                        f"exceeded quota: {quota['metadata']['name']}, "
                        f"requested: {pretty({n: requested[n] for n in exceeded})}, "
                        f"used: {pretty({n: used[n] for n in exceeded})}, "
                        f"limited: {pretty({n: hard[n] for n in exceeded})}"))
            if attrs.dry_run:
                return
            self._hold(attrs, namespace, resource, obj, delta)

    def _hold(self, attrs: Attributes, namespace: str, resource: ResourceType, obj: Obj, delta: ResourceList) -> None:
        name = str((obj.get("metadata") or {}).get("name") or attrs.name)
        key = resource.key(namespace, name)
        record = self._reader.store.get(key)
        charge = _Charge(resource, key, record.mod_revision if attrs.operation == "UPDATE" and record else None,
                         obj, delta)
        self._charges.setdefault(namespace, []).append(charge)

        async def release(_stored: bool) -> None:
            charges = self._charges.get(namespace, [])
            if charge in charges:
                charges.remove(charge)
            if not charges:
                self._charges.pop(namespace, None)

        attrs.finishers.append(release)

    # -- counting ------------------------------------------------------------------------------------------------
    async def _used(self, quota: Obj, namespace: str, names: set[str], now: float) -> ResourceList:
        """What the namespace uses of ``names`` under ``quota``: the stored objects it selects, plus the charges
        in flight that are not stored yet."""
        total: ResourceList = {}
        store, registry = self._reader.store, self._reader.registry
        for resource in registry.types:
            if not counted(resource) or not matching_names(resource, names):
                continue
            prefix = resource.prefix(namespace)
            if store.count(prefix) == 0:
                continue
            for record in (await store.list(prefix)).items:
                amounts, obj = self._usage_of(resource, record, now)
                if quota_selects(quota, resource, obj):
                    add(total, {n: a for n, a in amounts.items() if n in names})
        for charge in self._charges.get(namespace, []):
            if not charge.landed(store.get(charge.key)) and quota_selects(quota, charge.resource, charge.obj):
                add(total, {n: a for n, a in charge.delta.items() if n in names})
        for name in names:
            total.setdefault(name, ZERO)
        return total

    def _usage_of(self, resource: ResourceType, record: Record, now: float) -> tuple[ResourceList, Obj]:
        cached = self._usages.get(record.key)
        if cached is not None and cached[0] == record.mod_revision:
            return cached[1], cached[2]
        obj = record.object()
        amounts = usage(resource, obj, now)
        if not (obj.get("metadata") or {}).get("deletionTimestamp"):  # a deleted pod's usage changes with time
            if len(self._usages) >= self.CACHED_USAGES:
                self._usages.clear()
            self._usages[record.key] = (record.mod_revision, amounts, _scope_facts(obj))
        return amounts, obj

    @staticmethod
    def _forbidden(attrs: Attributes, reason: str) -> StatusError:
        resource = attrs.resource
        what = resource.group_resource
        head = f'{what} "{attrs.name}" is forbidden' if attrs.name else f"{what} is forbidden"
        return forbidden(f"{head}: {reason}", resource.plural, resource.group, attrs.name)


def _scope_facts(obj: Obj) -> Obj:
    """What scopes read of an object (kept with its cached usage instead of the whole object)."""
    spec = dict_at(obj, "spec")
    kept = {k: spec[k] for k in ("activeDeadlineSeconds", "priorityClassName", "affinity", "containers",
                                 "initContainers") if k in spec}
    return {"spec": kept}
