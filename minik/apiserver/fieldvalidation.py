"""Field validation of written objects (the ``fieldValidation`` query parameter of create, update and patch).

As Kubernetes decodes a body into its Go types, fields the type does not have are dropped, whatever the
directive; the directive only says what the client hears about them (and about fields given twice):

- ``Strict``: 400 BadRequest listing every unknown and duplicate field (``strict decoding error: unknown field
  "spec.containers[0].imagee"``);
- ``Warn`` (the default, as in Kubernetes 1.27+): the write succeeds with a ``299 - "..."`` warning per field
  (comma-separated in one ``Warning`` header, which clients split as RFC 7234 allows);
- ``Ignore``: silently.

The known fields come from minik/api/schema.json, and for custom resources from their CRD's schema (metadata
from ObjectMeta's fields). Free-form values (labels, annotations, ConfigMap data, managed
fields' ``fieldsV1``) are never looked into.

The same walk refuses a number its integer field cannot hold (``replicas: 1099511627776`` in an int32), whatever
the directive, as Kubernetes' decoder does: a create or update is a 400 BadRequest (``Deployment in version "v1"
cannot be handled as a Deployment: json: cannot unmarshal number 1099511627776 into Go struct field
DeploymentSpec.spec.replicas of type int32``), a patch a 422 Invalid on the field ``patch``, as Kubernetes' patch
handler reports a patched object it cannot decode. A fraction (``1.5``) is refused the same way; a whole number
written as a float (``3.0``) is left to the kinds' validation.

It also reads the base64 of every ``[]byte`` field (Secret data, ConfigMap binaryData) as Go's decoder does
(minik.api.gobytes): line breaks are skipped and the value is stored in canonical base64, as Kubernetes stores
the bytes; base64 Go cannot decode is refused like a number that does not fit (``illegal base64 data at input
byte 3``).

Timestamps (Time and MicroTime fields) are read as Go's ``time.Parse`` reads them (minik.api.gotime) and stored
as Kubernetes stores them, in UTC, to the second or the microsecond: ``2026-11-27T19:52:34.819123+00:00``, as
Python's ``isoformat()`` writes it, reads back as ``2026-11-27T19:52:34Z`` in an Event's lastTimestamp and as
``2026-11-27T19:52:34.819123Z`` in its eventTime. What Go cannot parse is refused like a number that does not fit
(``parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"``), and so is a
timestamp that is no string (``json: cannot unmarshal number into Go struct field Event.lastTimestamp of type
string``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson
import yaml

from minik.api import gobytes, gotime, quantity, schema
from minik.api.crdschema import CompiledSchema
from minik.api.errors import Cause, bad_request, invalid
from minik.api.registry import ResourceType
from minik.api.schema import LEAVES, MICRO_TIME
from minik.apiserver import codec
from minik.apiserver.decoding import (
    FieldDecodeError,
    IntegerOverflow,
    NotAnIntOrString,
    NotAQuantity,
    TypeMismatch,
    decode_error,
    fits,
    patch_decode_error,
)

Obj = dict[str, Any]

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
#: the schema type of a DELETE's body, which is no kind of its own
DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_DIRECTIVES = (IGNORE, STRICT, WARN)


def directive(query: Mapping[str, str], options_kind: str) -> str:
    """The request's directive; 422 for an unknown one, as Kubernetes validates Create/Update/PatchOptions."""
    value = query.get("fieldValidation") or WARN
    if value not in _DIRECTIVES:
        supported = ", ".join(f'"{d}"' for d in ("",) + _DIRECTIVES)
        raise invalid(options_kind, "meta.k8s.io", "", [Cause(
            "fieldValidation", "FieldValueNotSupported",
            f'Unsupported value: "{value}": supported values: {supported}')])
    return value


