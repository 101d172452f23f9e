"""Manifests: Kubernetes objects read from files, directories or stdin, as `kubectl apply -f` reads them.

YAML files may hold several documents (``---``), JSON files one object; a ``List`` (or any ``*List`` kind with
``items``) is unwrapped into its items. Every object is checked for what a client needs before it can send it
(apiVersion, kind, a kind the API serves, metadata.name) and every problem names the file, the document and the
field, e.g. ``manifests/web.yaml (document 2): metadata.name: Required value``. Everything else is the
server's to validate.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from minik.api.registry import Registry, ResourceType

EXTENSIONS = (".yaml", ".yml", ".json")
STDIN = "-"

Obj = dict[str, Any]


class ManifestError(Exception):
    """One or more manifests cannot be used; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Manifest:
    source: str
    """The file as the user named it (``STDIN`` for ``-``)."""

    document: int
    """The document's number in its file, from 1."""

    obj: Obj
    resource: ResourceType

    item: int | None = None
    """The index in the document's ``List``, when it came from one."""

    @property
    def where(self) -> str:
        return f"{self.source} (document {self.document})"

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        value = self.obj["metadata"].get("namespace")
        return value if isinstance(value, str) and value else None


class _Loader(yaml.SafeLoader):
    """YAML as Kubernetes reads it: timestamps stay strings."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def files(paths: Iterable[str], recursive: bool = False) -> list[str]:
    """The files behind ``paths``: files as given, directories expanded to their *.yaml, *.yml and *.json files
    (in name order; into subdirectories only when ``recursive``), ``-`` kept for stdin."""
    out: list[str] = []
    problems: list[str] = []
    for given in paths:
        if given == STDIN:
            out.append(STDIN)
            continue
        path = Path(given)
        if path.is_dir():
            pattern = path.rglob("*") if recursive else path.glob("*")
            out.extend(str(p) for p in sorted(pattern) if p.is_file() and p.suffix.lower() in EXTENSIONS)
        elif path.exists():
            out.append(given)
        else:
            problems.append(f'the path "{given}" does not exist')
    if problems:
        raise ManifestError(problems)
    return out


def _read(source: str) -> str:
    if source == STDIN:
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ManifestError([f"{source}: not a text file (expected UTF-8 YAML or JSON)"]) from None
    except OSError as exc:
        raise ManifestError([f"{source}: {exc.strerror or exc}"]) from None


def _documents(source: str, text: str) -> Iterator[tuple[int, Any]]:
    """(number, decoded document) for every document of a file; a document that cannot be parsed raises
    ManifestError naming it."""
    if source.lower().endswith(".json"):
        try:
            yield 1, orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise ManifestError([f"{source} (document 1): error parsing JSON: {exc}"]) from None
        return
    number = 0
    try:
        for number, document in enumerate(yaml.load_all(text, Loader=_Loader), start=1):
            yield number, document
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        at = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        raise ManifestError([f"{source} (document {number + 1}): error parsing YAML: {at}{problem}"]) from None


def _is_list(obj: Obj) -> bool:
    kind = obj.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and isinstance(obj.get("items"), list)


def _check(obj: Any, registry: Registry, field: str = "") -> tuple[ResourceType | None, list[str]]:
    """The object's resource type and the problems that stop a client from sending it."""
    if not isinstance(obj, dict):
        what = type(obj).__name__ if obj is not None else "nothing"
        return None, [f"{field or '<document>'}: Invalid value: expected an object (a mapping), got {what}"]
    problems: list[str] = []
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    for key, value in (("apiVersion", api_version), ("kind", kind)):
        if value in (None, ""):
            problems.append(f"{field}{key}: Required value")
        elif not isinstance(value, str):
            problems.append(f"{field}{key}: Invalid value: {value!r}: must be a string")
    resource = None
    if not problems:
        resource = registry.by_kind(str(api_version), str(kind))
        if resource is None or resource.api_version != api_version:
            problems.append(f'{field}kind: Invalid value: "{kind}": no matches for kind "{kind}" in version '
                            f'"{api_version}"')
            resource = None
    metadata = obj.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        problems.append(f"{field}metadata: Invalid value: must be an object")
        return resource, problems
    metadata = metadata or {}
    name = metadata.get("name")
    if name in (None, ""):
        problems.append(f"{field}metadata.name: Required value")
    elif not isinstance(name, str):
        problems.append(f"{field}metadata.name: Invalid value: {name!r}: must be a string")
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        problems.append(f"{field}metadata.namespace: Invalid value: {namespace!r}: must be a string")
    return resource, problems


def _manifests(source: str, number: int, document: Any, registry: Registry) -> tuple[list[Manifest], list[str]]:
    if document is None:  # an empty document, as between two `---`
        return [], []
    where = f"{source} (document {number})"
    if isinstance(document, dict) and _is_list(document):
        found: list[Manifest] = []
        problems: list[str] = []
        for index, item in enumerate(document["items"]):
            resource, item_problems = _check(item, registry, f"items[{index}].")
            problems.extend(f"{where}: {p}" for p in item_problems)
            if resource is not None and not item_problems:
                found.append(Manifest(source, number, item, resource, index))
        return found, problems
    resource, problems = _check(document, registry)
    if resource is None or problems:
        return [], [f"{where}: {p}" for p in problems]
    return [Manifest(source, number, document, resource)], []


def load(paths: Iterable[str], registry: Registry, recursive: bool = False) -> list[Manifest]:
    """Every object in ``paths``, in order. Raises ManifestError listing every problem in every file (nothing
    is returned unless all of them can be used, so a bad file stops the whole apply before any write)."""
    manifests: list[Manifest] = []
    problems: list[str] = []
    for source in files(paths, recursive):
        shown = "STDIN" if source == STDIN else source
        try:
            for number, document in _documents(shown, _read(source)):
                found, found_problems = _manifests(shown, number, document, registry)
                manifests.extend(found)
                problems.extend(found_problems)
        except ManifestError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ManifestError(problems)
    return manifests
