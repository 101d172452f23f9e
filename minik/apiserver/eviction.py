"""pods/eviction: the API `kubectl drain` uses to take pods off a node.

An Eviction (policy/v1) names the pod and may carry DeleteOptions; the pod is then deleted with them, gracefully
when it is bound to a node. Kubernetes first checks the PodDisruptionBudgets covering the pod and answers 429
TooManyRequests when one would be violated; minik serves no PodDisruptionBudgets, so no eviction is refused for
that reason.
"""

from __future__ import annotations

from typing import Any

from minik.api.errors import bad_request
from minik.apiserver.decoding import decode_error
from minik.apiserver.fieldvalidation import DELETE_OPTIONS, check_decodable
from minik.apiserver.request import User, created_status
from minik.apiserver.rest import ResourceRest

Obj = dict[str, Any]

EVICTION_KINDS = ("policy/v1", "policy/v1beta1")


async def evict(rest: ResourceRest, namespace: str, name: str, eviction: Obj, user: User, dry_run: bool) -> Obj:
    """Delete the pod as the Eviction asks; the Status to answer with (201, as a create)."""
    api_version = eviction.get("apiVersion")
    if api_version is not None and api_version not in EVICTION_KINDS:
        raise bad_request(f"unsupported eviction apiVersion {api_version!r}: use policy/v1")
    named = (eviction.get("metadata") or {}).get("name")
    if named is not None and named != name:
        raise bad_request("name in URL does not match name in Eviction object")
    options = eviction.get("deleteOptions")
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise bad_request("deleteOptions must be an object")
    overflow = check_decodable(options, DELETE_OPTIONS)
    if overflow is not None:
        overflow.within("deleteOptions", "Eviction")
        version = str(api_version or EVICTION_KINDS[0]).rsplit("/", 1)[-1]
        raise decode_error("Eviction", version, overflow.message)
    grace = options.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
        raise bad_request("deleteOptions.gracePeriodSeconds must be an integer")
    if dry_run:
        options = {**options, "dryRun": ["All"]}
    await rest.delete(namespace, name, options, user)
    return created_status()