class FieldValidation:
    """The check for one write request. ``object`` checks a decoded body, ``patcher`` wraps a patch function so the
    patched result is checked; ``headers`` are the Warning headers to send with the response."""

    def __init__(self, resource: ResourceType, query: Mapping[str, str], verb: str) -> None:
        options_kind = {"create": "CreateOptions", "update": "UpdateOptions"}.get(verb, "PatchOptions")
        self.directive = directive(query, options_kind)
        self.resource = resource
        self.patch = verb == "patch"
        self.warnings: list[str] = []
        #: a custom resource's compiled schema (its CRD's), which knows its fields
        self.compiled = resource.custom.compiled if resource.custom is not None else None
        self.type_name = None if resource.custom is not None else \
            schema.load().type_of_kind(resource.api_version, resource.kind)

    def object(self, obj: Obj, body: bytes = b"", content_type: str | None = None) -> Obj:
        """Drop the unknown fields of a decoded body (in place) and report them, with the body's duplicates."""
        return self._check(obj, self._duplicates(body, content_type, obj))

    def patcher(self, apply: Callable[[Obj], Obj], body: bytes = b"", content_type: str | None = None
                ) -> Callable[[Obj], Obj]:
        """``apply`` followed by the check of its result; fields given twice in a merge patch count too."""
        kind = codec.media_type(content_type)
        duplicates = [] if kind == codec.JSON_PATCH else self._duplicates(body, content_type)
        guide = _patch_guide(body) if kind in (codec.MERGE_PATCH, codec.STRATEGIC_MERGE_PATCH) else None

        def patched(current: Obj) -> Obj:
            result = apply(current)
            return self._check(result, duplicates, guide) if isinstance(result, dict) else result

        return patched

    def _duplicates(self, body: bytes, content_type: str | None, decoded: Obj | None = None) -> list[str]:
        """The fields ``body`` gives twice. ``decoded``, the body as decoded (before pruning), lets a JSON body
        that surely has none skip the search."""
        if self.directive == IGNORE or (self.type_name is None and self.compiled is None) or not body:
            return []
        if decoded is not None and codec.media_type(content_type) == codec.JSON and \
                not maybe_duplicates(body, decoded):
            return []
        return duplicate_fields(body, content_type)

    def _check(self, obj: Obj, duplicates: list[str], guide: Obj | None = None) -> Obj:
        if obj.get("kind", self.resource.kind) != self.resource.kind:
            return obj
        if self.compiled is not None:
            unknown = prune_custom(obj, self.compiled)
            if self.directive != IGNORE:
                self._report([f'duplicate field "{path}"' for path in duplicates] +
                             [f'unknown field "{path}"' for path in unknown])
            return obj
        if self.type_name is None:
            return obj
        try:
            unknown = prune(obj, self.type_name) if guide is None else prune_patched(obj, guide, self.type_name)
        except (FieldDecodeError, gobytes.IllegalBase64, gotime.TimeParseError) as exc:
            message = str(exc) if isinstance(exc, gobytes.IllegalBase64) else exc.message
            if self.patch:
                raise patch_decode_error(obj, message) from None
            raise decode_error(self.resource.kind, self.resource.version, message) from None
        if self.directive != IGNORE:
            self._report([f'duplicate field "{path}"' for path in duplicates] +
                         [f'unknown field "{path}"' for path in unknown])
        return obj

    def _report(self, problems: list[str]) -> None:
        if not problems:
            return
        if self.directive == STRICT:
            message = "strict decoding error: " + ", ".join(problems)
            if not self.patch:
                kind, version = self.resource.kind, self.resource.version
                message = f'{kind} in version "{version}" cannot be handled as a {kind}: {message}'
            raise bad_request(message)
        for problem in problems:
            if problem not in self.warnings:
                self.warnings.append(problem)

    @property
    def headers(self) -> dict[str, str]:
        """One ``Warning`` header holding every warning (RFC 7234 allows a comma-separated list)."""
        if not self.warnings:
            return {}
        return {"Warning": ", ".join(warning_value(w) for w in self.warnings)}


def warning_value(text: str) -> str:
    """``299 - "text"`` with the text quoted as RFC 7234 wants it (Kubernetes' warning header format)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    if not escaped.isprintable():  # control characters (from a client's own field names) may not go in a header
        escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in escaped)
    return f'299 - "{escaped}"'


# -- bodies that are no kind of their own ---------------------------------------------------------------------
def check_decodable(obj: Obj, type_name: str) -> FieldDecodeError | None:
    """What Go's decoder would refuse in ``obj`` (an object of ``type_name``), if anything. For bodies that are no
    kind of their own (DeleteOptions); fields the type does not have are dropped on the way, as Kubernetes'
    decoder drops them."""
    try:
        _prune_object(obj, type_name, "", [], schema.load())
    except FieldDecodeError as exc:
        return exc
    return None


# -- unknown fields and values of the wrong type ----------------------------------------------------------------
def prune(obj: Obj, type_name: str) -> list[str]:
    """Remove (in place) every field of ``obj`` that its type does not have; the paths removed, in order. Raises
    the FieldDecodeError of the first value Go's decoder would refuse."""
    removed: list[str] = []
    _prune_object(obj, type_name, "", removed, schema.load())
    return removed


def prune_custom(obj: Obj, compiled: CompiledSchema) -> list[str]:
    """``prune`` for a custom resource: its metadata by ObjectMeta's fields, the rest by its CRD's schema."""
    removed: list[str] = []
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        try:
            _prune_object(meta, OBJECT_META, "metadata.", removed, schema.load())
        except (FieldDecodeError, gotime.TimeParseError):
            pass  # the metadata's validation says what is wrong with it
    return removed + compiled.prune(obj)


