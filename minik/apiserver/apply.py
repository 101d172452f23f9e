"""Managed fields and server-side apply, as Kubernetes' field manager does them.

Every write names a field manager (``?fieldManager=``, or the User-Agent up to its first ``/``), and the object's
``metadata.managedFields`` records, per manager and operation, the fields it owns:

- a create, update or non-apply patch (``FieldManager``) is an ``Update``: the manager takes the fields it
  changed from whoever owned them (appliers too: their next apply of another value conflicts with it), and removed
  fields leave every owner. A write that sends no managedFields keeps the object's (clients that do not know
  them, such as informers' caches, cannot wipe them); ``[]`` or ``[{}]`` resets them. An object that has none is
  not tracked by updates (only a create or an apply starts tracking), as in Kubernetes;
- writes to the ``status`` and ``scale`` subresources are Updates recorded with their subresource, owning what
  the subresource can change (status; spec.replicas), and never set managedFields from their body;
- an apply (``Applier``, ``application/apply-patch+yaml``) is an ``Apply``: the configuration is merged into the
  object (keyed lists item by item), the applier owns exactly the fields of its configuration, fields it applied
  before and no longer applies are removed unless someone else owns them, and changing a field another manager
  owns is a 409 conflict unless ``force=true`` (which takes the field over). Apply creates a missing object.

``kubectl apply --server-side`` (manager ``kubectl``) may take over fields that ``kubectl apply`` (client-side)
recorded in the last-applied-configuration annotation, and keeps that annotation up to date, as Kubernetes does
so that client-side apply can be upgraded to server-side apply without conflicts.
"""

from __future__ import annotations

import copy
import functools
import unicodedata
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from minik.api import fielderrors, patchmeta
from minik.api.errors import Cause, StatusError, bad_request, invalid
from minik.api.registry import ResourceType
from minik.api.timestamps import now_rfc3339
from minik.apiserver import fieldpath
from minik.apiserver.fieldpath import FieldSet, Path
from minik.apiserver.request import ApiRequest, User

if TYPE_CHECKING:
    from minik.apiserver.rest import ResourceRest
    from minik.store import Record

Obj = dict[str, Any]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
#: the manager whose applies may take over what client-side apply recorded in the last-applied annotation
KUBECTL_APPLY = "kubectl"
BEFORE_FIRST_APPLY = "before-first-apply"
ANCIENT_CHANGES = "ancient-changes"
#: the manager of a write whose request names none (no fieldManager, no User-Agent)
UNKNOWN_MANAGER = "unknown"
MAX_UPDATE_MANAGERS = 10
MAX_MANAGER_LENGTH = 128

#: what ``force=`` accepts (Go's strconv.ParseBool)
_BOOLS = {"true": True, "True": True, "TRUE": True, "t": True, "T": True, "1": True,
          "false": False, "False": False, "FALSE": False, "f": False, "F": False, "0": False}

#: fields nobody owns: identity and what the server sets
_META_STRIPPED = frozenset({"name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation",
                            "managedFields", "resourceVersion"})
_STRIPPED: FieldSet = {("f:apiVersion",), ("f:kind",), ("f:metadata",)} | {
    ("f:metadata", "f:" + name) for name in _META_STRIPPED}


# -- the manager of a request -------------------------------------------------------------------------------
def manager_name(request: ApiRequest) -> str:
    """``?fieldManager=``, else the User-Agent's product (``kubectl/v1.32.4 (linux/amd64)`` -> ``kubectl``)."""
    given = request.query.get("fieldManager")
    if given:
        return given
    agent = next((v for k, v in request.headers.items() if k.lower() == "user-agent"), "")
    product = "".join(c for c in agent.split("/", 1)[0] if c.isprintable())
    return product.encode()[:MAX_MANAGER_LENGTH].decode(errors="ignore")


def _check_options(request: ApiRequest, options_kind: str, apply: bool) -> None:
    """Kubernetes' Create/Update/PatchOptions validation of fieldManager and force (422 Invalid)."""
    causes: list[Cause] = []
    manager = request.query.get("fieldManager", "")
    if len(manager.encode()) > MAX_MANAGER_LENGTH:
        causes.append(Cause("fieldManager", "FieldValueTooLong",
                            f"Too long: may not be more than {MAX_MANAGER_LENGTH} bytes"))
    for position, char in enumerate(manager):
        if not char.isprintable():
            causes.append(fielderrors.invalid("fieldManager", manager, f"invalid character U+{ord(char):04X} "
                                              f"{unicodedata.name(char, '')!r} (at position {position})"))
    if options_kind == "PatchOptions":
        if apply and not manager:
            causes.append(fielderrors.required("fieldManager", "is required for apply patch"))
        if not apply and "force" in request.query:
            causes.append(fielderrors.forbidden("force", "may not be specified for non-apply patch"))
    if causes:
        raise invalid(options_kind, "meta.k8s.io", "", causes)


