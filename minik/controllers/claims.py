"""Ownership (Kubernetes' ControllerRefManager): an owner adopts the orphans its selector matches and releases
the dependents it owns that stop matching; a dependent another controller owns is left alone.

Adoption and release are JSON patches guarded by ``test`` operations on the dependent's uid and
resourceVersion, so a write based on a stale cache fails instead of clobbering someone else's ownerReferences.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from minik.api.errors import StatusError
from minik.api.selectors import LabelSelector
from minik.client import JSON_PATCH, Client
from minik.controllers.base import Obj, controller_ref, is_being_deleted, owner_reference


async def adopt(client: Client, resource: str, owner: Obj, dependent: Obj) -> Obj:
    meta = dependent["metadata"]
    ops: list[Obj] = [{"op": "test", "path": "/metadata/uid", "value": meta["uid"]},
                      {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]}]
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != owner["metadata"]["uid"]]
    ops.append({"op": "add", "path": "/metadata/ownerReferences", "value": [*refs, owner_reference(owner)]})
    return await client.patch(resource, meta["name"], ops, meta.get("namespace"), content_type=JSON_PATCH)


async def release(client: Client, resource: str, owner: Obj, dependent: Obj) -> None:
    meta = dependent["metadata"]
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != owner["metadata"]["uid"]]
    ops: list[Obj] = [{"op": "test", "path": "/metadata/uid", "value": meta["uid"]},
                      {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]}]
    ops.append({"op": "replace", "path": "/metadata/ownerReferences", "value": refs} if refs
               else {"op": "remove", "path": "/metadata/ownerReferences"})
    try:
        await client.patch(resource, meta["name"], ops, meta.get("namespace"), content_type=JSON_PATCH)
    except StatusError as exc:
        if exc.code != 404:  # gone already: nothing to release
            raise


async def claim(client: Client, resource: str, owner: Obj, selector: LabelSelector, candidates: list[Obj],
                can_adopt: Callable[[], Awaitable[bool]],
                matches: Callable[[Obj], bool] | None = None) -> list[Obj]:
    """The candidates ``owner`` owns after adopting matching orphans and releasing owned non-matching ones.
    ``can_adopt`` is asked (once) before the first adoption: it re-reads the owner from the API, so an owner that
    was deleted and re-created under the same name does not adopt on the strength of a stale cache."""
    uid = owner["metadata"]["uid"]
    match = matches or (lambda obj: selector.matches((obj.get("metadata") or {}).get("labels")))
    claimed: list[Obj] = []
    adoption_checked: bool | None = None
    for obj in candidates:
        ref = controller_ref(obj)
        if ref is not None:
            if ref.get("uid") != uid:
                continue  # another controller's
            if match(obj):
                claimed.append(obj)
            elif not is_being_deleted(owner):
                await release(client, resource, owner, obj)
            continue
        if is_being_deleted(owner) or is_being_deleted(obj) or not match(obj):
            continue
        if adoption_checked is None:
            adoption_checked = await can_adopt()
        if not adoption_checked:
            continue
        try:
            claimed.append(await adopt(client, resource, owner, obj))
        except StatusError as exc:
            if exc.code not in (404, 409, 422):  # gone, or changed since the cache saw it: next sync decides
                raise
    return claimed


def fresh_owner_check(client: Client, resource: str, owner: Obj) -> Callable[[], Awaitable[bool]]:
    """``can_adopt`` for ``claim``: the owner, read again from the API, is the same one and not being deleted."""
    async def check() -> bool:
        meta = owner["metadata"]
        try:
            fresh = await client.get(resource, meta["name"], meta.get("namespace"))
        except StatusError as exc:
            if exc.code == 404:
                return False
            raise
        return fresh["metadata"].get("uid") == meta["uid"] and not is_being_deleted(fresh)
    return check
