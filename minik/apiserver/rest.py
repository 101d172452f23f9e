"""Writes as Kubernetes' generic registry store does them: server-owned metadata, strategies, admission,
compare-and-swap with retries, finalizers and graceful deletion.

Nothing here knows HTTP: handlers pass decoded bodies in and get objects (or StatusErrors) back.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from minik.api.errors import Cause, StatusError, already_exists, bad_request, conflict, invalid, not_found
from minik.api.kinds.pods import assign_pod
from minik.api.names import generate_name
from minik.api.registry import ResourceType
from minik.api.timestamps import now_rfc3339
from minik.apiserver.admission import Admission, Attributes
from minik.apiserver.request import User
from minik.store import Conflict, KeyExists, KeyNotFound, Record, Store

if TYPE_CHECKING:
    from minik.apiserver.apply import FieldManager

Obj = dict[str, Any]

#: how often a patch or an unconditional update is retried when another writer got in between
UPDATE_RETRIES = 16

_REVISION = re.compile(r"[0-9]+")
_SERVER_OWNED = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")


def new_uid() -> str:
    """A random version-4 UUID as a string (uuid.uuid4() spends most of its time validating its own input)."""
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def parse_resource_version(value: Any, field: str = "metadata.resourceVersion") -> int | None:
    """None for an empty resourceVersion, the revision otherwise; 400 when it is not a revision."""
    if value in (None, ""):
        return None
    text = str(value)
    # ASCII digits and nothing else, as Go's ParseUint reads them (int() would take " 5", "5\n" and "1_0"), and
    # at most 64 bits' worth (int() of thousands of digits raises)
    revision = int(text) if len(text) <= 20 and _REVISION.fullmatch(text) else -1
    if revision < 0:
        raise bad_request(f'{field}: Invalid value: "{value}": must be a resourceVersion returned by the server')
    return revision


def _gc_finalizers(finalizers: list[str], options: Obj, orphan_by_default: bool) -> list[str]:
    """The garbage collector's finalizers after a delete, as Kubernetes' registry decides them: orphanDependents
    (the old option) wins and never asks for Foreground; then propagationPolicy; then the finalizer the object
    already has; then the kind's default (Orphan for core/v1 ReplicationControllers and batch/v1 Jobs, for
    compatibility; Background for the rest)."""
    policy = options.get("propagationPolicy")
    orphan_dependents = options.get("orphanDependents")
    if policy is not None and policy not in ("Foreground", "Background", "Orphan"):
        raise bad_request(f'propagationPolicy: Unsupported value: "{policy}": supported values: "Foreground", '
                          f'"Background", "Orphan"')
    if policy is not None and orphan_dependents is not None:
        raise invalid("DeleteOptions", "meta.k8s.io", "", [Cause(
            "propagationPolicy", "FieldValueInvalid",
            f'Invalid value: "{policy}": orphanDependents and deletionPropagation cannot be both set')])
    if orphan_dependents is not None:
        orphan, foreground = bool(orphan_dependents), False
    elif policy is not None:
        orphan, foreground = policy == "Orphan", policy == "Foreground"
    elif "orphan" in finalizers:
        orphan, foreground = True, False
    elif "foregroundDeletion" in finalizers:
        orphan, foreground = False, True
    else:
        orphan, foreground = orphan_by_default, False
    kept = [f for f in finalizers if f not in ("orphan", "foregroundDeletion")]
    if orphan:
        kept.append("orphan")
    if foreground:
        kept.append("foregroundDeletion")
    return kept


def _copier(obj: Obj) -> Callable[[], Obj]:
    """A function returning a fresh deep copy of ``obj`` each call: a JSON round trip (several times quicker than
    copy.deepcopy), or copy.deepcopy for a value JSON cannot hold (the store refuses those later anyway)."""
    try:
        raw = orjson.dumps(obj)
    except TypeError:
        return lambda: copy.deepcopy(obj)
    return lambda: orjson.loads(raw)


def _options(fields: FieldManager | None) -> Obj | None:
    """The options admission sees of a create or update (its field manager)."""
    return {"fieldManager": fields.manager} if fields is not None else None


#: called once a write is decided: True when it was stored, False when it was not (conflict, dry run, error)
Finish = Callable[[bool], Awaitable[None]]


class WriteHooks(Protocol):
    """What a kind may do around its writes beyond the strategy, with I/O (Kubernetes' BeginCreate, BeginUpdate
    and AfterDelete): services allocate cluster IPs and node ports here. Called after validation."""

    async def begin_create(self, obj: Obj, dry_run: bool) -> Finish: ...

    async def begin_update(self, obj: Obj, old: Obj, dry_run: bool) -> Finish: ...

    async def after_delete(self, obj: Obj) -> None: ...


class ObjectCodec(Protocol):
    """How a resource whose stored objects are not in the version of the request reads and writes them (custom
    resources: another version, defaults applied on read). Built-in kinds have none."""

    async def decode(self, record: Record) -> Obj:
        """The stored object as the request's version sees it (a new object)."""
        ...

    async def encode(self, obj: Obj) -> Obj:
        """The object as it is stored (a new object; ``obj`` is not changed)."""
        ...

    async def present(self, raws: list[bytes], written: bool = False) -> list[bytes]:
        """Stored objects (JSON) as the request's version answers them (``written``: just stored by this
        request, so defaulted already)."""
        ...