# -- managedFields ------------------------------------------------------------------------------------------
class ManagerKey(NamedTuple):
    """One entry of managedFields is one (manager, operation, apiVersion, subresource). A tuple: it is made for
    every write, and hashed and compared as a dict key."""

    manager: str
    operation: str
    api_version: str
    subresource: str = ""

    def describe(self) -> str:
        """How conflicts name the manager: ``"kubectl-client-side-apply" using apps/v1``."""
        text = orjson.dumps(self.manager).decode()
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text


class Entry:
    """One manager's fields and the time of its last write. An entry read from stored managedFields keeps its
    fieldsV1 tree, decodes it only when its fields are read, and writes the same tree back while they are
    unchanged: a status update changes its own manager's entry, and every other manager's costs nothing."""

    __slots__ = ("_fields", "_tree", "time")

    def __init__(self, fields: FieldSet | None, time: str | None, tree: Obj | None = None) -> None:
        self._fields = fields
        self._tree = tree
        self.time = time

    @property
    def fields(self) -> FieldSet:
        if self._fields is None:
            try:
                self._fields = fieldpath.decode(self._tree or {})
            except ValueError:  # stored trees were checked when written; an unreadable one owns nothing
                self._fields = set()
        return self._fields

    @fields.setter
    def fields(self, value: FieldSet) -> None:  # ``entry.fields -= paths`` comes here too
        self._fields = value
        self._tree = None

    def tree(self) -> Obj:
        """The fieldsV1 tree of the fields."""
        if self._tree is None:
            self._tree = fieldpath.encode(self.fields)
        return self._tree

    def holds_any(self, paths: FieldSet) -> bool:
        if self._fields is not None:
            return not self._fields.isdisjoint(paths)
        return fieldpath.tree_holds_any(self._tree or {}, paths)


class Managed:
    """The managedFields of an object, decoded."""

    def __init__(self, entries: dict[ManagerKey, Entry] | None = None) -> None:
        self.entries = entries or {}

    @classmethod
    def of(cls, obj: Obj, *, stored: bool = False) -> Managed | None:
        """The object's managedFields; None when there are none or they cannot be read. ``stored``: they were
        written by this server (checked then), so each entry's tree is decoded only if its fields are read."""
        raw = obj.get("metadata", {}).get("managedFields")
        if not raw or not isinstance(raw, list):
            return None
        entries: dict[ManagerKey, Entry] = {}
        try:
            for item in raw:
                key = ManagerKey(item["manager"], item["operation"], item.get("apiVersion", ""),
                                 item.get("subresource", ""))
                if key.operation not in ("Apply", "Update") or item.get("fieldsType", "FieldsV1") != "FieldsV1":
                    return None
                tree = item.get("fieldsV1") or {}
                if stored and isinstance(tree, dict):
                    entries[key] = Entry(None, item.get("time"), tree)
                else:
                    entries[key] = Entry(fieldpath.decode(tree), item.get("time"))
        except (KeyError, TypeError, ValueError):
            return None
        return cls(entries)

    def lose(self, paths: FieldSet, keep: ManagerKey | None = None) -> None:
        """Every manager but ``keep`` gives up ``paths``; managers left with nothing are dropped."""
        if not paths:
            return
        for key in list(self.entries):
            if key != keep and self.entries[key].holds_any(paths):
                self.entries[key].fields -= paths
                if not self.entries[key].fields:
                    del self.entries[key]

    def cap_updates(self) -> None:
        """At most MAX_UPDATE_MANAGERS Update entries: the oldest merge into one "ancient-changes" entry."""
        updates = sorted((e.time or "", k) for k, e in self.entries.items() if k.operation == "Update")
        if len(updates) <= MAX_UPDATE_MANAGERS:
            return
        oldest = [k for _, k in updates[:len(updates) - MAX_UPDATE_MANAGERS + 1]]
        bucket = ManagerKey(ANCIENT_CHANGES, "Update", oldest[-1].api_version)
        merged = Entry(set(), self.entries[oldest[-1]].time)
        for key in oldest:
            merged.fields |= self.entries.pop(key).fields
        if bucket in self.entries:
            merged.fields |= self.entries[bucket].fields
        self.entries[bucket] = merged

    def write(self, obj: Obj) -> None:
        """Store the entries in ``obj``'s metadata, ordered as Kubernetes orders them."""
        meta = obj.setdefault("metadata", {})
        order = sorted(self.entries.items(), key=lambda kv: (kv[0].operation, kv[1].time or "", kv[0].manager,
                                                              kv[0].api_version, kv[0].subresource))
        out = [_entry_record(key, entry.time, entry.tree()) for key, entry in order]
        if out:
            meta["managedFields"] = out
        else:
            meta.pop("managedFields", None)


