"""`minik apply -f`: create what is missing, patch what changed, as `kubectl apply` (client-side) does.

Each applied object carries the annotation kubectl.kubernetes.io/last-applied-configuration: the manifest as
it was last applied, in kubectl's serialization (keys sorted, compact, ``"annotations":{}`` when the manifest
has none, a trailing newline), so `minik apply` and `kubectl apply` take turns on the same objects. An update is
kubectl's three-way strategic merge patch:

* changes and additions: from the live object to the new manifest, ignoring fields the manifest does not
  mention (the server's defaults and other writers' fields stay);
* deletions: from the last-applied manifest to the new one, so a field removed from the file is removed from
  the object (``null``; ``$patch: delete`` for items of lists merged by key; ``$deleteFromPrimitiveList`` for
  sets);
* lists the API merges by key (containers by name, env by name, ports...) are patched item by item with a
  ``$setElementOrder`` directive; other lists are replaced whole; ``$retainKeys`` for maps that need it.

An empty patch means ``unchanged`` and is not sent.
"""

from __future__ import annotations

import copy
from typing import Any

import click
import orjson

from minik.api import patchmeta
from minik.api.errors import StatusError
from minik.api.resources import REGISTRY
from minik.cli.common import CliError, Session, kind_label, namespace_option, status_message, target_options
from minik.cli.output import go_json
from minik.client import STRATEGIC_MERGE_PATCH, Client
from minik.manifests import Manifest, ManifestError, load

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
CONFLICT_RETRIES = 5

Obj = dict[str, Any]
Fields = dict[str, patchmeta.Field]


# -- the last-applied annotation --------------------------------------------------------------------------------
def last_applied(obj: Obj) -> str:
    """The annotation's value for ``obj``: the object without that annotation, in kubectl's serialization."""
    clean = copy.deepcopy(obj)
    metadata = clean.setdefault("metadata", {})
    annotations = dict(metadata.get("annotations") or {})
    annotations.pop(LAST_APPLIED, None)
    metadata["annotations"] = annotations
    return go_json(clean) + "\n"


def with_last_applied(obj: Obj) -> Obj:
    """``obj`` annotated with its own last-applied configuration (what apply creates, and patches towards)."""
    value = last_applied(obj)
    annotated = copy.deepcopy(obj)
    metadata = annotated.setdefault("metadata", {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), LAST_APPLIED: value}
    return annotated


# -- the three-way strategic merge patch ------------------------------------------------------------------------
def _differs(a: Any, b: Any) -> bool:
    return a != b or type(a) is not type(b) and (isinstance(a, bool) or isinstance(b, bool))


def _subfields(field: patchmeta.Field | None) -> Fields:
    return patchmeta.fields_of(field.type) if field is not None else {}


def _diff(old: Obj, new: Obj, fields: Fields, additions: bool) -> Obj:
    """The patch from ``old`` to ``new``: only its changes and additions (``additions``), or only its deletions."""
    patch: Obj = {}
    if not additions:
        for key in old:
            if key not in new:
                patch[key] = None
    for key, new_value in new.items():
        if key not in old:
            if additions:
                patch[key] = new_value
            continue
        old_value, field = old[key], fields.get(key)
        if isinstance(old_value, dict) and isinstance(new_value, dict):
            sub = _diff(old_value, new_value, _subfields(field), additions)
            if sub and additions and field is not None and field.retain_keys:
                sub["$retainKeys"] = sorted(new_value)
            if sub:
                patch[key] = sub
        elif (isinstance(old_value, list) and isinstance(new_value, list) and field is not None
              and (field.merge_key or field.primitive_merge)):
            patch.update(_diff_list(key, old_value, new_value, field, additions))
        elif additions and _differs(old_value, new_value):
            patch[key] = new_value
    return patch


def _diff_list(key: str, old: list[Any], new: list[Any], field: patchmeta.Field, additions: bool) -> Obj:
    """The patch entries for a list the API merges: by ``field.merge_key``, or as a set of scalars."""
    if field.primitive_merge:
        if additions:
            added = [v for v in new if v not in old]
            return {key: added, f"$setElementOrder/{key}": list(new)} if added else {}
        removed = [v for v in old if v not in new]
        return {f"$deleteFromPrimitiveList/{key}": removed} if removed else {}
    merge_key = str(field.merge_key)
    if not all(isinstance(i, dict) and merge_key in i for i in [*old, *new]):
        # items without their key cannot be merged: the list is replaced whole
        return {key: new} if additions and _differs(old, new) else {}
    old_items = {i[merge_key]: i for i in old}
    new_keys = [i[merge_key] for i in new]
    items: list[Obj] = []
    if not additions:
        items.extend({merge_key: k, "$patch": "delete"} for k in old_items if k not in set(new_keys))
    for item in new:
        previous = old_items.get(item[merge_key])
        if previous is None:
            if additions:
                items.append(item)
            continue
        sub = _diff(previous, item, _subfields(field), additions)
        if sub:
            items.append({merge_key: item[merge_key], **sub})
    if not items:
        return {}
    return {key: items, f"$setElementOrder/{key}": [{merge_key: k} for k in new_keys]}


