"""The resource registry: one table of every kind the API serves.

Adding a resource is one ``ResourceType`` entry plus its strategy (defaults, validation, field selectors);
the API server's handlers, discovery and the client all read this table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minik.api.strategy import Strategy


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
    verbs: tuple[str, ...] = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
    list_kind: str = field(default="")

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
        """The store key prefix for all objects of this type, or those of one namespace. Always ends in '/'."""
        base = f"/{self.group or 'core'}/{self.plural}/"
        if namespace is not None and self.namespaced:
            return f"{base}{namespace}/"
        return base

    def key(self, namespace: str | None, name: str) -> str:
        if self.namespaced:
            return f"{self.prefix(namespace)}{name}"
        return f"{self.prefix()}{name}"


class Registry:
    """Looks resource types up by (group, version, plural) and by the names kubectl accepts."""

    def __init__(self, types: list[ResourceType]) -> None:
        self.types = list(types)
        self._by_path = {(t.group, t.version, t.plural): t for t in self.types}
        self._by_kind = {(t.group, t.kind): t for t in self.types}

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        return self._by_kind.get((group, kind))

    def group_versions(self) -> dict[str, list[str]]:
        """Every served group (``""`` for core) with its versions, in registration order."""
        out: dict[str, list[str]] = {}
        for t in self.types:
            versions = out.setdefault(t.group, [])
            if t.version not in versions:
                versions.append(t.version)
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