def _entry_record(key: ManagerKey, time: str | None, fields_v1: Obj) -> Obj:
    record: Obj = {"manager": key.manager, "operation": key.operation, "apiVersion": key.api_version}
    if time:
        record["time"] = time
    record["fieldsType"] = "FieldsV1"
    record["fieldsV1"] = fields_v1
    if key.subresource:
        record["subresource"] = key.subresource
    return record


def _status_only(obj: Obj) -> Obj:
    return {"status": obj["status"]} if "status" in obj else {}


def _replicas_only(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return {"spec": {"replicas": spec["replicas"]}} if isinstance(spec, dict) and "replicas" in spec else {}


#: what a write to a subresource can change, the only part of the objects its manager compares
_SUBRESOURCE_VIEWS = {"status": _status_only, "scale": _replicas_only}
_REPLICAS: Path = ("f:spec", "f:replicas")


def _is_reset(managed_fields: Any) -> bool:
    """Kubernetes' reset of managedFields: an empty list, or a list of one empty entry."""
    return isinstance(managed_fields, list) and (managed_fields == [] or managed_fields == [{}])


def _without_managed_fields(obj: Obj) -> Obj:
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.pop("managedFields", None)
    out["metadata"] = meta
    return out


def zero_object(resource: ResourceType) -> Obj:
    """The object as Kubernetes' Go types write an empty one: the structs that are never omitted are there, so
    creating an object does not count them as added."""
    obj: Obj = {"metadata": {}}
    fields = patchmeta.KINDS.get(resource.kind, {}) if resource.custom is None else {}
    if "spec" in fields:
        obj["spec"] = _zero_struct(fields["spec"].type)
        obj["spec"].update(copy.deepcopy(_ZERO_SPEC_EXTRA.get(resource.kind, {})))
    if "status" in fields:
        obj["status"] = {}
    return obj


@functools.cache
def _zero(resource: ResourceType) -> Obj:
    """zero_object, shared: never change it."""
    return zero_object(resource)


_ZERO_SPEC_EXTRA: dict[str, Obj] = {"Deployment": {"strategy": {}}, "DaemonSet": {"updateStrategy": {}},
                                    "StatefulSet": {"updateStrategy": {}}, "ReplicationController": {}}


def _zero_struct(type_name: str | None) -> Obj:
    if type_name == "PodSpec":
        return {"containers": None}
    if type_name == "PodTemplateSpec":
        return {"metadata": {}, "spec": _zero_struct("PodSpec")}
    if type_name in ("WorkloadSpec", "JobSpec"):
        return {"template": _zero_struct("PodTemplateSpec")}
    if type_name == "CronJobSpec":
        return {"jobTemplate": {"metadata": {}, "spec": _zero_struct("JobSpec")}}
    return {}


#: the fieldsV1 of recent creates, by kind and the JSON of what the creator set: the pods of one ReplicaSet (one
#: Job, one DaemonSet...) differ only in what the record leaves out (name, uid), so most creates find theirs here
_CREATION_TREES: dict[tuple[str, str, bytes], bytes] = {}
_CREATION_TREES_KEPT = 256


def _creation_tree(resource: ResourceType, owned: Obj, shape: fieldpath.Shape) -> Obj:
    """``fieldpath.creation_tree`` of ``owned``, remembered for the next create of the same content. Each caller
    gets a tree of its own (decoded from the remembered JSON)."""
    try:
        content = orjson.dumps(owned)
    except TypeError:  # not JSON (the store refuses it later): nothing to remember it by
        return fieldpath.creation_tree(owned, _zero(resource), shape)
    key = (resource.group, resource.kind, content)
    known = _CREATION_TREES.get(key)
    if known is not None:
        tree: Obj = orjson.loads(known)
        return tree
    tree = fieldpath.creation_tree(owned, _zero(resource), shape)
    if len(_CREATION_TREES) >= _CREATION_TREES_KEPT:
        del _CREATION_TREES[next(iter(_CREATION_TREES))]  # the oldest
    _CREATION_TREES[key] = orjson.dumps(tree)
    return tree


# -- Update -------------------------------------------------------------------------------------------------
class FieldManager:
    """Records a create, update or patch as an ``Update`` by one manager. ResourceRest calls ``created`` and
    ``updated`` with the object about to be stored (defaults filled in). It holds nothing of one request, so
    ``for_request`` hands the same one to every write of a manager to a resource."""

    operation = "Update"

    def __init__(self, resource: ResourceType, manager: str, subresource: str | None = None) -> None:
        self.resource = resource
        self.manager = manager
        self.subresource = subresource or ""
        # a custom resource's lists are keyed as its CRD's schema says (never as a built-in kind of its name's)
        self.shape = fieldpath.kind_shape(resource.kind) if resource.custom is None else \
            fieldpath.custom_shape(resource.custom.schema)
        self.key = ManagerKey(manager, self.operation, resource.api_version, self.subresource)
        #: the top-level fields a create (of the main resource) does not own: identity, metadata (taken apart),
        #: and status where the status subresource owns it
        self._not_created = frozenset({"apiVersion", "kind", "metadata"} | (
            {"status"} if not self.relevant(("f:status",)) else set()))

    @classmethod
    def for_request(cls, resource: ResourceType, request: ApiRequest, verb: str,
                    subresource: str | None) -> FieldManager:
        """The manager of a create, update or non-apply patch: ``unknown`` when the request names none, as
        Kubernetes names it."""
        _check_options(request, {"create": "CreateOptions", "update": "UpdateOptions"}.get(verb, "PatchOptions"),
                       apply=False)
        name = manager_name(request) or UNKNOWN_MANAGER
        key = (resource.group, resource.version, resource.plural, name, subresource or "")
        known = _FIELD_MANAGERS.get(key)
        if known is None or known.resource is not resource or type(known) is not cls:
            if len(_FIELD_MANAGERS) >= _FIELD_MANAGERS_KEPT:
                _FIELD_MANAGERS.clear()
            known = _FIELD_MANAGERS[key] = cls(resource, name, subresource)
        return known

    def relevant(self, path: Path) -> bool:
        """Whether this write can own ``path``: the status subresource owns status only, the scale subresource
        spec.replicas only, and for kinds with a status subresource the main resource owns everything but
        status."""
        if self.subresource == "status":
            return path[0] == "f:status"
        if self.subresource == "scale":
            return path == _REPLICAS
        return not (path[0] == "f:status" and self.resource.strategy.has_status)

    def _changes(self, old: Obj, new: Obj) -> tuple[FieldSet, FieldSet]:
        """(changed, removed) from ``old`` to ``new``, among the fields this write can own."""
        view = _SUBRESOURCE_VIEWS.get(self.subresource)
        if view is not None:  # it owns what its subresource changes: the rest of the objects need no comparing
            diff = fieldpath.compare(view(old), view(new), self.shape)
        else:
            diff = fieldpath.compare(_without_managed_fields(old), _without_managed_fields(new), self.shape)
        changed = {p for p in diff.changed if self.relevant(p)} - _STRIPPED
        removed = {p for p in diff.removed if self.relevant(p)}
        return changed, removed

    def created(self, obj: Obj) -> None:
        """The creator owns everything it set (defaults included). The same as ``take`` from the empty object,
        computed in one pass."""
        skipped = self._not_created
        owned = {name: value for name, value in obj.items() if name not in skipped}
        owned["metadata"] = {name: value for name, value in obj.get("metadata", {}).items()
                             if name not in _META_STRIPPED}
        tree = _creation_tree(self.resource, owned, self.shape)
        if tree:
            obj["metadata"]["managedFields"] = [_entry_record(self.key, now_rfc3339(), tree)]

    def updated(self, new: Obj, current: Obj) -> None:
        """Record the write of ``new`` over ``current``. Which managedFields it starts from is Kubernetes'
        choice: a subresource write, or a write that sends none (or unreadable ones), keeps the object's; managed
        fields a client sends to the main resource replace them (that is how they are migrated), and ``[]`` or
        ``[{}]`` resets them. An object that then has none stays untracked."""
        meta = new["metadata"]
        managed_fields = current["metadata"].get("managedFields")
        given = meta.get("managedFields")
        if not self.subresource and given is not None and given != managed_fields:
            if _is_reset(given):
                managed_fields = None
            elif given and Managed.of(new) is not None:
                managed_fields = given
        if not managed_fields:
            meta.pop("managedFields", None)
            return
        changed, removed = self._changes(current, new)
        if changed or removed:
            # the stored entries, or the client's, which Managed.of(new) has just checked
            managed = Managed.of({"metadata": {"managedFields": managed_fields}}, stored=True) or Managed()
            self._record(managed, current, new, (changed, removed))
        else:
            meta["managedFields"] = managed_fields

    def _record(self, managed: Managed, old: Obj, new: Obj,
                changes: tuple[FieldSet, FieldSet] | None = None) -> None:
        self.take(managed, old, new, changes)
        managed.cap_updates()
        managed.write(new)

    def take(self, managed: Managed, old: Obj, new: Obj, changes: tuple[FieldSet, FieldSet] | None = None) -> None:
        """The change from ``old`` to ``new`` as this manager's Update: it takes the fields it changed."""
        changed, removed = changes or self._changes(old, new)
        managed.lose(changed | removed)
        if changed:
            entry = managed.entries.setdefault(self.key, Entry(set(), None))
            entry.fields |= changed
            entry.time = now_rfc3339()


#: the FieldManager of each (resource, manager, subresource) seen lately
_FIELD_MANAGERS: dict[tuple[str, str, str, str, str], FieldManager] = {}
_FIELD_MANAGERS_KEPT = 1024


# -- Apply --------------------------------------------------------------------------------------------------
class Applier(FieldManager):
    """One apply request: call it with the current object to get the applied one (the patch function of
    ResourceRest.patch), or ``run`` it to also create the object when it is missing."""

    operation = "Apply"

    def __init__(self, resource: ResourceType, manager: str, config: Obj, force: bool,
                 subresource: str | None = None) -> None:
        super().__init__(resource, manager, subresource)
        self.config = config
        self.force = force
        self._created: Obj | None = None

    @classmethod
    def for_apply(cls, resource: ResourceType, request: ApiRequest, subresource: str | None,
                  config: Any) -> Applier:
        _check_options(request, "PatchOptions", apply=True)
        force = request.query.get("force", "false")
        if force not in _BOOLS:
            raise bad_request(f'force: invalid value "{force}": must be true or false')
        if not isinstance(config, dict):
            raise bad_request("the applied configuration must be an object")
        api_version, kind = config.get("apiVersion"), config.get("kind")
        if api_version != resource.api_version or kind != resource.kind:
            raise bad_request(f"the API version in the data ({api_version or ''}) and kind ({kind or ''}) do not "
                              f"match the expected {resource.api_version} {resource.kind}")
        meta = config.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if (meta or {}).get("managedFields") is not None:
            raise bad_request("metadata.managedFields must be nil")
        return cls(resource, request.query["fieldManager"], config, _BOOLS[force], subresource)

    async def run(self, rest: ResourceRest, namespace: str | None, name: str, user: User, dry_run: bool
                  ) -> tuple[Record | Obj, int]:
        """Apply to the object, or create it from the configuration when there is none: (result, HTTP status)."""
        for _attempt in range(3):
            try:
                return await rest.patch(namespace, name, self, user, self.subresource or None, dry_run,
                                        fields=self), 200
            except StatusError as exc:
                if exc.code != 404 or self.subresource or rest.store.get(rest.resource.key(namespace, name)):
                    raise
            new = self(self._empty(namespace, name))
            try:
                return await rest.create(new, namespace, user, dry_run, fields=self), 201
            except StatusError as exc:
                if exc.reason != "AlreadyExists":
                    raise
        raise StatusError(409, "Conflict", f'{rest.resource.group_resource} "{name}" was created and deleted '
                          "while it was applied; try again")

    def _empty(self, namespace: str | None, name: str) -> Obj:
        """What apply starts from when the object does not exist."""
        obj = zero_object(self.resource)
        obj.update({"apiVersion": self.resource.api_version, "kind": self.resource.kind})
        obj["metadata"] = {"name": name, **({"namespace": namespace} if self.resource.namespaced else {})}
        return obj

    def created(self, obj: Obj) -> None:
        """A create through apply keeps what the apply recorded."""
        if self._created is None:  # a configuration that sets no field leaves nothing to record
            obj["metadata"].pop("managedFields", None)
            return
        obj["metadata"]["managedFields"] = copy.deepcopy(self._created)

    def updated(self, new: Obj, current: Obj) -> None:
        """The apply has recorded its fields already."""

    def __call__(self, current: Obj) -> Obj:
        live = _without_managed_fields(current)
        managed = Managed.of(current, stored=True) or Managed()
        if not managed.entries and live["metadata"].get("uid"):
            # an object nobody has tracked yet: what is there belongs to a manager of its own
            FieldManager(self.resource, BEFORE_FIRST_APPLY, self.subresource).take(
                managed, zero_object(self.resource), live)
        applied = {p for p in fieldpath.field_set(self.config, self.shape) if self.relevant(p)}
        previous = managed.entries.get(self.key)
        managed.entries[self.key] = Entry(applied, previous.time if previous else None)
        merged = fieldpath.merge(live, self.config, self.shape)
        if previous is not None:
            merged = self._prune(merged, managed, previous.fields)
        changed, removed = self._changes(live, merged)
        self._check_conflicts(managed, changed, live)
        managed.lose(changed | removed, keep=self.key)
        entry = managed.entries[self.key]
        entry.fields = applied - _STRIPPED
        if not entry.fields:
            del managed.entries[self.key]
        elif merged != live or previous is None:
            entry.time = now_rfc3339()
        self._update_last_applied(merged)
        managed.write(merged)
        self._created = merged["metadata"].get("managedFields")
        return merged

    def _prune(self, merged: Obj, managed: Managed, previous: FieldSet) -> Obj:
        """Remove what this manager applied before and applies no more, unless another manager owns it."""
        shape, named = self.shape, fieldpath.with_named_parents
        last = named(previous)
        owned = named(set().union(*(e.fields for e in managed.entries.values())))
        everything = named(fieldpath.field_set(merged, shape))
        pruned = fieldpath.remove(merged, last, shape)
        kept = fieldpath.remove(merged, everything - (named(fieldpath.field_set(pruned, shape)) | owned), shape)
        return fieldpath.remove(merged, (everything - named(fieldpath.field_set(kept, shape))) & last, shape)

    def _check_conflicts(self, managed: Managed, changed: FieldSet, live: Obj) -> None:
        conflicts = sorted((key, path) for key, entry in managed.entries.items() if key != self.key
                           for path in entry.fields & changed)
        if not conflicts or self.force:
            return
        if self.manager == KUBECTL_APPLY and not self.subresource:
            # upgrading from client-side apply: what the last-applied annotation holds may be taken over
            allowed = self._last_applied_fields(live)
            if all(path in allowed for _, path in conflicts):
                return
        raise conflict_error(conflicts)

    def _last_applied_fields(self, live: Obj) -> FieldSet:
        text = (live.get("metadata", {}).get("annotations") or {}).get(LAST_APPLIED)
        try:
            last_applied = orjson.loads(text) if text else None
        except orjson.JSONDecodeError:
            return set()
        return fieldpath.field_set(last_applied, self.shape) if isinstance(last_applied, dict) else set()

    def _update_last_applied(self, merged: Obj) -> None:
        """Server-side apply by kubectl keeps an existing last-applied annotation equal to what it applied."""
        if self.manager != KUBECTL_APPLY or self.subresource:
            return
        if not (merged["metadata"].get("annotations") or {}).get(LAST_APPLIED):
            return
        config = copy.deepcopy(self.config)
        annotations = (config.get("metadata") or {}).get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
            if not annotations:
                del config["metadata"]["annotations"]
        merged["metadata"].setdefault("annotations", {})[LAST_APPLIED] = \
            orjson.dumps(config, option=orjson.OPT_SORT_KEYS).decode()


def conflict_error(conflicts: list[tuple[ManagerKey, Path]]) -> StatusError:
    """409 Conflict with one FieldManagerConflict cause per field, worded as Kubernetes words it."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {key.describe()}",
               "field": fieldpath.path_string(path)} for key, path in conflicts]
    if len(conflicts) == 1:
        key, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {key.describe()}: {fieldpath.path_string(path)}"
    else:
        lines: list[str] = []
        by_manager: dict[ManagerKey, list[Path]] = {}
        for key, path in conflicts:
            by_manager.setdefault(key, []).append(path)
        for key, paths in by_manager.items():
            lines.append(f"conflicts with {key.describe()}:")
            lines.extend(f"- {fieldpath.path_string(p)}" for p in paths)
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, {"causes": causes})


