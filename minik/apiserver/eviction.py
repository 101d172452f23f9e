"""pods/eviction: the API `kubectl drain` uses to take pods off a node, honouring PodDisruptionBudgets.

An Eviction (policy/v1) names the pod and may carry DeleteOptions; the pod is then deleted with them, gracefully
when it is bound to a node. As Kubernetes' eviction REST does it:
- a pod that is Pending, Succeeded or Failed, or already being deleted, is deleted without looking at budgets;
- otherwise the budgets of its namespace whose selector picks it are found (an empty selector picks nothing here).
  More than one is refused with a 500 Status. With one, a pod that is not Ready may go when the budget is healthy
  (currentHealthy >= desiredHealthy > 0) or its unhealthyPodEvictionPolicy is AlwaysAllow, without spending a
  disruption. Any other pod spends one: the budget's status gets disruptionsAllowed - 1 and the pod in
  disruptedPods, written with the budget's resourceVersion as precondition (a conflict re-reads it and tries
  again), before the pod is deleted. No disruption left, or a budget whose controller has not observed its latest
  generation, answers 429 TooManyRequests with a DisruptionBudget cause; `kubectl drain` waits and retries on it.
- a pod that may go without spending a disruption is deleted with its resourceVersion as precondition, so that it
  cannot have become Ready meanwhile; a conflict there answers 429 too.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from minik.api import disruption
from minik.api.errors import StatusError, bad_request, conflict, forbidden
from minik.api.kinds.policy import ALWAYS_ALLOW
from minik.api.timestamps import rfc3339
from minik.apiserver.auth.credentials import APISERVER
from minik.apiserver.decoding import decode_error
from minik.apiserver.fieldvalidation import DELETE_OPTIONS, check_decodable
from minik.apiserver.request import User, created_status
from minik.apiserver.rest import ResourceRest
from minik.store.records import Record

Obj = dict[str, Any]

EVICTION_KINDS = ("policy/v1", "policy/v1beta1")

#: how many times a write that lost a race (the pod's deletion, the budget's status) is tried again
RETRIES = 20

DISRUPTION_TARGET = "DisruptionTarget"
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_BUDGETS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."


def _too_many_requests(cause: str, retry_after: int) -> StatusError:
    details: Obj = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    headers: dict[str, str] = {}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
        headers["Retry-After"] = str(retry_after)
    return StatusError(429, "TooManyRequests", VIOLATION, details, headers)


def _still_processing(pdb_name: str) -> StatusError:
    return _too_many_requests(f"The disruption budget {pdb_name} is still being processed by the server.", 10)


def _is_ready(pod: Obj) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def _set_disruption_target(pod: Obj, now: float) -> None:
    """The condition saying why the pod goes (podutil.UpdatePodCondition: the transition time moves only when the
    status changes)."""
    status = pod.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    current = next((c for c in conditions if c.get("type") == DISRUPTION_TARGET), None)
    condition = {"type": DISRUPTION_TARGET, "status": "True", "lastTransitionTime": rfc3339(now),
                 "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}
    if current is not None and current.get("status") == "True" and current.get("lastTransitionTime"):
        condition["lastTransitionTime"] = current["lastTransitionTime"]
    status["conditions"] = [condition if c is current else c for c in conditions] if current is not None \
        else [*conditions, condition]


def _phase(pod: Obj) -> Any:
    return (pod.get("status") or {}).get("phase")


def budgets_ignored(pod: Obj) -> bool:
    """Whether the pod goes without a look at budgets: it is not running, or already on its way (canIgnorePDB)."""
    return _phase(pod) in ("Succeeded", "Failed", "Pending") or bool(pod["metadata"].get("deletionTimestamp"))


def _enforces_resource_version(pod: Obj) -> bool:
    return _phase(pod) not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def _has_resource_version(options: Obj) -> bool:
    preconditions = options.get("preconditions")
    return isinstance(preconditions, dict) and bool(preconditions.get("resourceVersion"))


def _with_resource_version(options: Obj, resource_version: str) -> Obj:
    return {**options, "preconditions": {**(options.get("preconditions") or {}), "resourceVersion": resource_version}}


def _decode_options(eviction: Obj, name: str, dry_run: bool) -> Obj:
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
    return options


class Evictions:
    """The eviction subresource of pods, spending the disruptions of ``budgets`` (the PodDisruptionBudgets)."""

    def __init__(self, pods: ResourceRest, budgets: ResourceRest) -> None:
        self.pods = pods
        self.budgets = budgets

    async def evict(self, namespace: str, name: str, eviction: Obj, user: User, dry_run: bool) -> tuple[Obj, int]:
        """Evict as the Eviction asks; the Status to answer with and its code (201, as a create; 500 for a pod
        with more than one budget)."""
        options = _decode_options(eviction, name, dry_run)
        pod = await self._pod(namespace, name)
        for _attempt in range(RETRIES):
            if not budgets_ignored(pod):
                break
            delete_options = options
            if _enforces_resource_version(pod) and not _has_resource_version(options):
                delete_options = _with_resource_version(options, pod["metadata"]["resourceVersion"])
            try:
                await self._delete(namespace, name, delete_options, user)
            except StatusError as exc:
                if exc.code != 409 or _has_resource_version(options):
                    raise
                pod = await self._pod(namespace, name)
                continue
            return created_status(), 201
        else:
            raise conflict("pods", "", name)

        budgets = await self.budgets_of(pod)
        if len(budgets) > 1:
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": MULTIPLE_BUDGETS, "code": 500}, 500
        unhealthy_may_go = False
        if budgets:
            pdb = budgets[0]
            if not _is_ready(pod):
                status = disruption.status_of(pdb)
                healthy, desired = disruption.count(status, "currentHealthy"), disruption.count(status, "desiredHealthy")
                unhealthy_may_go = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == ALWAYS_ALLOW or \
                    (healthy >= desired and desired > 0)
            if not unhealthy_may_go:
                await self._spend_disruption(pdb, name, bool(options.get("dryRun")))
        delete_options = options
        if unhealthy_may_go:
            delete_options = _with_resource_version(options, pod["metadata"]["resourceVersion"])
        try:
            await self._delete(namespace, name, delete_options, user)
        except StatusError as exc:
            if exc.code == 409 and unhealthy_may_go and not _has_resource_version(options):
                raise _still_processing(budgets[0]["metadata"]["name"]) from None
            raise
        return created_status(), 201

    async def _delete(self, namespace: str, name: str, options: Obj, user: User) -> None:
        """Mark the pod with the DisruptionTarget condition (unless dry-run), then delete it with ``options``
        (addConditionAndDeletePod). The preconditions are checked against the pod the condition is written to;
        a resourceVersion precondition then names the version that write made."""
        if not options.get("dryRun"):
            preconditions = options.get("preconditions")

            def mark(pod: Obj) -> Obj:
                if isinstance(preconditions, dict):
                    self.pods.check_preconditions(name, preconditions, pod["metadata"])
                _set_disruption_target(pod, time.time())
                return pod

            written = await self.pods.patch(namespace, name, mark, APISERVER, subresource="status")
            if _has_resource_version(options):
                version = (written.object() if isinstance(written, Record) else written)["metadata"]["resourceVersion"]
                options = _with_resource_version(options, version)
        await self.pods.delete(namespace, name, options, user)

    async def _pod(self, namespace: str, name: str) -> Obj:
        return await self.pods.current(self.pods.record(namespace, name))

    async def budgets_of(self, pod: Obj) -> list[Obj]:
        """The budgets of the pod's namespace whose selector picks it; a budget whose selector is empty or cannot
        be read picks nothing here."""
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        found = []
        listed = await self.budgets.store.list(self.budgets.resource.prefix(meta.get("namespace")))
        for record in listed.items:
            pdb = await self.budgets.current(record)
            try:
                selector = disruption.pod_selector(pdb)
            except ValueError:
                continue
            if not selector.empty and selector.matches(labels):
                found.append(pdb)
        return found

    async def _spend_disruption(self, pdb: Obj, pod_name: str, dry_run: bool) -> None:
        """Take one disruption from the budget's status, and record the pod as disrupted (checkAndDecrement), with
        the budget's resourceVersion as precondition; a conflict re-reads the budget and tries again."""
        meta = pdb["metadata"]
        namespace, name = meta.get("namespace"), meta["name"]
        for _attempt in range(RETRIES):
            status = copy.deepcopy(disruption.status_of(pdb))
            if disruption.count(status, "observedGeneration") < int(meta.get("generation") or 0):
                raise _still_processing(name)
            allowed = status.get("disruptionsAllowed")
            if isinstance(allowed, int) and allowed < 0:
                raise forbidden(f'poddisruptionbudget.policy "{name}" is forbidden: pdb disruptions allowed is '
                                "negative", "poddisruptionbudget", "policy", name)
            disrupted = status.get("disruptedPods")
            if isinstance(disrupted, dict) and len(disrupted) > disruption.MAX_DISRUPTED_PODS:
                raise forbidden(f'poddisruptionbudget.policy "{name}" is forbidden: DisruptedPods map too big - too '
                                "many evictions not confirmed by PDB controller", "poddisruptionbudget", "policy",
                                name)
            if not allowed:
                raise _too_many_requests(
                    f"The disruption budget {name} needs {disruption.count(status, 'desiredHealthy')} healthy pods "
                    f"and has {disruption.count(status, 'currentHealthy')} currently", 0)
            now = time.time()
            status["disruptionsAllowed"] = allowed - 1
            if allowed - 1 == 0:
                disruption.update_disruption_allowed(status, now)
            if dry_run:
                return
            status["disruptedPods"] = {**(disrupted if isinstance(disrupted, dict) else {}), pod_name: rfc3339(now)}
            try:
                await self.budgets.update({**pdb, "status": status}, namespace, name, APISERVER, subresource="status")
                return
            except StatusError as exc:
                if exc.code != 409:
                    raise
            pdb = await self.budgets.current(self.budgets.record(namespace, name))
            meta = pdb["metadata"]
        raise StatusError(504, "Timeout", f'Timeout: couldn\'t update PodDisruptionBudget "{name}" due to conflicts',
                          {"retryAfterSeconds": 10}, {"Retry-After": "10"})
