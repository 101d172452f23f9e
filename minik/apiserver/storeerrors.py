"""Store errors as the Statuses Kubernetes answers for them (its storage.Interpret*Error and the etcd3 store's
errors): the object a write lost is NotFound, one a create found is AlreadyExists, a lost compare-and-swap is a
Conflict, a revision compacted away is 410 Expired, one not reached yet is 504 with the ResourceVersionTooLarge
cause that client-go's reflector looks for.

Handlers map the errors they expect where they know more (a retry, a generated name); the API server maps any
other that reaches it with the resource and name of the request, so a store error never becomes a 500.
"""

from __future__ import annotations

from minik.api.errors import StatusError, already_exists, conflict, expired, internal, not_found, qualified
from minik.api.registry import ResourceType
from minik.store import (
    Compacted,
    Conflict,
    FutureRevision,
    KeyExists,
    KeyNotFound,
    ObjectTooLarge,
    StoreClosed,
    StoreError,
)

#: how long client-go waits before it lists again after a 504 for a revision the store has not reached
TOO_LARGE_RETRY_SECONDS = 1


def too_old_resource_version(error: Compacted) -> StatusError:
    """410 Expired for a list or watch from a revision compaction has dropped."""
    return expired(f"too old resource version: {error.requested} ({error.compact_revision})")


def too_large_resource_version(error: FutureRevision) -> StatusError:
    """504 for a revision the store had not reached within the wait (Kubernetes' NewTooLargeResourceVersionError:
    a Timeout whose cause ResourceVersionTooLarge tells client-go to list again from the latest)."""
    return StatusError(504, "Timeout", f"Timeout: Too large resource version: {error.requested}, current: "
                       f"{error.current}",
                       {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                        "retryAfterSeconds": TOO_LARGE_RETRY_SECONDS})


def status_of(error: StoreError, resource: ResourceType | None, name: str) -> StatusError:
    """The Status for a store error met while serving ``name`` of ``resource`` (None: not a resource request)."""
    plural, group = (resource.plural, resource.group) if resource is not None else ("", "")
    if isinstance(error, KeyNotFound) and resource is not None:
        return not_found(plural, group, name)
    if isinstance(error, KeyExists) and resource is not None:
        return already_exists(plural, group, name)
    if isinstance(error, Conflict) and resource is not None:
        return conflict(plural, group, name)
    if isinstance(error, Compacted):
        return too_old_resource_version(error)
    if isinstance(error, FutureRevision):
        return too_large_resource_version(error)
    if isinstance(error, ObjectTooLarge):
        return StatusError(413, "RequestEntityTooLarge", f"Request entity too large: {error}")
    if isinstance(error, StoreClosed):
        return StatusError(503, "ServiceUnavailable", "the server is shutting down")
    what = qualified(plural, group) if resource is not None else "the store"
    return internal(f"{what}: {error}")
