"""The API server's own follower of CustomResourceDefinitions (kube-apiextensions' controllers, inside the server
as Kubernetes runs them): what every CRD declares is served, named and cleaned up.

- *serving*: the CRDs are followed in the store (a ``Follower``: a commit that changes a CRD changes the registry
  before its writer hears back), and each served version of a CRD whose names are accepted becomes a resource type
  of the registry (``Registry.replace``, keyed by the CRD's name), with the CRD's schema compiled once per change.
  Everything that reads the registry (routing, discovery, OpenAPI, RBAC, tables, the in-process clients) sees it.
- *naming and establishing*: a CRD whose names are not yet accepted gets ``status.acceptedNames`` and the
  conditions NamesAccepted and Established in one status write (there is only one API server, so the race Kubernetes
  avoids by establishing a moment later cannot happen); names another resource of the group holds are refused with
  Kubernetes' condition reasons and messages.
- *cleanup*: a deleted CRD (Terminating, held by the customresourcecleanup finalizer) has its custom resources
  deleted, is looked at again until none is left, and then loses the finalizer and goes; its resources stop being
  served when it is gone.

Status writes go through the CRD's own ResourceRest as ``system:apiserver``: validation and the store's
compare-and-swap apply, a conflict is retried from the newer object.
"""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING, Any

import orjson
import structlog

from minik.aio import start_task, stop_task
from minik.api.errors import StatusError
from minik.api.kinds import apiextensions as crds
from minik.api.kinds.crdnames import naming
from minik.api.kinds.customresources import resource_types
from minik.api.registry import ResourceType
from minik.apiserver.request import User
from minik.store import Event, EventType, Record
from minik.store.follower import Follower

if TYPE_CHECKING:
    from minik.apiserver.server import ApiServer

log = structlog.get_logger("minik.apiserver.crds")

Obj = dict[str, Any]

PREFIX = "/apiextensions.k8s.io/customresourcedefinitions/"
SYSTEM = User("system:apiserver", ("system:masters",))
#: how soon a CRD whose custom resources are still going (finalizers, graceful deletion) is looked at again
RECHECK_SECONDS = 0.5
#: the longest wait before a failed sync is retried
MAX_RETRY_SECONDS = 10.0


