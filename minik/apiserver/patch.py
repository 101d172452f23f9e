"""Patches: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and Kubernetes' strategic merge patch."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from minik.api import patchmeta
from minik.api.errors import StatusError, bad_request


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: dict[str, Any], operations: Any) -> dict[str, Any]:
    """RFC 6902. A malformed patch is 400; an operation that cannot apply (a test that fails, a path that is
    not there) is 422, as Kubernetes answers."""
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    try:
        patch = jsonpatch.JsonPatch(operations)
        result = patch.apply(target)
    except jsonpatch.InvalidJsonPatch as exc:
        raise bad_request(f"invalid JSON patch: {exc}") from None
    except (jsonpatch.JsonPatchConflict, jsonpatch.JsonPatchTestFailed, jsonpatch.JsonPointerException) as exc:
        raise StatusError(422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
                          ) from None
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        raise bad_request(f"invalid JSON patch: {exc}") from None
    if not isinstance(result, dict):
        raise bad_request("json patch must leave an object")
    return result


# -- strategic merge patch ------------------------------------------------------------------------------------
_DIRECTIVES = ("$patch", "$retainKeys")


def strategic_merge_patch(original: dict[str, Any], patch: Any, kind: str) -> dict[str, Any]:
    """Kubernetes' strategic merge patch for a built-in ``kind``: maps merge, lists with a merge key merge item
    by item, primitive lists marked merge are unions, other lists are replaced; the directives ``$patch``
    (replace, delete, merge), ``$retainKeys``, ``$deleteFromPrimitiveList/F`` and ``$setElementOrder/F`` apply."""
    if not isinstance(patch, dict):
        raise bad_request("a strategic merge patch must be a JSON object")
    result = _merge_map(original, patch, patchmeta.kind_fields(kind))
    if result is None:
        raise bad_request("a strategic merge patch may not delete the whole object")
    return result


def _merge_map(original: Any, patch: dict[str, Any], fields: dict[str, patchmeta.Field]) -> dict[str, Any] | None:
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: _clean(v) for k, v in patch.items() if k not in _DIRECTIVES}
    if directive not in (None, "merge"):
        raise bad_request(f"unknown patch directive in map: {directive}")
    result = dict(original) if isinstance(original, dict) else {}
    deletions: list[tuple[str, Any]] = []
    orders: list[tuple[str, Any]] = []
    for key, value in patch.items():
        if key in _DIRECTIVES:
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            deletions.append((key.split("/", 1)[1], value))
            continue
        if key.startswith("$setElementOrder/"):
            orders.append((key.split("/", 1)[1], value))
            continue
        if value is None:
            result.pop(key, None)
            continue
        meta = fields.get(key)
        if isinstance(value, dict):
            merged = _merge_map(result.get(key), value, patchmeta.fields_of(meta.type if meta else None))
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and meta is not None and meta.merge_key:
            result[key] = _merge_list(result.get(key), value, meta)
        elif isinstance(value, list) and meta is not None and meta.primitive_merge:
            existing = result.get(key)
            current: list[Any] = existing if isinstance(existing, list) else []
            result[key] = [*current, *(v for v in value if v not in current)]
        else:
            result[key] = _clean(value)
    for key, values in deletions:
        if not isinstance(values, list):
            raise bad_request(f"$deleteFromPrimitiveList/{key} must be a list")
        if isinstance(result.get(key), list):
            result[key] = [v for v in result[key] if v not in values]
            if not result[key]:
                result.pop(key)
    for key, order in orders:
        if isinstance(result.get(key), list) and isinstance(order, list):
            result[key] = _reorder(result[key], order, fields.get(key))
    retain = patch.get("$retainKeys")
    if retain is not None:
        if not isinstance(retain, list):
            raise bad_request("$retainKeys must be a list")
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(original: Any, patch: list[Any], meta: patchmeta.Field) -> list[Any]:
    key = meta.merge_key
    assert key is not None
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [_clean(item) for item in patch if not (isinstance(item, dict) and item.get("$patch") == "replace")]
    result = [dict(item) if isinstance(item, dict) else item for item in original] if isinstance(original, list) \
        else []
    fields = patchmeta.fields_of(meta.type)
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"a list merged by {key!r} must hold objects")
        if key not in item:
            raise bad_request(f"map: {item} does not contain declared merge key: {key}")
        position = next((i for i, existing in enumerate(result)
                         if isinstance(existing, dict) and existing.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            result = [e for e in result if not (isinstance(e, dict) and e.get(key) == item[key])]
            continue
        merged = _merge_map(result[position] if position is not None else None, item, fields)
        if merged is None:
            continue
        if position is None:
            result.append(merged)
        else:
            result[position] = merged
    return result


def _reorder(items: list[Any], order: list[Any], meta: patchmeta.Field | None) -> list[Any]:
    key = meta.merge_key if meta is not None else None

    def identity(item: Any) -> Any:
        return item.get(key) if key and isinstance(item, dict) else item

    wanted = [identity(o) for o in order]
    rank = {value: i for i, value in enumerate(wanted) if isinstance(value, (str, int, float))}
    return sorted(items, key=lambda item: rank.get(identity(item), len(rank)))


def _clean(value: Any) -> Any:
    """A value inserted whole, without patch directives."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if not (k in _DIRECTIVES or k.startswith("$"))}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value