def prune_patched(obj: Obj, patch: Obj, type_name: str) -> list[str]:
    """``prune`` for the result of a merge or strategic merge ``patch`` of a stored object: the stored object was
    pruned when it was written, so an unknown field can only be in what the patch set; only those parts are
    walked (a status patch of one condition walks that condition, not the whole pod). Same result, same order."""
    removed: list[str] = []
    _prune_object(obj, type_name, "", removed, schema.load(), patch)
    return removed


def _prune_value_patched(value: Any, patch: Any, walk: tuple[str, Any, str], path: str, removed: list[str],
                         s: schema.Schema) -> None:
    how, inner, _go = walk
    if how == "@" and isinstance(patch, dict) and isinstance(value, dict):
        _prune_object(value, inner, path + ".", removed, s, patch)
    elif how == "{}" and isinstance(patch, dict) and isinstance(value, dict):
        for key, item in value.items():
            if key in patch:
                if inner is None:
                    continue
                if inner[0] in LEAVES:
                    value[key] = _leaf(item, inner)
                else:
                    _prune_value_patched(item, patch[key], inner, f"{path}[{key}]", removed, s)
    else:  # set whole (or a list merged item by item): all of it
        _prune_value(value, walk, path, removed, s)


def _patch_guide(body: bytes) -> Obj | None:
    """The decoded merge patch, to guide ``prune_patched``; None (prune everything) when it is not a JSON object."""
    try:
        patch = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return patch if isinstance(patch, dict) else None


def _prune_object(obj: Obj, type_name: str, path: str, removed: list[str], s: schema.Schema,
                  patch: Obj | None = None) -> None:
    """Prune ``obj``; with ``patch``, only the keys the patch set (see ``prune_patched``)."""
    fields = s.fields(type_name)
    key = ""
    try:
        for key in list(obj) if patch is None else [k for k in obj if k in patch]:
            walk = fields.get(key, _UNKNOWN)
            if walk is None:
                continue
            value = obj[key]
            how = walk[0]
            if how == "=":  # the most common field: a string, a boolean
                if type(value) not in walk[1] and value is not None:
                    raise TypeMismatch(value, walk[2])
                continue
            if walk is _UNKNOWN:
                removed.append(f"{path}{key}")
                del obj[key]
                continue
            if value is None:  # Go's decoder leaves the field unset
                continue
            if how == "#":
                if type(value) is not int and type(value) is not float:
                    raise TypeMismatch(value, walk[2])
                if not fits(value, walk[1]):
                    raise IntegerOverflow(value, walk[1])
            elif how == "@" and patch is None:
                if type(value) is not dict:
                    raise TypeMismatch(value, walk[2])
                _prune_object(value, walk[1], f"{path}{key}.", removed, s)
            elif how in LEAVES:
                obj[key] = _leaf(value, walk)
            elif patch is None:
                _prune_value(value, walk, f"{path}{key}", removed, s)
            else:
                _prune_value_patched(value, patch[key], walk, f"{path}{key}", removed, s)
    except FieldDecodeError as exc:
        exc.within(key, type_name)
        raise


#: a field the type does not have (``fields.get``'s default: a field's walk may be None)
_UNKNOWN: Any = ("?", None, "")


def _prune_value(value: Any, walk: tuple[str, Any, str], path: str, removed: list[str], s: schema.Schema) -> None:
    """Check and prune one value that is not null, as its field's ``walk`` says (schema.Walk)."""
    how, inner, go = walk
    if how == "@":
        if type(value) is not dict:
            raise TypeMismatch(value, go)
        _prune_object(value, inner, path + ".", removed, s)
    elif how == "[]":
        if type(value) is not list:
            raise TypeMismatch(value, go)
        if inner is None:
            return
        if inner[0] == "=":
            _check_scalars(value, inner)
            return
        for i, item in enumerate(value):
            if item is None:
                continue
            if inner[0] in LEAVES:
                value[i] = _leaf(item, inner)
            else:
                _prune_value(item, inner, f"{path}[{i}]", removed, s)
    elif how == "{}":
        if type(value) is not dict:
            raise TypeMismatch(value, go)
        if inner is None:
            return
        if inner[0] == "=":
            _check_scalars(value.values(), inner)
            return
        for key, item in value.items():
            if item is None:
                continue
            if inner[0] in LEAVES:
                value[key] = _leaf(item, inner)
            else:
                _prune_value(item, inner, f"{path}[{key}]", removed, s)
    elif how == "#":
        if type(value) is not int and type(value) is not float:
            raise TypeMismatch(value, go)
        if not fits(value, inner):
            raise IntegerOverflow(value, inner)
    elif how == "=":
        if type(value) not in inner:
            raise TypeMismatch(value, go)
    elif how == "i":
        if type(value) is str:
            return
        if type(value) is not int and type(value) is not float:
            raise NotAnIntOrString(value)
        if not fits(value, inner):
            raise IntegerOverflow(value, inner)
    elif how == "q":
        if not quantity.is_quantity(value):
            raise NotAQuantity(value)
    elif how in LEAVES:  # a leaf inside a list or map is rewritten by its container; alone it is only checked
        _leaf(value, walk)


