"""The resource registry: one table of every kind the API serves.

Adding a built-in resource is one ``ResourceType`` entry plus its strategy (defaults, validation, field selectors);
the API server's handlers, discovery and the client all read this table.

The table changes at run time: each CustomResourceDefinition contributes the resource types of its served versions
(``Registry.replace``), and whoever keeps something derived from the table (discovery documents, OpenAPI, the
garbage collector's informers) hears of every change through ``subscribe``. Readers never cache a lookup across
changes: ``generation`` tells them when to look again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minik.api.strategy import Strategy

#: the verbs of a resource that can be listed and written
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    """What Kubernetes' discovery says about a resource, plus the strategy that owns its rules."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    strategy: Strategy
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    list_kind: str = field(default="")
    #: for the resources a CustomResourceDefinition declares: how that version is served (a
    #: ``minik.api.kinds.customresources.CustomResourceVersion``); None for built-in kinds
    custom: Any = field(default=None, compare=False, hash=False, repr=False)

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``GROUP/VERSION`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``deployments.apps``, or ``pods`` for the core group (as in Kubernetes' error messages)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def kind_list(self) -> str:
        return self.list_kind or f"{self.kind}List"

    def prefix(self, namespace: str | None = None) -> str:
        """The store key prefix for all objects of this type, or those of one namespace. Always ends in '/'.
        Every version of a resource shares it: objects are stored once, in one version."""
        base = f"/{self.group or 'core'}/{self.plural}/"
        if namespace is not None and self.namespaced:
            return f"{base}{namespace}/"
        return base

    def key(self, namespace: str | None, name: str) -> str:
        if self.namespaced:
            return f"{self.prefix(namespace)}{name}"
        return f"{self.prefix()}{name}"


_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """A sort key that puts versions in Kubernetes' preference order (its CompareKubeAwareVersionStrings):
    GA before beta before alpha, higher numbers first, then anything else alphabetically."""
    match = _KUBE_VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    level = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (level, -int(major), -int(minor or 0), "")


#: a change of the registry: the types added and the types removed (a changed type is in both)
Change = tuple[list[ResourceType], list[ResourceType]]
Listener = Callable[[Change], None]


class Registry:
    """Looks resource types up by (group, version, plural) and by the names kubectl accepts.

    The built-in types are given at construction; ``replace`` sets, per owner (a CustomResourceDefinition's name),
    the types that owner adds. Lookups see a change at once."""

    def __init__(self, types: Iterable[ResourceType]) -> None:
        self._builtin = list(types)
        self._owned: dict[str, list[ResourceType]] = {}
        self._listeners: list[Listener] = []
        #: bumped by every change: anything derived from the table is stale when its generation is older
        self.generation = 0
        self._index()

    def copy(self) -> Registry:
        """A registry of its own with the same types (a cluster's, which CRDs then extend) and no listeners."""
        copied = Registry(self._builtin)
        for owner, types in self._owned.items():
            copied._owned[owner] = list(types)
        copied._index()
        return copied

    def _index(self) -> None:
        owned = [t for types in self._owned.values() for t in types]
        # a resource's preferred version first, so that name lookups find it
        owned.sort(key=lambda t: (t.group, t.plural, version_priority(t.version)))
        self.types: list[ResourceType] = self._builtin + owned
        self._by_path = {(t.group, t.version, t.plural): t for t in self.types}
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        self._by_gvk: dict[tuple[str, str, str], ResourceType] = {}
        for t in self.types:
            self._by_kind.setdefault((t.group, t.kind), t)
            self._by_gvk[(t.group, t.version, t.kind)] = t
        self._preferred: list[ResourceType] = []
        seen: set[tuple[str, str]] = set()
        for t in self.types:
            if (t.group, t.plural) not in seen:
                seen.add((t.group, t.plural))
                self._preferred.append(t)

    # -- changes ------------------------------------------------------------------------------------------------
    def replace(self, owner: str, types: list[ResourceType]) -> None:
        """Make ``types`` the ones ``owner`` adds (none: remove what it added). Built-in types are never replaced:
        a type whose (group, plural) a built-in one has is left out."""
        builtin = {(t.group, t.plural) for t in self._builtin}
        wanted = [t for t in types if (t.group, t.plural) not in builtin]
        before = self._owned.get(owner, [])
        if len(before) == len(wanted) and all(a is b for a, b in zip(before, wanted)):
            return
        if wanted:
            self._owned[owner] = wanted
        else:
            self._owned.pop(owner, None)
        self._index()
        self.generation += 1
        kept = {id(t) for t in before} & {id(t) for t in wanted}
        change = ([t for t in wanted if id(t) not in kept], [t for t in before if id(t) not in kept])
        for listener in list(self._listeners):
            listener(change)

    def owned(self, owner: str) -> list[ResourceType]:
        return list(self._owned.get(owner, ()))

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every change from now on; returns the function that stops it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    # -- lookups ------------------------------------------------------------------------------------------------
    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The type of ``kind`` in ``api_version``, or in its group's preferred version when that version is not
        served (an ownerReference may name an older version)."""
        group, _, version = api_version.rpartition("/")
        found = self._by_gvk.get((group, version, kind))
        return found if found is not None else self._by_kind.get((group, kind))

    def preferred(self) -> list[ResourceType]:
        """One type per resource (group and plural): its preferred version."""
        return list(self._preferred)

    def group_versions(self) -> dict[str, list[str]]:
        """Every served group (``""`` for core) with its versions, the preferred one first: registration order
        for the built-in groups, Kubernetes' version order for the others."""
        out: dict[str, list[str]] = {}
        for t in self.types:
            versions = out.setdefault(t.group, [])
            if t.version not in versions:
                versions.append(t.version)
        builtin_groups = {t.group for t in self._builtin}
        for group, versions in out.items():
            if group not in builtin_groups:
                versions.sort(key=version_priority)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self.types if t.group == group and t.version == version]

    def resolve(self, name: str) -> ResourceType | None:
        """Resolve what a user typed as kubectl does: plural, singular, short name or kind, alone or qualified
        with the group (``deploy.apps``) or the version and group (``deployments.v1.apps``)."""
        lowered = name.lower()
        for t in self.types:
            names = (t.plural, t.singular, t.kind.lower(), *t.short_names)
            if lowered in names:
                return t
            if t.group and any(lowered in (f"{n}.{t.group}", f"{n}.{t.version}.{t.group}") for n in names):
                return t
        return None