def _combine(a: Obj, b: Obj, fields: Fields) -> Obj:
    """Two patches as one: maps merged, lists merged by key merged item by item, anything else from ``b``."""
    out = dict(a)
    for key, b_value in b.items():
        if key not in out:
            out[key] = b_value
            continue
        a_value, field = out[key], fields.get(key)
        if isinstance(a_value, dict) and isinstance(b_value, dict):
            out[key] = _combine(a_value, b_value, _subfields(field))
        elif (isinstance(a_value, list) and isinstance(b_value, list) and field is not None and field.merge_key
              and not key.startswith("$")):
            merged: dict[Any, Obj] = {}
            for item in [*a_value, *b_value]:
                k = item.get(field.merge_key)
                merged[k] = _combine(merged[k], item, _subfields(field)) if k in merged else item
            out[key] = list(merged.values())
        else:
            out[key] = b_value
    return out


def three_way_patch(original: Obj | None, modified: Obj, current: Obj, kind: str) -> Obj:
    """kubectl's client-side apply patch for a built-in ``kind``: what turns ``current`` into ``modified`` and
    removes what ``original`` (the last-applied manifest) had and ``modified`` no longer has."""
    fields = patchmeta.kind_fields(kind)
    delta = _diff(current, modified, fields, additions=True)
    deletions = _diff(original or {}, modified, fields, additions=False)
    return _combine(deletions, delta, fields)


# -- the command ------------------------------------------------------------------------------------------------
def _namespace_for(manifest: Manifest, given: str | None, default: str) -> str | None:
    if not manifest.resource.namespaced:
        return None
    own = manifest.namespace
    if own and given and own != given:
        raise ManifestError([f'{manifest.where}: the namespace from the provided object "{own}" does not match '
                             f'the namespace "{given}". You must pass \'--namespace={own}\' to perform this '
                             "operation."])
    return own or given or default


async def apply_one(client: Client, manifest: Manifest, namespace: str | None) -> str:
    """Create or patch one object; returns what happened: created, configured or unchanged."""
    rt, name = manifest.resource, manifest.name
    obj = copy.deepcopy(manifest.obj)
    if namespace is not None:
        obj["metadata"]["namespace"] = namespace
    modified = with_last_applied(obj)
    for attempt in range(CONFLICT_RETRIES):
        try:
            current = await client.get(rt, name, namespace)
        except StatusError as exc:
            if exc.code != 404:
                raise _located(exc, "retrieving current configuration of", manifest) from None
            try:
                await client.create(rt, modified, namespace)
            except StatusError as create_error:
                if create_error.reason == "AlreadyExists" and attempt + 1 < CONFLICT_RETRIES:
                    continue  # created meanwhile: patch it instead
                raise _located(create_error, "creating", manifest) from None
            return "created"
        annotation = ((current.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
        original: Obj | None = None
        if annotation:
            try:
                decoded = orjson.loads(annotation)
                original = decoded if isinstance(decoded, dict) else None
            except orjson.JSONDecodeError:
                original = None
        else:
            click.echo(f"Warning: resource {rt.group_resource}/{name} is missing the {LAST_APPLIED} annotation "
                       "which is required by apply; it will be patched automatically.", err=True)
        patch = three_way_patch(original, modified, current, rt.kind)
        if not patch:
            return "unchanged"
        try:
            await client.patch(rt, name, patch, namespace, content_type=STRATEGIC_MERGE_PATCH)
        except StatusError as exc:
            if exc.code == 409 and attempt + 1 < CONFLICT_RETRIES:
                continue
            raise _located(exc, "patching", manifest) from None
        return "configured"
    raise AssertionError("unreachable")


class _Located(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _located(exc: StatusError, verb: str, manifest: Manifest) -> _Located:
    return _Located(status_message(exc, verb, manifest.source))


@click.command()
@click.option("--filename", "-f", "filenames", multiple=True, required=True, metavar="FILE|DIR|-",
              help="Manifests to apply: YAML (several documents allowed) or JSON files, directories of *.yaml, "
                   "*.yml and *.json files, or - for stdin. Repeat for more.")
@click.option("--recursive", "-R", is_flag=True, help="Read directories recursively.")
@namespace_option
@target_options
def apply(filenames: tuple[str, ...], recursive: bool, namespace: str | None) -> None:
    """Create or update objects from manifests, as `kubectl apply -f` does (client-side apply: the
    last-applied-configuration annotation and a three-way strategic merge patch).

    Prints one line per object: `deployment.apps/web created`, `configured` or `unchanged`.
    """
    session = Session.current()
    default = session.namespace(None)
    try:
        manifests = load(filenames, REGISTRY, recursive)
        targets = [(m, _namespace_for(m, namespace, default)) for m in manifests]
    except ManifestError as exc:
        raise CliError("\n".join(f"error: {p}" for p in exc.problems)) from None
    if not targets:
        raise CliError("error: no objects passed to apply")

    async def main() -> list[str]:
        errors: list[str] = []
        async with session.client() as client:
            for manifest, ns in targets:
                try:
                    outcome = await apply_one(client, manifest, ns)
                except _Located as exc:
                    errors.append(exc.message)
                    continue
                click.echo(f"{kind_label(manifest.resource)}/{manifest.name} {outcome}")
        return errors

    errors = session.run(main)
    if errors:
        raise CliError("\n".join(errors))