def _check_scalars(values: Iterable[Any], walk: tuple[str, Any, str]) -> None:
    """The items of a list or the values of a map of strings (or booleans, or floats)."""
    types = walk[1]
    for v in values:
        if type(v) not in types and v is not None:
            raise TypeMismatch(v, walk[2])


def _leaf(value: Any, walk: tuple[str, Any, str]) -> Any:
    """A single value as Kubernetes stores it: a []byte field's base64, a Time or MicroTime; Go's error for what it
    cannot read."""
    if value is None:
        return None
    if type(value) is not str:
        raise TypeMismatch(value, "string" if walk[0] == "t" else walk[2])
    if walk[0] == "b":
        return gobytes.canonical(value)
    return gotime.canonical(value, gotime.RFC3339_MICRO if walk == MICRO_TIME else gotime.RFC3339)


# -- duplicate fields -----------------------------------------------------------------------------------------
class _Pairs(dict):
    """A decoded JSON object that remembers which keys it saw more than once."""

    duplicates: list[str]


def _pairs_hook(found: list[_Pairs]) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(items)
        if len(result) == len(items):
            return result
        marked = _Pairs(result)
        seen: set[str] = set()
        marked.duplicates = []
        for key, _value in items:
            if key in seen and key not in marked.duplicates:
                marked.duplicates.append(key)
            seen.add(key)
        found.append(marked)
        return marked

    return pairs


class _Duplicate(Exception):
    pass


def _refuse_duplicates(items: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(items)
    if len(result) != len(items):
        raise _Duplicate
    return result


#: a decoder that only answers "is any field given twice?": the common answer, no, costs one pass of the C
#: scanner; the paths are worked out only for a body that has duplicates
_NO_DUPLICATES = json.JSONDecoder(object_pairs_hook=_refuse_duplicates)


def maybe_duplicates(body: bytes, decoded: Any) -> bool:
    """False when the JSON ``body`` surely gives no field twice: it has as many colons as ``decoded``, its
    decoding, once written back. Every field has its colon, and a string's colons survive the round trip unless
    they were written as a \\u escape (then this says maybe); a decoder keeps one of two same-named fields, so a
    body with duplicates has more colons. Two C passes, where finding the duplicates takes a Python call for every
    object in the body."""
    if b"\\u" in body:
        return True
    try:
        again = orjson.dumps(decoded)
    except orjson.JSONEncodeError:  # an integer over 64 bits, which only the slow path's decoder reads
        return True
    return body.count(b":") != again.count(b":")


def duplicate_fields(body: bytes, content_type: str | None) -> list[str]:
    """The paths of fields given more than once in a JSON or YAML body (both decoders keep the last)."""
    kind = codec.media_type(content_type)
    try:
        if kind in ("application/yaml", "application/x-yaml", "text/yaml", codec.APPLY_PATCH):
            return _yaml_duplicates(yaml.compose(body.decode("utf-8"), Loader=yaml.SafeLoader), "")
        try:
            _NO_DUPLICATES.decode(body.decode("utf-8"))
            return []
        except _Duplicate:
            pass
        found: list[_Pairs] = []
        decoded = json.loads(body, object_pairs_hook=_pairs_hook(found))
        return _json_duplicates(decoded, "") if found else []
    except (ValueError, yaml.YAMLError, RecursionError):
        return []  # the body already decoded once; a second reader that disagrees reports nothing


def _json_duplicates(value: Any, path: str) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        prefix = f"{path}." if path else ""
        found.extend(prefix + key for key in getattr(value, "duplicates", ()))
        for key, item in value.items():
            found.extend(_json_duplicates(item, prefix + key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(_json_duplicates(item, f"{path}[{i}]"))
    return found


def _yaml_duplicates(node: Any, path: str) -> list[str]:
    found: list[str] = []
    if isinstance(node, yaml.MappingNode):
        prefix = f"{path}." if path else ""
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in seen and prefix + key not in found:
                found.append(prefix + key)
            seen.add(key)
            found.extend(_yaml_duplicates(value_node, prefix + key))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            found.extend(_yaml_duplicates(item, f"{path}[{i}]"))
    return found
