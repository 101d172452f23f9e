"""Bringing the bootstrap policy into the store at every start, as kube-apiserver's rbac/bootstrap-roles hook does.

An object that is missing is created. One that exists is only ever added to, never narrowed: missing labels,
annotations, rules (what the stored rules do not already cover), aggregation selectors and binding subjects are
added, and everything an admin added stays. A binding whose roleRef differs is replaced (a roleRef cannot
change). An object annotated ``rbac.authorization.kubernetes.io/autoupdate: "false"`` is left as it is. The
rules of an aggregated ClusterRole (admin, edit, view) are the aggregation controller's, not this module's.

Every aggregated ClusterRole also gets the rules it gathers, as the aggregation controller would give them, so
that the user-facing roles work from the first request whether the controllers run or not. The writes are made
together (one commit of the store's writer); a restart with nothing to change writes nothing.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from minik.api.errors import StatusError
from minik.api.kinds.common import dict_at, list_at
from minik.api.kinds.rbac import aggregated_rules, aggregation_selectors
from minik.api.registry import Registry
from minik.apiserver.auth.rbac import policy
from minik.apiserver.auth.rbac.rules import compile_rules, uncovered
from minik.apiserver.request import User
from minik.apiserver.rest import ResourceRest

log = structlog.get_logger("minik.apiserver.auth.rbac")

Obj = dict[str, Any]


def _merged_map(existing: Any, wanted: dict[str, str]) -> dict[str, str]:
    current = dict(existing) if isinstance(existing, dict) else {}
    for key, value in wanted.items():
        current.setdefault(key, value)
    return current


def autoupdated(existing: Obj) -> bool:
    """Whether reconciliation may add to ``existing`` (unless an admin annotated it autoupdate "false")."""
    return ((existing.get("metadata") or {}).get("annotations") or {}).get(policy.AUTOUPDATE) != "false"


def _completed_metadata(existing: Obj, wanted: Obj) -> Obj:
    """A copy of ``existing`` with the labels and annotations of ``wanted`` it lacks."""
    meta = existing.get("metadata") or {}
    result = copy.deepcopy(existing)
    out_meta = result.setdefault("metadata", {})
    out_meta["labels"] = _merged_map(meta.get("labels"), wanted["metadata"]["labels"])
    out_meta["annotations"] = _merged_map(meta.get("annotations"), wanted["metadata"]["annotations"])
    return result


def reconciled_role(existing: Obj, wanted: Obj) -> Obj | None:
    """``existing`` with what ``wanted`` has and it lacks, or None when nothing is missing (or autoupdate is
    off)."""
    if not autoupdated(existing):
        return None
    result = _completed_metadata(existing, wanted)
    aggregation = wanted.get("aggregationRule")
    if aggregation is not None:
        current = dict_at(result, "aggregationRule")
        selectors = list(current.get("clusterRoleSelectors") or [])
        selectors += [s for s in aggregation["clusterRoleSelectors"] if s not in selectors]
        result["aggregationRule"] = {**current, "clusterRoleSelectors": selectors}
    else:
        rules = list_at(result, "rules")
        have = compile_rules(rules)
        missing = [r for r in wanted["rules"] if uncovered(have, compile_rules([r]))]
        result["rules"] = rules + missing
    return None if result == existing else result


def reconciled_binding(existing: Obj, wanted: Obj) -> Obj | None:
    """``existing`` with the subjects, labels and annotations of ``wanted`` it lacks, or None."""
    if not autoupdated(existing):
        return None
    result = _completed_metadata(existing, wanted)
    subjects = list(result.get("subjects") or [])
    subjects += [s for s in wanted["subjects"] if s not in subjects]
    if subjects:
        result["subjects"] = subjects
    return None if result == existing else result


async def reconcile(registry: Registry, rest_for: Callable[[Any], ResourceRest], user: User) -> int:
    """Create or complete every object of the bootstrap policy as ``user`` (an admin), and the controllers'
    service accounts where missing, in one commit; the number written."""
    rbac = policy.RBAC_GROUP
    plans: list[tuple[str, Obj, Callable[[Obj, Obj], Obj | None]]] = [
        *(("clusterroles", o, reconciled_role) for o in policy.cluster_roles()),
        *(("roles", o, reconciled_role) for o in policy.roles()),
        *(("clusterrolebindings", o, reconciled_binding) for o in policy.cluster_role_bindings()),
        *(("rolebindings", o, reconciled_binding) for o in policy.role_bindings()),
    ]
    writes: list[Awaitable[Any]] = []
    accounts = registry.get("", "v1", "serviceaccounts")
    assert accounts is not None
    for account in policy.service_accounts():
        meta = account["metadata"]
        if rest_for(accounts).store.get(accounts.key(meta["namespace"], meta["name"])) is None:
            writes.append(rest_for(accounts).create(account, meta["namespace"], user))
    cluster_roles = registry.get(rbac, "v1", "clusterroles")
    assert cluster_roles is not None
    #: every ClusterRole as it will be once the writes are made, and the writes planned for them: (create?, object)
    roles = {r.key: r.object() for r in (await rest_for(cluster_roles).store.list(cluster_roles.prefix())).items}
    planned: dict[str, tuple[bool, Obj]] = {}
    for plural, wanted, reconciled in plans:
        resource = registry.get(rbac, "v1", plural)
        assert resource is not None
        rest = rest_for(resource)
        meta = wanted["metadata"]
        namespace, name = meta.get("namespace"), meta["name"]
        key = resource.key(namespace, name)
        record = rest.store.get(key)
        existing = record.object() if record is not None else None
        if existing is not None and "roleRef" in wanted and existing.get("roleRef") != wanted["roleRef"]:
            if autoupdated(existing):
                writes.append(_replace(rest, wanted, namespace, name, user))
            continue
        target = wanted if existing is None else reconciled(existing, wanted)
        if target is None:
            continue
        if resource is cluster_roles:
            roles[key] = target
            planned[key] = (existing is None, target)
        elif existing is None:
            writes.append(rest.create(target, namespace, user))
        else:
            writes.append(rest.update(target, namespace, name, user))
    for key in aggregate(roles):
        planned[key] = (planned[key][0] if key in planned else False, roles[key])
    rest = rest_for(cluster_roles)
    for create, role in planned.values():
        name = role["metadata"]["name"]
        writes.append(rest.create(role, None, user) if create else rest.update(role, None, name, user))
    await _all(writes)
    if writes:
        log.info("bootstrap policy reconciled", written=len(writes))
    return len(writes)


def aggregate(roles: dict[str, Obj]) -> set[str]:
    """Give every aggregated ClusterRole of ``roles`` (key -> object, changed in place) the rules it gathers, as
    the aggregation controller would, so that ``view``, ``edit`` and ``admin`` grant what they should from the
    first request, controllers running or not; the keys of the roles changed."""
    changed: set[str] = set()
    for _ in range(len(roles)):  # aggregated roles may gather aggregated roles (admin gathers edit gathers view)
        moved = False
        for key, role in roles.items():
            if not aggregation_selectors(role):
                continue
            rules = aggregated_rules(role, list(roles.values()))
            if rules != (role.get("rules") or []):
                roles[key] = {**role, "rules": rules}
                changed.add(key)
                moved = True
        if not moved:
            break
    return changed


async def _all(writes: list[Awaitable[Any]]) -> None:
    """Make the writes together (one commit), tolerating another server of the same store having made them."""
    for result in await asyncio.gather(*writes, return_exceptions=True):
        if isinstance(result, StatusError) and result.reason in ("AlreadyExists", "Conflict"):
            continue
        if isinstance(result, BaseException):
            raise result


async def _replace(rest: ResourceRest, wanted: Obj, namespace: str | None, name: str, user: User) -> None:
    await rest.delete(namespace, name, {}, user)
    await rest.create(wanted, namespace, user)
