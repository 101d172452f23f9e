"""Field sets: which fields of an object someone sets, the structure behind managedFields and server-side apply.

A field set is a Python set of paths; a path is a tuple of path elements written as Kubernetes writes them in
``fieldsV1``: ``f:name`` (a field), ``k:{"name":"c"}`` (the item of a list keyed by fields), ``v:"x"`` (the item
of a list that is a set). ``encode``/``decode`` turn a set into the ``fieldsV1`` tree (``"."`` marks a node that is
itself in the set and also has children) and back.

How an object divides into fields comes from its kind's structure (``Shape``): lists with keys (containers by
name, ports by containerPort and protocol) are granular by item, lists marked as sets by value, every other list
is atomic (one field, replaced whole), as are a few structs (label selectors, env var references). Objects are
granular key by key. The shapes come from the strategic-merge-patch table (``minik.api.patchmeta``) with the few
places where server-side apply differs from it; a custom resource's from its CRD's schema (``custom_shape``).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from minik.api import patchmeta

Path = tuple[str, ...]
FieldSet = set[Path]
Obj = dict[str, Any]

MEMBER = "."


@dataclass(frozen=True)
class Shape:
    """How a value divides into fields. ``type`` names the struct (or the list items' struct) in patchmeta's
    table; ``keys`` are a list's key fields with their defaults; ``is_set`` marks a list of scalars merged as a
    set; ``atomic`` a value that is one field."""

    type: str | None = None
    keys: tuple[tuple[str, Any], ...] = ()
    is_set: bool = False
    atomic: bool = False

    @property
    def granular_list(self) -> bool:
        return bool(self.keys) or self.is_set


FREE = Shape()

# Where server-side apply's structure differs from (or adds to) the strategic-merge-patch table: list keys of
# more than one field (Kubernetes' listMapKeys, with defaults), and the types of fields the SMP table leaves out.
_LIST_KEYS: dict[tuple[str, str], tuple[tuple[str, Any], ...]] = {
    ("Container", "ports"): (("containerPort", None), ("protocol", "TCP")),
    ("ServiceSpec", "ports"): (("port", None), ("protocol", "TCP")),
    ("PodSpec", "topologySpreadConstraints"): (("topologyKey", None), ("whenUnsatisfiable", None)),
}
_FIELD_TYPES: dict[tuple[str, str], str] = {
    ("WorkloadSpec", "selector"): "LabelSelector", ("JobSpec", "selector"): "LabelSelector",
    ("ObjectMeta", "ownerReferences"): "OwnerReference", ("Container", "env"): "EnvVar",
    ("EnvVar", "valueFrom"): "EnvVarSource", ("EnvVarSource", "fieldRef"): "ObjectFieldSelector",
    ("EnvVarSource", "resourceFieldRef"): "ResourceFieldSelector",
    ("EnvVarSource", "configMapKeyRef"): "ConfigMapKeySelector",
    ("EnvVarSource", "secretKeyRef"): "SecretKeySelector", ("PodSpec", "imagePullSecrets"): "LocalObjectReference",
}
#: structs Kubernetes marks ``+structType=atomic``
_ATOMIC_TYPES = frozenset({"LabelSelector", "OwnerReference", "ObjectFieldSelector", "ResourceFieldSelector",
                           "ConfigMapKeySelector", "SecretKeySelector", "LocalObjectReference"})

_shapes: dict[tuple[str | None, str], Shape] = {}


def kind_shape(kind: str) -> Shape:
    """The shape of a whole object of ``kind`` (its fields are patchmeta's top-level fields of the kind)."""
    found = _kinds.get(kind)
    if found is None:
        found = _kinds[kind] = Shape(type="kind:" + kind)
    return found


_kinds: dict[str, Shape] = {}


#: the schema nodes of custom resources' shapes, by the type name their shapes carry (``crd:HASH/field/...``)
_custom: dict[str, Obj] = {}


def custom_shape(schema: Obj | None) -> Shape:
    """The shape of a custom resource, from its CRD version's schema: lists by ``x-kubernetes-list-type`` (``map``
    keyed by ``x-kubernetes-list-map-keys``, ``set``, else atomic), objects granular unless
    ``x-kubernetes-map-type: atomic``; its metadata as every kind's."""
    if schema is None:
        return kind_shape("")
    name = "crd:" + hashlib.sha256(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    _custom.setdefault(name, schema)
    return Shape(type=name)


def _custom_child(type_name: str, name: str) -> Shape:
    if "/" not in type_name and name == "metadata":
        return _child("kind:", name)
    node = _custom.get(type_name) or {}
    properties = node.get("properties")
    sub = properties.get(name) if isinstance(properties, dict) else None
    sub_name = f"{type_name}/{name}"
    if sub is None and isinstance(node.get("additionalProperties"), dict):
        sub, sub_name = node["additionalProperties"], f"{type_name}/*"
    if not isinstance(sub, dict):
        return FREE
    if sub.get("type") == "array":
        found = sub.get("items")
        items: Obj = found if isinstance(found, dict) else {}
        _custom.setdefault(sub_name, items)
        list_type = sub.get("x-kubernetes-list-type")
        if list_type == "map":
            item_properties = items.get("properties") or {}
            keys = tuple((str(key), (item_properties.get(key) or {}).get("default"))
                         for key in sub.get("x-kubernetes-list-map-keys") or ())
            return Shape(type=sub_name, keys=keys)
        return Shape(type=sub_name, is_set=list_type == "set")
    _custom.setdefault(sub_name, sub)
    return Shape(type=sub_name, atomic=sub.get("x-kubernetes-map-type") == "atomic")


def child(shape: Shape, name: str) -> Shape:
    """The shape of field ``name`` of a struct of ``shape`` (items of a list: see ``item``)."""
    key = (shape.type, name)
    found = _shapes.get(key)
    if found is None:
        found = _shapes[key] = _child(shape.type, name)
    return found


def _child(type_name: str | None, name: str) -> Shape:
    if type_name is None:
        return FREE
    if type_name.startswith("crd:"):
        return _custom_child(type_name, name)
    if type_name.startswith("kind:"):
        fields = patchmeta.kind_fields(type_name[5:])
        type_name = "kind"
    else:
        fields = patchmeta.fields_of(type_name)
    meta = fields.get(name)
    field_type = _FIELD_TYPES.get((type_name, name)) or (meta.type if meta else None)
    keys = _LIST_KEYS.get((type_name, name))
    if keys is None and meta is not None and meta.merge_key:
        keys = ((meta.merge_key, None),)
    return Shape(type=field_type, keys=keys or (), is_set=bool(meta and meta.primitive_merge),
                 atomic=field_type in _ATOMIC_TYPES and not keys)


_items: dict[str | None, Shape] = {}


def item(shape: Shape) -> Shape:
    """The shape of an item of a list of ``shape``."""
    found = _items.get(shape.type)
    if found is None:
        found = _items[shape.type] = Shape(type=shape.type, atomic=shape.type in _ATOMIC_TYPES)
    return found


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def item_element(shape: Shape, value: Any) -> str | None:
    """The path element of a list item: ``k:{...}`` for keyed lists, ``v:...`` for sets; None when the item
    cannot be keyed (a key field missing), which makes the whole list atomic."""
    if shape.is_set:
        return "v:" + _json(value)
    if not isinstance(value, dict):
        return None
    key: dict[str, Any] = {}
    for name, default in shape.keys:
        found = value.get(name, default)
        if found is None:
            return None
        key[name] = found
    return "k:" + _json(key)


def list_elements(shape: Shape, items: Any) -> list[str] | None:
    """The path elements of a granular list's items, or None when the list is atomic here (not granular, an item
    without its keys, or two items with one key)."""
    if not isinstance(items, list):
        return None
    if len(shape.keys) == 1:  # the common case, written out: ``k:{"name":"c"}``
        [(name, default)] = shape.keys
        elements = []
        for entry in items:
            found = entry.get(name, default) if type(entry) is dict else None
            if found is None:
                return None
            elements.append('k:{"' + name + '":' + orjson.dumps(found, option=orjson.OPT_SORT_KEYS).decode() + "}")
    elif shape.granular_list:
        elements = []
        for entry in items:
            element = item_element(shape, entry)
            if element is None:
                return None
            elements.append(element)
    else:
        return None
    return elements if len(set(elements)) == len(elements) else None


# -- sets of an object --------------------------------------------------------------------------------------
def field_set(obj: Any, shape: Shape) -> FieldSet:
    """Every field ``obj`` sets: its scalars, empty objects, atomic values, and list items that have keys."""
    out: FieldSet = set()
    _collect(obj, shape, (), out)
    return out


def _collect(value: Any, shape: Shape, path: Path, out: FieldSet) -> None:
    if isinstance(value, dict):
        if shape.atomic or not value:
            if path:
                out.add(path)
            return
        for name, sub in value.items():
            _collect(sub, child(shape, name), path + ("f:" + name,), out)
    elif isinstance(value, list):
        elements = list_elements(shape, value)
        if elements is None:
            out.add(path)
            return
        inner = item(shape)
        for element, sub in zip(elements, value):
            out.add(path + (element,))
            if not shape.is_set and isinstance(sub, dict) and not inner.atomic:
                for name, leaf in sub.items():
                    _collect(leaf, child(inner, name), path + (element, "f:" + name), out)
    elif path:
        out.add(path)


@dataclass
class Comparison:
    added: FieldSet
    modified: FieldSet
    removed: FieldSet

    @property
    def changed(self) -> FieldSet:
        return self.added | self.modified


_MISSING: Any = object()


def compare(old: Any, new: Any, shape: Shape) -> Comparison:
    """What changed from ``old`` to ``new``: fields added (with every object and list item that appeared),
    modified (scalars and atomic values), and removed."""
    result = Comparison(set(), set(), set())
    _compare(old, new, shape, (), result)
    return result


def _compare(old: Any, new: Any, shape: Shape, path: Path, out: Comparison) -> None:
    if old is not _MISSING and new is not _MISSING and old == new:
        return
    # a null stands for an empty value that is there (Go writes nil slices and pointers as null)
    present = new if new not in (_MISSING, None) else old
    if isinstance(present, dict) and (old in (_MISSING, None) or isinstance(old, dict)) and \
            (new in (_MISSING, None) or isinstance(new, dict)):
        old_d = old if isinstance(old, dict) else {}
        new_d = new if isinstance(new, dict) else {}
        if shape.atomic or (not old_d and not new_d):
            _leaf(old, new, path, out)
            return
        for name in dict.fromkeys([*old_d, *new_d]):
            _compare(old_d.get(name, _MISSING), new_d.get(name, _MISSING), child(shape, name),
                     path + ("f:" + name,), out)
    elif isinstance(present, list) and (old in (_MISSING, None) or isinstance(old, list)) and \
            (new in (_MISSING, None) or isinstance(new, list)):
        old_l = old if isinstance(old, list) else []
        new_l = new if isinstance(new, list) else []
        old_e, new_e = list_elements(shape, old_l), list_elements(shape, new_l)
        if old_e is None or new_e is None or (not old_l and not new_l):
            _leaf(old, new, path, out)
            return
        old_items, new_items = dict(zip(old_e, old_l)), dict(zip(new_e, new_l))
        inner = item(shape)
        for element in dict.fromkeys([*old_e, *new_e]):
            _compare(old_items.get(element, _MISSING), new_items.get(element, _MISSING),
                     FREE if shape.is_set else inner, path + (element,), out)
    else:
        _leaf(old, new, path, out)
        return
    if path and old is _MISSING:
        out.added.add(path)
    elif path and new is _MISSING:
        out.removed.add(path)


def creation_tree(obj: Obj, zero: Obj, shape: Shape) -> dict[str, Any]:
    """``encode(compare(zero, obj, shape).changed)`` for a new object, built in one pass: creates are the hot
    path. ``zero`` holds only empty values (the structs an empty object has)."""
    return _creation(obj, zero, shape, False)


def _creation(value: dict[str, Any], zero: Any, shape: Shape, member: bool) -> dict[str, Any]:
    """The tree of ``value``'s fields that differ from ``zero``'s; ``member``: the value itself is new (its node
    starts with ``"."``). Leaves are the common case and take the shortest path."""
    tree: dict[str, Any] = {MEMBER: {}} if member else {}
    zero_dict = zero if type(zero) is dict else _NO_FIELDS
    for name in sorted(value) if len(value) > 1 else value:
        sub = value[name]
        kind = type(sub)
        if kind is dict:
            if sub:
                sub_shape = child(shape, name)
                if not sub_shape.atomic:
                    was = zero_dict.get(name, _MISSING)
                    node = _creation(sub, was, sub_shape, was is _MISSING)
                    if node:
                        tree["f:" + name] = node
                    continue
        elif kind is list:
            if sub:
                sub_shape = child(shape, name)
                if sub_shape.keys or sub_shape.is_set:
                    elements = list_elements(sub_shape, sub)
                    if elements is not None:
                        tree["f:" + name] = _creation_list(sub, elements, sub_shape,
                                                           zero_dict.get(name, _MISSING) is _MISSING)
                        continue
        if name in zero_dict and zero_dict[name] == sub:
            continue
        tree["f:" + name] = {}
    return tree


def _creation_list(items: list[Any], elements: list[str], shape: Shape, member: bool) -> dict[str, Any]:
    node: dict[str, Any] = {MEMBER: {}} if member else {}
    inner = FREE if shape.is_set else item(shape)
    granular = not inner.atomic
    pairs = sorted(zip(elements, items), key=_first) if len(items) > 1 else zip(elements, items)
    for element, entry in pairs:
        if granular and type(entry) is dict and entry:
            node[element] = _creation(entry, _MISSING, inner, True)
        else:
            node[element] = {}
    return node


def _first(pair: tuple[str, Any]) -> str:
    return pair[0]


_NO_FIELDS: dict[str, Any] = {}


def _leaf(old: Any, new: Any, path: Path, out: Comparison) -> None:
    if not path:
        return
    if old is _MISSING:
        out.added.add(path)
    elif new is _MISSING:
        out.removed.add(path)
    elif old != new:
        out.modified.add(path)


# -- set algebra --------------------------------------------------------------------------------------------
def with_named_parents(paths: Iterable[Path]) -> FieldSet:
    """The set plus every field (``f:``) above one of its paths: owning ``spec.replicas`` also means owning
    ``spec`` when deciding what to remove."""
    out: FieldSet = set()
    for path in paths:
        out.add(path)
        for end in range(len(path) - 1, 0, -1):
            if path[end - 1].startswith("f:"):
                out.add(path[:end])
    return out


def under(paths: Iterable[Path], prefix: Path) -> FieldSet:
    n = len(prefix)
    return {p for p in paths if p[:n] == prefix}


def remove(obj: Any, paths: FieldSet, shape: Shape) -> Any:
    """A copy of ``obj`` without the fields in ``paths`` (a path in the set removes its whole value)."""
    if not paths:
        return copy.deepcopy(obj)
    return _remove(obj, encode(paths), shape)


def _remove(value: Any, tree: dict[str, Any], shape: Shape) -> Any:
    if isinstance(value, dict) and not shape.atomic:
        out: dict[str, Any] = {}
        for name, sub in value.items():
            node = tree.get("f:" + name)
            if node is None:
                out[name] = copy.deepcopy(sub)
            elif not _is_member(node):
                out[name] = _remove(sub, node, child(shape, name))
        return out
    if isinstance(value, list):
        elements = list_elements(shape, value)
        if elements is None:
            return copy.deepcopy(value)
        inner = item(shape)
        kept = []
        for element, sub in zip(elements, value):
            node = tree.get(element)
            if node is None:
                kept.append(copy.deepcopy(sub))
            elif not _is_member(node):
                kept.append(_remove(sub, node, FREE if shape.is_set else inner))
        return kept
    return copy.deepcopy(value)


def _is_member(node: dict[str, Any]) -> bool:
    return not node or MEMBER in node


# -- fieldsV1 -----------------------------------------------------------------------------------------------
def encode(paths: Iterable[Path]) -> dict[str, Any]:
    """The ``fieldsV1`` tree of a set."""
    root: dict[str, Any] = {}
    members: list[dict[str, Any]] = []
    for path in sorted(paths):
        node = root
        for element in path:
            node = node.setdefault(element, {})
        members.append(node)
    for node in members:
        if node:
            node[MEMBER] = {}
    return _sorted_tree(root)


def _sorted_tree(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if MEMBER in node and len(node) > 1:
        out[MEMBER] = {}
    for key in sorted(k for k in node if k != MEMBER):
        out[key] = _sorted_tree(node[key])
    return out


def decode(tree: Any) -> FieldSet:
    """The set a ``fieldsV1`` tree holds; ValueError when it is not one."""
    out: FieldSet = set()
    _decode(tree, (), out)
    return out


def _decode(node: Any, path: Path, out: FieldSet) -> None:
    if not isinstance(node, dict):
        raise ValueError(f"fieldsV1 must hold objects, found {type(node).__name__}")
    if path and (not node or MEMBER in node):
        out.add(path)
    for element, sub in node.items():
        if element == MEMBER:
            continue
        if not isinstance(element, str) or element[:2] not in ("f:", "k:", "v:", "i:"):
            raise ValueError(f"invalid path element {element!r}")
        _decode(sub, path + (element,), out)


def tree_holds_any(tree: dict[str, Any], paths: Iterable[Path]) -> bool:
    """Whether the set a (valid) ``fieldsV1`` tree holds has any of ``paths``, without decoding the tree."""
    for path in paths:
        node: Any = tree
        for element in path:
            node = node.get(element) if type(node) is dict else None
            if node is None:
                break
        else:
            if path and type(node) is dict and (not node or MEMBER in node):
                return True
    return False


def path_string(path: Path) -> str:
    """A path as Kubernetes prints it in conflicts: ``.spec.containers[name="c"].image``."""
    out = []
    for element in path:
        kind, text = element[:2], element[2:]
        if kind == "f:":
            out.append("." + text)
        elif kind == "k:":
            key = orjson.loads(text)
            out.append("[" + ",".join(f"{name}={_json(value)}" for name, value in key.items()) + "]")
        elif kind == "v:":
            out.append(f"[={text}]")
        else:
            out.append(f"[{text}]")
    return "".join(out)


# -- merging a configuration into an object -----------------------------------------------------------------
def merge(live: Any, config: Any, shape: Shape) -> Any:
    """``config`` merged into ``live`` (neither is changed): objects merge field by field (null removes), keyed
    lists and sets merge item by item keeping the order of both, everything else is replaced by ``config``."""
    if isinstance(config, dict) and isinstance(live, dict) and not shape.atomic:
        out = copy.deepcopy(live)
        for name, value in config.items():
            if value is None:
                out.pop(name, None)
            else:
                out[name] = merge(live.get(name), value, child(shape, name))
        return out
    if isinstance(config, list) and isinstance(live, list):
        live_e, config_e = list_elements(shape, live), list_elements(shape, config)
        if live_e is not None and config_e is not None:
            return _merge_list(live, live_e, config, config_e, FREE if shape.is_set else item(shape))
    return _without_nulls(config)


def _merge_list(live: list[Any], live_e: list[str], config: list[Any], config_e: list[str], inner: Shape
                ) -> list[Any]:
    """Items of ``config`` in its order, merged with the live item of the same key; live items the config does
    not name stay where they were relative to the items around them."""
    live_items = dict(zip(live_e, live))
    config_items = dict(zip(config_e, config))
    out: list[Any] = []
    li = ci = 0
    done: set[str] = set()
    while li < len(live_e) or ci < len(config_e):
        if li < len(live_e):
            element = live_e[li]
            if element not in config_items:
                out.append(copy.deepcopy(live[li]))
                li += 1
                continue
            if element in done:
                li += 1
                continue
        if ci < len(config_e):
            element = config_e[ci]
            done.add(element)
            out.append(merge(live_items.get(element), config_items[element], inner)
                       if element in live_items else _without_nulls(config_items[element]))
            ci += 1
        else:
            li += 1
    return out


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value
