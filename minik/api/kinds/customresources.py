"""Custom resources: the resource types a CustomResourceDefinition declares, and their strategy.

Each served version of an established CRD becomes a ``ResourceType`` whose ``custom`` is a
``CustomResourceVersion``: everything the API server needs to serve that version (names, scope, storage version,
subresources, printer columns, selectable fields, the compiled schema, conversion, deprecation). The strategy does
what Kubernetes' custom resource strategy does: a create or a write to the main resource leaves status alone when
the status subresource is enabled, every change outside metadata bumps the generation, and objects are defaulted
and validated by the version's schema.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from minik.api import jsonpath
from minik.api import validation as v
from minik.api.errors import Cause
from minik.api.kinds.apiextensions import (
    ESTABLISHED,
    NAMES_ACCEPTED,
    TERMINATING,
    accepted_names,
    condition_true,
    storage_version,
    versions,
)
from minik.api.kinds.common import Causes, Obj, dict_at, dicts_at, list_at
from minik.api.kinds.crdschemas import CompiledSchema, compile_schema
from minik.api.registry import ALL_VERBS, ResourceType, version_priority
from minik.api.strategy import Strategy

__all__ = ["CustomResourceVersion", "CustomResourceStrategy", "PrinterColumn", "ScalePaths", "resource_types",
           "serves", "TERMINATING_VERBS"]

#: what discovery lists for the resources of a CRD being deleted (creates are refused then)
TERMINATING_VERBS = ("delete", "deletecollection", "get", "list", "watch")
INT32_MAX = 2 ** 31 - 1


@dataclass(frozen=True)
class PrinterColumn:
    """One of a version's additionalPrinterColumns."""

    name: str
    type: str
    format: str
    description: str
    priority: int
    json_path: str


@dataclass(frozen=True)
class ScalePaths:
    """The scale subresource's paths (specReplicasPath, statusReplicasPath, labelSelectorPath)."""

    spec_replicas: str
    status_replicas: str
    label_selector: str | None


