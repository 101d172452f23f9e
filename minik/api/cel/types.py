"""The object types Kubernetes declares for CEL, as protobuf messages: this runtime's type checker knows struct
types only as messages. They serve the type check alone (``request.foo`` is ``undefined field 'foo'``, as in
Kubernetes); the values are evaluated as the JSON maps they are, as Kubernetes evaluates them (unstructured).

A field's type is written as CEL spells it: ``string``, ``bool``, ``int``, ``uint``, ``double``, ``bytes``,
``timestamp``, ``duration``, ``dyn``, ``list(T)``, ``map(K, V)`` or a message's full name. Protobuf cannot nest a
list or a map directly in another; such an element is declared as ``google.protobuf.ListValue`` or ``Struct``
(CEL's ``list(dyn)``, ``map(string, dyn)``), so the check is looser there than Kubernetes'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, struct_pb2, timestamp_pb2

F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {"string": F.TYPE_STRING, "bool": F.TYPE_BOOL, "int": F.TYPE_INT64, "uint": F.TYPE_UINT64,
            "double": F.TYPE_DOUBLE, "bytes": F.TYPE_BYTES}
_WELL_KNOWN = {"timestamp": ".google.protobuf.Timestamp", "duration": ".google.protobuf.Duration",
               "dyn": ".google.protobuf.Value"}
_MAP_KEYS = frozenset(("string", "int", "uint", "bool"))
_WELL_KNOWN_FILES = (struct_pb2, timestamp_pb2, duration_pb2)

Fields = Sequence[tuple[str, str]]


def split_type(spec: str) -> tuple[str, list[str]]:
    """``map(string, list(int))`` -> (``map``, [``string``, ``list(int)``])."""
    if "(" not in spec:
        return spec.strip(), []
    name, _, rest = spec.partition("(")
    args, depth, start = [], 0, 0
    inner = rest[:rest.rindex(")")]
    for i, ch in enumerate(inner):
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(inner[start:i].strip())
            start = i + 1
    args.append(inner[start:].strip())
    return name.strip(), args


def _element(spec: str) -> tuple[int, str]:
    """(protobuf type, message name) of one value of ``spec``, where a list or a map cannot nest."""
    name, args = split_type(spec)
    if name in _SCALARS:
        return _SCALARS[name], ""
    if name in _WELL_KNOWN:
        return F.TYPE_MESSAGE, _WELL_KNOWN[name]
    if name == "list":
        return F.TYPE_MESSAGE, ".google.protobuf.ListValue"
    if name == "map":
        return F.TYPE_MESSAGE, ".google.protobuf.Struct" if args[:1] == ["string"] else _WELL_KNOWN["dyn"]
    if "." in name:
        return F.TYPE_MESSAGE, "." + name
    return F.TYPE_MESSAGE, _WELL_KNOWN["dyn"]


def _field(container: Any, name: str, number: int, label: int, element: tuple[int, str]) -> None:
    kind, type_name = element
    added = container.field.add(name=name, number=number, label=label, type=kind)
    if type_name:
        added.type_name = type_name


def _add_field(message: Any, package: str, field: str, number: int, spec: str) -> None:
    name, args = split_type(spec)
    if name == "list" and len(args) == 1:
        _field(message, field, number, F.LABEL_REPEATED, _element(args[0]))
        return
    if name == "map" and len(args) == 2 and args[0] in _MAP_KEYS:
        entry = message.nested_type.add(name=field[:1].upper() + field[1:] + "Entry")
        entry.options.map_entry = True
        _field(entry, "key", 1, F.LABEL_OPTIONAL, (_SCALARS[args[0]], ""))
        _field(entry, "value", 2, F.LABEL_OPTIONAL, _element(args[1]))
        _field(message, field, number, F.LABEL_REPEATED, (F.TYPE_MESSAGE, f".{package}.{message.name}.{entry.name}"))
        return
    _field(message, field, number, F.LABEL_OPTIONAL, _element(spec))


def proto_file(name: str, package: str, messages: dict[str, Fields]) -> Any:
    """A .proto file (as a FileDescriptorProto) of ``messages``: message name -> its (field, type) pairs."""
    file = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax="proto3")
    file.dependency.extend(module.DESCRIPTOR.name for module in _WELL_KNOWN_FILES)
    for message_name, fields in messages.items():
        message = file.message_type.add(name=message_name)
        for number, (field, spec) in enumerate(fields, 1):
            _add_field(message, package, field, number, spec)
    return file


def pool(*files: Any) -> Any:
    """A descriptor pool with the well-known types, Kubernetes' types below and ``files``."""
    found = descriptor_pool.DescriptorPool()
    for module in _WELL_KNOWN_FILES:
        proto = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(proto)
        found.Add(proto)
    for file in (KUBERNETES, AUTHORIZATION, *files):
        found.Add(file)
    return found