class ResourceRest:
    """Create, update, patch and delete for one resource type."""

    #: set for resources whose stored objects need converting (see ObjectCodec)
    codec: ObjectCodec | None = None

    def __init__(self, resource: ResourceType, store: Store, admission: Admission,
                 hooks: WriteHooks | None = None) -> None:
        self.resource = resource
        self.strategy = resource.strategy
        self.store = store
        self.admission = admission
        self.hooks = hooks

    async def current(self, record: Record) -> Obj:
        """A stored object as this resource's version sees it (decoded anew)."""
        return record.object() if self.codec is None else await self.codec.decode(record)

    async def present(self, result: Record | Obj, written: bool = False) -> bytes:
        """The JSON of a read object or (``written``) of a write's result, in this resource's version."""
        if isinstance(result, Record):
            return result.raw if self.codec is None else (await self.codec.present([result.raw], written))[0]
        return orjson.dumps(result)

    async def present_all(self, raws: list[bytes]) -> list[bytes]:
        """Stored objects' JSON in this resource's version."""
        return raws if self.codec is None else await self.codec.present(raws)

    # -- helpers -------------------------------------------------------------------------------------------
    def _not_found(self, name: str) -> StatusError:
        return not_found(self.resource.plural, self.resource.group, name)

    def _conflict(self, name: str) -> StatusError:
        return conflict(self.resource.plural, self.resource.group, name)

    def _invalid(self, name: str, causes: list[Cause]) -> StatusError:
        return invalid(self.resource.kind, self.resource.group, name, causes)

    def _check_type(self, obj: Obj) -> None:
        """apiVersion and kind may be omitted but must not name another type."""
        api_version = obj.setdefault("apiVersion", self.resource.api_version)
        kind = obj.setdefault("kind", self.resource.kind)
        if api_version != self.resource.api_version or kind != self.resource.kind:
            raise bad_request(f"the API version in the data ({api_version}) and kind ({kind}) do not match the "
                              f"expected {self.resource.api_version} {self.resource.kind}")
        if not isinstance(obj.get("metadata", {}), dict):
            raise bad_request("metadata must be an object")
        obj.setdefault("metadata", {})

    def _check_namespace(self, obj: Obj, namespace: str | None) -> None:
        meta = obj["metadata"]
        if self.resource.namespaced:
            given = meta.get("namespace")
            if given not in (None, "", namespace):
                raise bad_request("the namespace of the provided object does not match the namespace sent on the "
                                  "request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)

    def _after_mutation(self, obj: Obj, namespace: str | None, name: str | None) -> Obj:
        """The object's metadata after the mutating admission plugins (a webhook's patch replaces the object's
        content): still of this type, namespace and (for an update) name."""
        self._check_type(obj)
        self._check_namespace(obj, namespace)
        if name is not None and obj["metadata"].get("name") != name:
            raise bad_request(f"the name of the object ({obj['metadata'].get('name')}) does not match the name on "
                              f"the URL ({name})")
        meta: Obj = obj["metadata"]
        return meta

    def record(self, namespace: str | None, name: str) -> Record:
        record = self.store.get(self.resource.key(namespace, name))
        if record is None:
            raise self._not_found(name)
        return record

    # -- create --------------------------------------------------------------------------------------------
    async def create(self, obj: Obj, namespace: str | None, user: User, dry_run: bool = False,
                     fields: FieldManager | None = None) -> Record | Obj:
        """Returns the stored record, or (dry run) the object as it would have been stored. ``fields`` records
        the write in metadata.managedFields."""
        self._check_type(obj)
        self._check_namespace(obj, namespace)
        meta = obj["metadata"]
        for owned in _SERVER_OWNED + ("resourceVersion", "generation", "managedFields"):
            meta.pop(owned, None)
        generate = meta.get("generateName")
        explicit = bool(meta.get("name"))
        if not explicit and isinstance(generate, str) and generate:
            meta["name"] = generate_name(generate)
        self.strategy.prepare_for_create(obj)
        self.strategy.default(obj)
        if fields is not None:  # before admission, as Kubernetes: what admission adds is nobody's
            fields.created(obj)
        attrs = Attributes("CREATE", self.resource, None, namespace, str(meta.get("name") or ""), obj, None, user,
                           dry_run, _options(fields))
        await self.admission.admit(attrs)
        meta = self._after_mutation(obj, namespace, None)
        for owned in _SERVER_OWNED + ("resourceVersion", "generation"):  # a webhook's patch may not set them
            meta.pop(owned, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = now_rfc3339()
        if self.strategy.tracks_generation:
            meta["generation"] = 1
        causes = self.strategy.validate(obj)
        if causes:
            raise self._invalid(str(meta.get("name") or ""), causes)
        stored = False
        finish = None
        try:
            await self.admission.validate(attrs)
            finish = await self.hooks.begin_create(obj, dry_run) if self.hooks is not None else None
            if dry_run:
                meta["resourceVersion"] = ""
                return obj
            stored_obj = obj if self.codec is None else await self.codec.encode(obj)
            for _attempt in range(8):
                try:
                    record = await self.store.create(self.resource.key(namespace, meta["name"]), stored_obj)
                    stored = True
                    return record
                except KeyExists:
                    if explicit or not generate:
                        raise already_exists(self.resource.plural, self.resource.group, meta["name"]) from None
                    meta["name"] = generate_name(generate)
                    if stored_obj is not obj:
                        stored_obj["metadata"]["name"] = meta["name"]
            raise StatusError(500, "ServerTimeout", f"could not generate a unique name from {generate!r}")
        finally:
            if finish is not None:
                await finish(stored)
            await attrs.finish(stored)

    # -- update and patch ----------------------------------------------------------------------------------
    async def update(self, obj: Obj, namespace: str | None, name: str, user: User, subresource: str | None = None,
                     dry_run: bool = False, fields: FieldManager | None = None) -> Record | Obj:
        """PUT: the body replaces the object (or, for the status subresource, its status)."""
        self._check_type(obj)
        self._check_namespace(obj, namespace)
        body_name = obj["metadata"].get("name")
        if body_name not in (None, "", name):
            raise bad_request(f"the name of the object ({body_name}) does not match the name on the URL ({name})")
        obj["metadata"]["name"] = name
        precondition = parse_resource_version(obj["metadata"].get("resourceVersion"))
        copy_of = _copier(obj)

        def mutate(_current: Obj) -> Obj:
            return copy_of()

        return await self._guaranteed_update(namespace, name, mutate, user, subresource, precondition, dry_run,
                                             fields=fields)

    async def patch(self, namespace: str | None, name: str, apply: Callable[[Obj], Obj], user: User,
                    subresource: str | None = None, dry_run: bool = False,
                    fields: FieldManager | None = None, *, pure: bool = False) -> Record | Obj:
        """PATCH: ``apply`` turns the current object into the new one; re-run on the latest when another writer
        got in between. A resourceVersion in the patched result is a precondition. ``pure``: ``apply`` builds a
        new object and never changes the one it is given (merge patches); a status write then decodes the stored
        object once rather than twice."""

        def mutate(current: Obj) -> Obj:
            result = apply(current)
            if not isinstance(result, dict):
                raise bad_request("the patch must leave an object")
            return result

        return await self._guaranteed_update(namespace, name, mutate, user, subresource, None, dry_run,
                                             patched=True, fields=fields,
                                             shares=pure and subresource == "status")

    async def _guaranteed_update(self, namespace: str | None, name: str, mutate: Callable[[Obj], Obj], user: User,
                                 subresource: str | None, precondition: int | None, dry_run: bool,
                                 patched: bool = False, fields: FieldManager | None = None,
                                 shares: bool = False) -> Record | Obj:
        """``shares``: ``mutate`` may be given the current object itself, for a write that, like a status write,
        changes nothing of it in place but its metadata (which is then copied here)."""
        key = self.resource.key(namespace, name)
        for _attempt in range(UPDATE_RETRIES):
            record = self.record(namespace, name)
            codec = self.codec
            current = record.object() if codec is None else await codec.decode(record)
            if shares:
                new = mutate(current)
                if new is current:
                    new = mutate(record.object() if codec is None else await codec.decode(record))
                elif new.get("metadata") is current.get("metadata") and isinstance(shared := new.get("metadata"), dict):
                    new["metadata"] = dict(shared)
            else:
                new = mutate(record.object() if codec is None else await codec.decode(record))
            if patched:
                self._check_type(new)
                self._check_namespace(new, namespace)
                if new["metadata"].get("name") != name:
                    raise bad_request(f"the name of the object ({new['metadata'].get('name')}) does not match the "
                                      f"name on the URL ({name})")
                precondition = parse_resource_version(new["metadata"].get("resourceVersion"))
                if precondition == record.mod_revision:
                    precondition = None  # a patch carrying the current version is no precondition
            if precondition is not None and precondition != record.mod_revision:
                raise self._conflict(name)
            attrs = await self._prepare_update(new, current, namespace, name, user, subresource, dry_run, fields)
            done = False
            finish = None
            try:
                finish = await self.hooks.begin_update(new, current, dry_run) \
                    if self.hooks is not None and subresource is None else None
                if dry_run:
                    return new
                try:
                    if new == current:  # a no-op keeps the resourceVersion and tells no watcher
                        stored = record
                    else:  # the store need not compare again: it checks the object is still at this revision
                        stored = await self.store.update(key, new if codec is None else await codec.encode(new),
                                                         expected_revision=record.mod_revision, changed=True)
                    done = True
                except Conflict:
                    if precondition is not None:
                        raise self._conflict(name) from None
                    continue
                except KeyNotFound:
                    raise self._not_found(name) from None
            finally:
                if finish is not None:
                    await finish(done)
                await attrs.finish(done)
            if self._should_delete_after_update(new) and not self.strategy.holds_deletion(new):
                gone = await self._delete_now(namespace, name, stored.mod_revision)
                if gone is not None:
                    return gone
            return stored
        raise self._conflict(name)

    async def _prepare_update(self, new: Obj, current: Obj, namespace: str | None, name: str, user: User,
                              subresource: str | None, dry_run: bool, fields: FieldManager | None = None
                              ) -> Attributes:
        """Make ``new`` (in place) the object to store, through the strategy and admission; returns what admission
        saw, whose ``finish`` the caller calls once the write is decided."""
        meta = new["metadata"]
        old_meta = current["metadata"]
        for owned in _SERVER_OWNED + ("generation",):
            if owned in old_meta:
                meta[owned] = old_meta[owned]
            else:
                meta.pop(owned, None)
        meta["resourceVersion"] = old_meta.get("resourceVersion", "")
        if old_meta.get("deletionTimestamp") and \
                any(f not in old_meta.get("finalizers", []) for f in meta.get("finalizers", [])):
            raise self._invalid(name, [Cause("metadata.finalizers", "FieldValueForbidden",
                                             "no new finalizers can be added if the object is being deleted")])
        if subresource == "status":
            self.strategy.prepare_for_status_update(new, current)
        elif subresource == "finalize":
            self.strategy.prepare_for_finalize(new, current)
        elif subresource is not None:
            self.strategy.prepare_for_subresource_update(subresource, new, current)
        else:
            self.strategy.prepare_for_update(new, current)
            self.strategy.default(new)
        if fields is not None:  # before admission, as Kubernetes: what admission changes is nobody's
            fields.updated(new, current)
        attrs = Attributes("UPDATE", self.resource, subresource, namespace, name, new, current, user, dry_run,
                           _options(fields))
        await self.admission.admit(attrs)
        meta = self._after_mutation(new, namespace, name)
        if self.strategy.tracks_generation and subresource is None and \
                self.strategy.spec_of(new) != self.strategy.spec_of(current):
            meta["generation"] = int(old_meta.get("generation") or 0) + 1
        if subresource in ("status", "approval"):
            causes = self.strategy.validate_status_update(new, current)
        elif subresource is not None:
            causes = self.strategy.validate_subresource_update(subresource, new, current)
        else:
            causes = self.strategy.validate_update(new, current)
        if causes:
            raise self._invalid(name, causes)
        try:
            await self.admission.validate(attrs)
        except BaseException:
            await attrs.finish(False)
            raise
        return attrs

    @staticmethod
    def _should_delete_after_update(obj: Obj) -> bool:
        """An object being deleted goes once its last finalizer is removed and no grace period is running."""
        meta = obj.get("metadata", {})
        return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") and \
            not meta.get("deletionGracePeriodSeconds")

    # -- delete --------------------------------------------------------------------------------------------
    async def delete(self, namespace: str | None, name: str, options: Obj, user: User) -> tuple[Obj, bool]:
        """Delete as Kubernetes does. Returns the object and whether it is gone (False: marked for deletion, kept
        until its grace period ends or its finalizers are removed)."""
        dry_run = bool(options.get("dryRun"))
        for _attempt in range(UPDATE_RETRIES):
            record = self.record(namespace, name)
            current = record.object()
            meta = current["metadata"]
            self.check_preconditions(name, options.get("preconditions") or {}, meta)
            attrs = Attributes("DELETE", self.resource, None, namespace, name, None, current, user, dry_run, options)
            await self.admission.validate(attrs)
            updated = copy.deepcopy(current)
            umeta = updated["metadata"]
            grace = self.strategy.deletion_grace_period(updated, options.get("gracePeriodSeconds"))
            held = self.strategy.prepare_for_delete(updated)  # which may add a finalizer of the kind's own
            finalizers = list(umeta.get("finalizers") or [])
            finalizers = _gc_finalizers(finalizers, options, self.strategy.orphans_dependents_by_default)
            if not grace and not finalizers and not held:
                if dry_run:
                    return current, True
                gone = await self._delete_now(namespace, name, record.mod_revision)
                if gone is None:
                    continue
                return gone, True
            # mark for deletion: set the timestamp once, only ever shorten a running grace period
            running = umeta.get("deletionGracePeriodSeconds")
            if not umeta.get("deletionTimestamp") or (grace is not None and running is not None and grace < running):
                umeta["deletionTimestamp"] = now_rfc3339(grace or 0)
                umeta["deletionGracePeriodSeconds"] = grace or 0
                if umeta.get("generation"):
                    umeta["generation"] = int(umeta["generation"]) + 1
            if finalizers:
                umeta["finalizers"] = finalizers
            else:
                umeta.pop("finalizers", None)
            if dry_run:
                return updated, False
            if updated == current:
                return current, False
            try:
                stored = await self.store.update(self.resource.key(namespace, name), updated,
                                                 expected_revision=record.mod_revision, changed=True)
            except Conflict:
                continue
            except KeyNotFound:
                raise self._not_found(name) from None
            return stored.object(), False
        raise self._conflict(name)

    def check_preconditions(self, name: str, preconditions: Obj, meta: Obj) -> None:
        """A DeleteOptions' preconditions (uid, resourceVersion) against the object's metadata: Conflict when
        one does not hold."""
        uid = preconditions.get("uid")
        if uid and uid != meta.get("uid"):
            raise conflict(self.resource.plural, self.resource.group, name,
                           f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}")
        rv = preconditions.get("resourceVersion")
        if rv and rv != meta.get("resourceVersion"):
            raise conflict(self.resource.plural, self.resource.group, name,
                           f"Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in "
                           f"object meta: {meta.get('resourceVersion')}")

    async def _delete_now(self, namespace: str | None, name: str, revision: int) -> Obj | None:
        """Remove the object if it is still at ``revision``; None when it changed meanwhile."""
        try:
            gone = await self.store.delete(self.resource.key(namespace, name), expected_revision=revision)
        except Conflict:
            return None
        except KeyNotFound:
            raise self._not_found(name) from None
        obj = gone.object()
        if self.hooks is not None:
            await self.hooks.after_delete(obj)
        return obj

    # -- binding -------------------------------------------------------------------------------------------
    async def bind(self, namespace: str, name: str, binding: Obj, user: User) -> None:
        """pods/binding: set spec.nodeName once (Conflict if the pod is bound already). The Binding's
        metadata.uid and resourceVersion, when set, are preconditions on the pod (Conflict when it is another)."""
        target = binding.get("target") or {}
        node = target.get("name") if isinstance(target, dict) else None
        if not node or not isinstance(node, str):
            raise invalid("Binding", "", name, [Cause("target.name", "FieldValueRequired", "Required value")])

        bmeta = binding.get("metadata") or {}
        annotations = bmeta.get("annotations") or {}
        preconditions = {k: bmeta[k] for k in ("uid", "resourceVersion") if bmeta.get(k)}

        def assign(pod: Obj) -> Obj:
            if preconditions:
                self.check_preconditions(name, preconditions, pod.get("metadata") or {})
            try:
                assign_pod(pod, node, now_rfc3339())
            except ValueError as exc:
                raise conflict("pods", "", name, str(exc)) from None
            if annotations:
                pod["metadata"].setdefault("annotations", {}).update(annotations)
            return pod

        key = self.resource.key(namespace, name)
        for _attempt in range(UPDATE_RETRIES):
            record = self.record(namespace, name)
            pod = assign(record.object())
            try:
                # a binding always sets spec.nodeName, which was empty: the store need not look for a no-op
                await self.store.update(key, pod, expected_revision=record.mod_revision, changed=True)
                return
            except Conflict:
                continue
            except KeyNotFound:  # deleted since it was read
                raise self._not_found(name) from None
        raise self._conflict(name)