class CrdController:
    """Follows the CRDs of ``api``'s store: serves, names and cleans up what they declare."""

    def __init__(self, api: ApiServer) -> None:
        self.api = api
        self.registry = api.registry
        self.store = api.store
        self.crds: dict[str, Obj] = {}
        #: per CRD, what its served resource types were built from (rebuilt only when that changes)
        self._served: dict[str, bytes] = {}
        self._follower = Follower(api.store, PREFIX, self._load, self._apply)
        self._queue: dict[str, None] = {}
        self._wake = asyncio.Event()
        self._retries: dict[str, int] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._task: asyncio.Task[None] | None = None

    @property
    def crd_resource(self) -> ResourceType:
        found = self.registry.get(crds.GROUP, "v1", "customresourcedefinitions")
        assert found is not None
        return found

    # -- lifecycle ----------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Serve every stored CRD now (synchronously), then follow them and keep their status."""
        self._follower.start()
        self._task = start_task(self._work(), name="crd controller")

    async def stop(self) -> None:
        await self._follower.stop()
        await stop_task(self._task)
        self._task = None
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    # -- following the store -------------------------------------------------------------------------------------
    def _load(self, records: list[Record]) -> None:
        fresh = {str((obj := record.object())["metadata"]["name"]): obj for record in records}
        for name in set(self.crds) - set(fresh):
            self._forget(name)
        self.crds = fresh
        for name, crd in fresh.items():
            self._serve(name, crd)
            self._enqueue(name)

    def _apply(self, events: list[Event]) -> None:
        for event in events:
            name = event.key[len(PREFIX):]
            if event.type is EventType.DELETED:
                gone = self.crds.get(name)
                self._forget(name)
                if gone is not None:
                    self._enqueue_group(gone, name)
                continue
            crd = orjson.loads(event.raw)
            self.crds[name] = crd
            self._serve(name, crd)
            self._enqueue(name)

    def _forget(self, name: str) -> None:
        self.crds.pop(name, None)
        self._served.pop(name, None)
        self.registry.replace(name, [])

    def _serve(self, name: str, crd: Obj) -> None:
        """Put the CRD's served versions into the registry, when what they are built from changed."""
        meta = crd.get("metadata") or {}
        basis = orjson.dumps([meta.get("uid"), bool(meta.get("deletionTimestamp")), crd.get("spec"),
                              crds.accepted_names(crd), crds.condition_true(crd, crds.NAMES_ACCEPTED),
                              crds.condition_true(crd, crds.ESTABLISHED), crds.condition_true(crd, crds.TERMINATING),
                              (crd.get("status") or {}).get("storedVersions")], option=orjson.OPT_SORT_KEYS)
        if self._served.get(name) == basis:
            return
        try:
            types = resource_types(crd)
        except Exception:  # noqa: BLE001 - a CRD the schema engine cannot compile is not served, never fatal
            log.exception("cannot serve a custom resource definition", crd=name)
            types = []
        self._served[name] = basis
        self.registry.replace(name, types)

    # -- the work queue -----------------------------------------------------------------------------------------
    def _enqueue(self, name: str) -> None:
        self._queue[name] = None
        self._wake.set()

    def _enqueue_group(self, crd: Obj, except_name: str) -> None:
        group = (crd.get("spec") or {}).get("group")
        for name, other in self.crds.items():
            if name != except_name and (other.get("spec") or {}).get("group") == group:
                self._enqueue(name)

    def _enqueue_after(self, name: str, seconds: float) -> None:
        if name in self._timers:
            return

        def fire() -> None:
            self._timers.pop(name, None)
            self._enqueue(name)

        self._timers[name] = asyncio.get_running_loop().call_later(seconds, fire)

    async def _work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                name = next(iter(self._queue))
                del self._queue[name]
                try:
                    await self._sync(name)
                    self._retries.pop(name, None)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - retried with back-off, never fatal
                    tries = self._retries[name] = self._retries.get(name, 0) + 1
                    delay = min(MAX_RETRY_SECONDS, 0.05 * 2 ** tries)
                    message = exc.message if isinstance(exc, StatusError) else repr(exc)
                    log.warning("custom resource definition sync failed", crd=name, error=message, retry_in=delay)
                    self._enqueue_after(name, delay)

    async def _sync(self, name: str) -> None:
        crd = self.crds.get(name)
        if crd is None:
            return
        if (crd.get("metadata") or {}).get("deletionTimestamp"):
            await self._clean_up(name, crd)
            return
        await self._name(name, crd)

    # -- naming and establishing --------------------------------------------------------------------------------
    async def _name(self, name: str, crd: Obj) -> None:
        builtin = [t for t in self.registry.types if t.custom is None]
        result = naming(crd, self.crds.values(), builtin)
        wanted = copy.deepcopy(crd)
        status = wanted.setdefault("status", {})
        status["acceptedNames"] = result.accepted
        crds.set_condition(wanted, crds.NAMES_ACCEPTED, result.status, result.reason, result.message)
        if result.status == "True":
            crds.set_condition(wanted, crds.ESTABLISHED, "True", "InitialNamesAccepted",
                               "the initial names have been accepted")
        elif crds.find_condition(crd, crds.ESTABLISHED) is None:
            crds.set_condition(wanted, crds.ESTABLISHED, "False", "NotAccepted", "not all names are accepted")
        if wanted.get("status") == crd.get("status"):
            return
        if await self._write_status(name, wanted):
            self._enqueue_group(crd, name)  # names it held may be free now, or ones it took no longer are

    async def _write_status(self, name: str, wanted: Obj) -> bool:
        """Write ``wanted``'s status; False when the CRD changed or went meanwhile (it comes back through the
        follower then)."""
        try:
            await self.api.rest(self.crd_resource).update(wanted, None, name, SYSTEM, "status")
        except StatusError as exc:
            if exc.code in (404, 409):
                return False
            raise
        return True

    # -- deletion -----------------------------------------------------------------------------------------------
    async def _clean_up(self, name: str, crd: Obj) -> None:
        finalizers = (crd.get("metadata") or {}).get("finalizers") or []
        if crds.CLEANUP_FINALIZER not in finalizers:
            return
        if not crds.condition_true(crd, crds.ESTABLISHED):
            wanted = copy.deepcopy(crd)
            crds.set_condition(wanted, crds.TERMINATING, "False", "NeverEstablished", "resource was never established")
            if await self._write_status(name, wanted):
                await self._remove_finalizer(name)
            return
        if not crds.condition_true(crd, crds.TERMINATING) or \
                (crds.find_condition(crd, crds.TERMINATING) or {}).get("reason") != "InstanceDeletionInProgress":
            wanted = copy.deepcopy(crd)
            crds.set_condition(wanted, crds.TERMINATING, "True", "InstanceDeletionInProgress",
                               "CustomResource deletion is in progress")
            await self._write_status(name, wanted)
            return  # the write comes back through the follower, which queues this CRD again
        remaining = await self._delete_instances(crd)
        if remaining:
            self._enqueue_after(name, RECHECK_SECONDS)
            return
        wanted = copy.deepcopy(crd)
        crds.set_condition(wanted, crds.TERMINATING, "False", "InstanceDeletionCompleted", "removed all instances")
        if await self._write_status(name, wanted):
            await self._remove_finalizer(name)

    async def _delete_instances(self, crd: Obj) -> int:
        """Delete every custom resource of ``crd`` (those already being deleted are left to finish); how many
        are still stored."""
        resource = self._any_resource(crd)
        if resource is None:
            return 0
        rest = self.api.rest(resource)
        listed = await self.store.list(resource.prefix())
        for record in listed.items:
            obj = record.object()
            meta = obj.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                continue
            try:
                await rest.delete(meta.get("namespace"), str(meta.get("name") or ""), {}, SYSTEM)
            except StatusError as exc:
                if exc.code not in (404, 409):
                    raise
        return self.store.count(resource.prefix())

    def _any_resource(self, crd: Obj) -> ResourceType | None:
        """A served type of the CRD (any version: deletion does not convert), or one made for the cleanup when
        no version is served."""
        name = str((crd.get("metadata") or {}).get("name") or "")
        served = self.registry.owned(name)
        if served:
            return served[0]
        forced = copy.deepcopy(crd)
        for version in crds.versions(forced):
            version["served"] = True
        crds.set_condition(forced, crds.ESTABLISHED, "True", "", "")
        types = resource_types(forced)
        return types[0] if types else None

    async def _remove_finalizer(self, name: str) -> None:
        def without(current: Obj) -> Obj:
            meta = current.setdefault("metadata", {})
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != crds.CLEANUP_FINALIZER]
            if not meta["finalizers"]:
                del meta["finalizers"]
            return current

        try:
            await self.api.rest(self.crd_resource).patch(None, name, without, SYSTEM)
        except StatusError as exc:
            if exc.code != 404:
                raise