def spec_of(name: str) -> str:
    """The type this runtime names ``LIST<MAP<STRING, INT>>`` as a field type (``list(map(string, int))``); what
    a field cannot be (a message, a type, an optional) is ``dyn``, as Kubernetes declares it."""
    base, args = split_type(name.replace("<", "(").replace(">", ")"))
    base = base.lower()
    if base in _SCALARS or base in ("timestamp", "duration"):
        return base
    if base == "list" and len(args) == 1:
        return f"list({spec_of(args[0])})"
    if base == "map" and len(args) == 2:
        return f"map({spec_of(args[0])}, {spec_of(args[1])})"
    return "dyn"


# -- Kubernetes' declarations (k8s.io/apiserver/pkg/admission/plugin/cel: BuildRequestType, BuildNamespaceType) --
_GVK = (("group", "string"), ("version", "string"), ("kind", "string"))
_GVR = (("group", "string"), ("version", "string"), ("resource", "string"))

KUBERNETES = proto_file("minik/cel/kubernetes.proto", "kubernetes", {
    "GroupVersionKind": _GVK,
    "GroupVersionResource": _GVR,
    "UserInfo": (("username", "string"), ("uid", "string"), ("groups", "list(string)"),
                 ("extra", "map(string, list(string))")),
    # the request as expressions see it: no uid, and object and oldObject are variables of their own
    "AdmissionRequest": (("kind", "kubernetes.GroupVersionKind"), ("resource", "kubernetes.GroupVersionResource"),
                         ("subResource", "string"), ("requestKind", "kubernetes.GroupVersionKind"),
                         ("requestResource", "kubernetes.GroupVersionResource"), ("requestSubResource", "string"),
                         ("name", "string"), ("namespace", "string"), ("operation", "string"),
                         ("userInfo", "kubernetes.UserInfo"), ("dryRun", "bool"), ("options", "dyn")),
    "NamespaceSpec": (("finalizers", "list(string)"),),
    "NamespaceCondition": (("status", "string"), ("type", "string"), ("lastTransitionTime", "timestamp"),
                           ("message", "string"), ("reason", "string")),
    "NamespaceStatus": (("conditions", "list(kubernetes.NamespaceCondition)"), ("phase", "string")),
    # Kubernetes' declaration, ``UID`` included (the value has ``uid``, as the JSON of a Namespace has)
    "NamespaceMetadata": (("name", "string"), ("generateName", "string"), ("namespace", "string"),
                          ("labels", "map(string, string)"), ("annotations", "map(string, string)"),
                          ("UID", "string"), ("creationTimestamp", "timestamp"),
                          ("deletionGracePeriodSeconds", "int"), ("deletionTimestamp", "timestamp"),
                          ("generation", "int"), ("resourceVersion", "string"), ("finalizers", "list(string)")),
    "Namespace": (("metadata", "kubernetes.NamespaceMetadata"), ("spec", "kubernetes.NamespaceSpec"),
                  ("status", "kubernetes.NamespaceStatus")),
})

#: the authorizer library's types: opaque (no fields), told apart by name
AUTHORIZATION = proto_file("minik/cel/kubernetes_authorization.proto", "kubernetes.authorization", {
    name: () for name in ("Authorizer", "PathCheck", "GroupCheck", "ResourceCheck", "Decision")})

REQUEST = "kubernetes.AdmissionRequest"
NAMESPACE = "kubernetes.Namespace"
#: the type of ``variables`` in a policy's expressions (Kubernetes' composition environment)
VARIABLES = "kubernetes.variables"


def variables_file(fields: Fields) -> Any:
    """The file declaring ``kubernetes.variables`` with a field per variable (name, type)."""
    return proto_file("minik/cel/kubernetes_variables.proto", "kubernetes", {"variables": fields})