@dataclass(eq=False)
class CustomResourceVersion:
    """How one served version of a CRD is served."""

    crd_name: str
    crd_uid: str
    group: str
    version: str
    kind: str
    list_kind: str
    plural: str
    singular: str
    namespaced: bool
    storage_version: str
    #: every version an object may be stored in (status.storedVersions and the storage version)
    stored_versions: tuple[str, ...]
    status: bool = False
    scale: ScalePaths | None = None
    columns: tuple[PrinterColumn, ...] = ()
    selectable_fields: tuple[str, ...] = ()
    schema: Obj | None = None
    compiled: CompiledSchema | None = None
    #: spec.conversion of the CRD (strategy None or Webhook, and the webhook's settings)
    conversion: Obj = field(default_factory=dict)
    deprecated: bool = False
    warning: str | None = None
    terminating: bool = False
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def group_resource(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def converts(self) -> bool:
        """Whether a stored object may be in another version than this one."""
        return any(stored != self.version for stored in self.stored_versions)

    @property
    def defaults(self) -> bool:
        """Whether the schema has defaults (objects read from storage are then defaulted)."""
        return self.compiled is not None and _has_default(self.schema)

    @property
    def discovery_verbs(self) -> tuple[str, ...]:
        return TERMINATING_VERBS if self.terminating else ALL_VERBS


def _has_default(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "default" in schema or any(_has_default(value) for value in schema.values())
    if isinstance(schema, list):
        return any(_has_default(item) for item in schema)
    return False


def serves(crd: Obj) -> bool:
    """Whether a CRD's resources are served: once its names are accepted or it is established."""
    return condition_true(crd, ESTABLISHED) or condition_true(crd, NAMES_ACCEPTED)


def _columns(version: Obj) -> tuple[PrinterColumn, ...]:
    out = []
    for column in dicts_at(version, "additionalPrinterColumns"):
        priority = column.get("priority")
        out.append(PrinterColumn(str(column.get("name") or ""), str(column.get("type") or "string"),
                                 str(column.get("format") or ""), str(column.get("description") or ""),
                                 priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
                                 str(column.get("jsonPath") or "")))
    return tuple(out)


def _scale(version: Obj) -> ScalePaths | None:
    scale = dict_at(version, "subresources").get("scale")
    if not isinstance(scale, dict):
        return None
    selector = scale.get("labelSelectorPath")
    return ScalePaths(str(scale.get("specReplicasPath") or ".spec.replicas"),
                      str(scale.get("statusReplicasPath") or ".status.replicas"),
                      str(selector) if selector else None)


def resource_types(crd: Obj) -> list[ResourceType]:
    """The resource types of every served version of ``crd`` (none while it is not served)."""
    if not serves(crd):
        return []
    meta, spec = dict_at(crd, "metadata"), dict_at(crd, "spec")
    names = accepted_names(crd)
    group = str(spec.get("group") or "")
    plural = str(dict_at(spec, "names").get("plural") or names.get("plural") or "")
    kind = str(names.get("kind") or "")
    storage = storage_version(crd) or ""
    stored = tuple(dict.fromkeys([*[str(s) for s in list_at(dict_at(crd, "status"), "storedVersions")], storage]))
    namespaced = spec.get("scope") == "Namespaced"
    terminating = bool(meta.get("deletionTimestamp")) or condition_true(crd, TERMINATING)
    conversion = dict_at(spec, "conversion")
    out = []
    for version in versions(crd):
        if version.get("served") is not True or not version.get("name"):
            continue
        name = str(version["name"])
        schema = dict_at(version.get("schema"), "openAPIV3Schema") or None
        subresources = dict_at(version, "subresources")
        warning = version.get("deprecationWarning")
        info = CustomResourceVersion(
            crd_name=str(meta.get("name") or ""), crd_uid=str(meta.get("uid") or ""), group=group, version=name,
            kind=kind, list_kind=str(names.get("listKind") or f"{kind}List"), plural=plural,
            singular=str(names.get("singular") or kind.lower()), namespaced=namespaced, storage_version=storage,
            stored_versions=stored, status=subresources.get("status") is not None, scale=_scale(version),
            columns=_columns(version),
            selectable_fields=tuple(str(f.get("jsonPath")) for f in dicts_at(version, "selectableFields")
                                    if f.get("jsonPath")),
            schema=schema, compiled=compile_schema(schema), conversion=conversion,
            deprecated=version.get("deprecated") is True,
            warning=(str(warning) if warning is not None else
                     default_deprecation_warning(name, crd)) if version.get("deprecated") is True else None,
            terminating=terminating,
            short_names=tuple(str(s) for s in list_at(names, "shortNames")),
            categories=tuple(str(c) for c in list_at(names, "categories")))
        out.append(ResourceType(group, name, kind, plural, info.singular, namespaced, CustomResourceStrategy(info),
                                short_names=info.short_names, categories=info.categories,
                                subresources=(("status",) if info.status else ()) + (("scale",) if info.scale else ()),
                                list_kind=info.list_kind, custom=info))
    return out


def default_deprecation_warning(version: str, crd: Obj) -> str:
    """Kubernetes' warning for a deprecated version without a deprecationWarning: ``GROUP/VERSION KIND is
    deprecated``, naming the newest served version that is not deprecated and is newer, if any."""
    spec = dict_at(crd, "spec")
    group, kind = spec.get("group"), dict_at(spec, "names").get("kind")
    message = f"{group}/{version} {kind} is deprecated"
    newer = [str(v_.get("name")) for v_ in versions(crd) if v_.get("served") is True and v_.get("deprecated") is not True
             and version_priority(str(v_.get("name"))) < version_priority(version)]
    if newer:
        newer.sort(key=version_priority)
        message += f"; use {group}/{newer[0]} {kind}"
    return message


# -- the strategy ---------------------------------------------------------------------------------------------------
class CustomResourceStrategy(Strategy):
    """The rules of one served version of a custom resource."""

    tracks_generation = True

    def __init__(self, info: CustomResourceVersion) -> None:
        self.info = info
        self.has_status = info.status
        self.namespace_scoped = info.namespaced
        self._selectable = tuple((path.lstrip("."), jsonpath.parse(path)) for path in info.selectable_fields)

    def spec_of(self, obj: Obj) -> Any:
        """Every change outside metadata bumps the generation (status is the old one's already when the status
        subresource is enabled)."""
        return {k: val for k, val in obj.items() if k != "metadata"}

    def prepare_for_status_update(self, obj: Obj, old: Obj) -> None:
        """A status write changes status only: everything else, metadata too, is the old object's."""
        has_status = "status" in obj
        status = obj.get("status")
        obj.clear()
        obj.update(copy.deepcopy({k: val for k, val in old.items() if k != "status"}))
        if has_status:
            obj["status"] = status

    def default(self, obj: Obj) -> None:
        if self.info.compiled is not None:
            self.info.compiled.default(obj)

    def _checks(self, obj: Obj, old: Obj | None, status_only: bool = False) -> Causes:
        causes: Causes = []
        compiled = self.info.compiled
        if compiled is not None:
            causes += compiled.validate(obj, old)
        scale = self.info.scale
        if scale is not None:
            if not status_only:
                causes += _replicas(obj, scale.spec_replicas)
            causes += _replicas(obj, scale.status_replicas)
            if scale.label_selector:
                found = jsonpath.find(scale.label_selector, obj)
                if found and not isinstance(found[0], str):
                    causes.append(v.invalid(scale.label_selector, found[0], "must be a string"))
        return causes

    def validate(self, obj: Obj) -> Causes:
        return super().validate(obj) + self._checks(obj, None)

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        return super().validate_update(obj, old) + self._checks(obj, old)

    def validate_status_update(self, obj: Obj, old: Obj) -> Causes:
        return v.validate_object_meta_update(obj.get("metadata"), old.get("metadata")) + \
            self._checks(obj, old, status_only=True)

    def field_set(self, obj: Obj) -> dict[str, str]:
        """metadata.name (and metadata.namespace for namespaced resources) and the CRD's selectable fields."""
        meta = obj.get("metadata") or {}
        fields = {"metadata.name": meta.get("name", "")}
        if self.info.namespaced:
            fields["metadata.namespace"] = meta.get("namespace", "")
        for name, steps in self._selectable:
            found = jsonpath.find(steps, obj)
            fields[name] = jsonpath.text(found[0]) if found and found[0] is not None else ""
        return fields


def _replicas(obj: Obj, path: str) -> list[Cause]:
    """A scale path's value must be an integer from 0 to 2^31-1 (when set)."""
    found = jsonpath.find(path, obj)
    if not found or found[0] is None:
        return []
    value = found[0]
    if isinstance(value, bool) or not isinstance(value, int):
        return [v.invalid(path, value, f".{path.lstrip('.')} accessor error: {value!r} is of the type "
                                        f"{type(value).__name__}, expected int64")]
    if value < 0:
        return [v.invalid(path, value, "should be a non-negative integer")]
    if value > INT32_MAX:
        return [v.invalid(path, value, f"should be less than or equal to {INT32_MAX}")]
    return []
