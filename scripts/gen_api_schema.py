"""Generate minik/api/schema.json: the fields of every kind minik serves, from the `kubernetes` Python package.

Each model class of the official client lists its fields (``openapi_types``: python attribute -> type such as
``List[V1Container]``, ``Dict[str, str]``, ``datetime``, ``object``) and their JSON names (``attribute_map``); its
pydantic fields carry the descriptions. This script walks the types reachable from the kinds in minik's registry
(plus the meta types the API speaks) and writes one compact JSON file, so minik never imports ``kubernetes`` at
run time. Run it again after upgrading the client or adding a kind:

    python scripts/gen_api_schema.py            # writes minik/api/schema.json
    python scripts/gen_api_schema.py --check    # exit 1 if the file is out of date

Format of the file::

    {"source": "...", "kinds": {"apps/v1/Deployment": "io.k8s.api.apps.v1.Deployment", ...},
     "types": {"io.k8s.api.apps.v1.Deployment": {"description": "...", "required": [...],
                                                  "properties": {"spec": ["@io.k8s.api.apps.v1.DeploymentSpec",
                                                                          "description"], ...}}}}

A property's type is ``string``, ``int32``, ``int64``, ``number``, ``boolean``, ``date-time``, ``byte``,
``int-or-string``, ``any`` (free-form: any JSON value, never pruned), ``@NAME`` (another type of the file),
``[]T`` (a list of T) or ``{}T`` (a map from strings to T).

The Python client says "str" for a resource quantity (a string or a number in JSON); the quantity fields come from
minik/api/protobuf_fields.json, where they are messages of their own.

The Python client says only "int" for a number; the width of its Go field (what the API server's decoder holds it
in, so what it refuses to hold) comes from minik/api/protobuf_fields.json, which scripts/gen_protobuf_fields.py
reads out of Kubernetes' Go types, and for the few fields that file lacks, from ``INT_WIDTHS``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import typing
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "minik" / "api" / "schema.json"
sys.path.insert(0, str(ROOT))

#: model classes that are no kind of their own but are spoken by the API (error bodies, delete options, binding)
EXTRA_ROOTS = ("V1Status", "V1DeleteOptions", "V1Binding")

#: types that live in apimachinery's meta/v1 package rather than in the group that first reaches them
META_TYPES = {"ObjectMeta", "ListMeta", "OwnerReference", "ManagedFieldsEntry", "LabelSelector",
              "LabelSelectorRequirement", "Condition", "Status", "StatusDetails", "StatusCause", "DeleteOptions",
              "Preconditions"}
META_PACKAGE = "io.k8s.apimachinery.pkg.apis.meta.v1"

#: core/v1 types that only a kind of another group reaches (a StatefulSet's volumeClaimTemplates)
CORE_TYPES = {"PersistentVolumeClaim", "PersistentVolumeClaimStatus", "PersistentVolumeClaimCondition",
              "ModifyVolumeStatus"}

#: model classes whose name is not ``V1`` + kind
MODEL_NAMES = {("", "Event"): "CoreV1Event", ("events.k8s.io", "Event"): "EventsV1Event"}

#: the Go width of integer fields that minik/api/protobuf_fields.json does not have: meta types that never travel
#: as protobuf, and fields newer than the release it was generated from (user IDs are int64 as runAsUser is)
INT_WIDTHS = {
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta", "remainingItemCount"): "int64",
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Status", "code"): "int32",
    ("io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails", "retryAfterSeconds"): "int32",
    ("io.k8s.api.admissionregistration.v1.MutatingWebhook", "timeoutSeconds"): "int32",
    ("io.k8s.api.admissionregistration.v1.ServiceReference", "port"): "int32",
    ("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyStatus", "observedGeneration"): "int64",
    ("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "timeoutSeconds"): "int32",
    ("io.k8s.api.batch.v1.WorkloadPodGroupGangSchedulingPolicy", "minCount"): "int32",
    ("io.k8s.api.core.v1.ClusterTrustBundleProjection", "user"): "int64",
    ("io.k8s.api.core.v1.ConfigMapVolumeSource", "defaultUser"): "int64",
    ("io.k8s.api.core.v1.DownwardAPIVolumeFile", "user"): "int64",
    ("io.k8s.api.core.v1.DownwardAPIVolumeSource", "defaultUser"): "int64",
    ("io.k8s.api.core.v1.EmptyDirVolumeSource", "mode"): "int32",
    ("io.k8s.api.core.v1.EvictionResponder", "priority"): "int32",
    ("io.k8s.api.core.v1.KeyToPath", "user"): "int64",
    ("io.k8s.api.core.v1.PodCertificateProjection", "user"): "int64",
    ("io.k8s.api.core.v1.ProjectedVolumeSource", "defaultUser"): "int64",
    ("io.k8s.api.core.v1.SecretVolumeSource", "defaultUser"): "int64",
    ("io.k8s.api.core.v1.ServiceAccountTokenProjection", "user"): "int64",
    # apiextensions.k8s.io travels as protobuf in no client minik reads its widths from
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
     "observedGeneration"): "int64",
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionCondition",
     "observedGeneration"): "int64",
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceColumnDefinition", "priority"): "int32",
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ServiceReference", "port"): "int32",
    **{("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", field): "int64"
       for field in ("maxItems", "maxLength", "maxProperties", "minItems", "minLength", "minProperties")},
}
#: groups whose Go types live outside k8s.io/api (Kubernetes names their schemas after the Go package)
GROUP_PACKAGES = {"apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
                  "apiregistration.k8s.io": "io.k8s.kube-aggregator.pkg.apis.apiregistration"}
PROTOBUF_FIELDS = ROOT / "minik" / "api" / "protobuf_fields.json"

_PREFIX = re.compile(r"^(?:[A-Z][a-z]+)?V\d+(?:(?:alpha|beta)\d+)?(?=[A-Z])")
_PRIMITIVES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "datetime": "date-time",
               "date": "date-time", "bytes": "byte", "object": "any"}


def package(group: str, version: str) -> str:
    if group in GROUP_PACKAGES:
        return f"{GROUP_PACKAGES[group]}.{version}"
    short = (group or "core").split(".")[0]
    return f"io.k8s.api.{short}.{version}"


def short_name(model: str) -> str:
    return _PREFIX.sub("", model)


def first_paragraph(doc: str | None) -> str:
    text = (doc or "").split("Attributes:")[0]
    return " ".join(text.split())


class Generator:
    def __init__(self) -> None:
        from kubernetes.client import models

        self.models = models
        self.names: dict[str, str] = {}  # model class name -> schema name
        self.types: dict[str, dict[str, typing.Any]] = {}
        self.queue: deque[tuple[str, str]] = deque()
        self.go_ints, self.quantities = go_field_types()

    def name_of(self, model: str, pkg: str) -> str:
        if model not in self.names:
            short = short_name(model)
            if short in META_TYPES:
                pkg = META_PACKAGE
            elif short in CORE_TYPES:
                pkg = package("", "v1")
            self.names[model] = f"{pkg}.{short}"
            self.queue.append((model, pkg))
        return self.names[model]

    def encode(self, py_type: str, pkg: str, annotation: typing.Any) -> str:
        py_type = py_type.strip()
        for opener in ("List[", "list["):
            if py_type.startswith(opener):
                return "[]" + self.encode(py_type[len(opener):-1], pkg, None)
        for opener in ("Dict[", "dict("):
            if py_type.startswith(opener):
                value = py_type[len(opener):-1].split(",", 1)[1]
                return "{}" + self.encode(value, pkg, None)
        if py_type == "object" and annotation is not None and _is_int_or_string(annotation):
            return "int-or-string"
        if py_type in _PRIMITIVES:
            return _PRIMITIVES[py_type]
        if hasattr(self.models, py_type):
            return "@" + self.name_of(py_type, pkg)
        raise SystemExit(f"unknown python type {py_type!r}")

    def width(self, type_name: str, field: str) -> str:
        """``int32`` or ``int64``: the Go type of an integer field."""
        width = self.go_ints.get((type_name, field)) or INT_WIDTHS.get((type_name, field))
        if width is None:
            raise SystemExit(f"the Go width of the integer {type_name}.{field} is unknown: add it to INT_WIDTHS")
        return width

    def describe(self, model: str, pkg: str) -> None:
        cls = getattr(self.models, model)
        fields = getattr(cls, "model_fields", {})
        properties: dict[str, list[str]] = {}
        required: list[str] = []
        for attribute, py_type in cls.openapi_types.items():
            json_name = cls.attribute_map[attribute]
            field = fields.get(attribute)
            encoded = self.encode(py_type, pkg, getattr(field, "annotation", None))
            if encoded.lstrip("[]{}") == "integer":
                encoded = encoded.replace("integer", self.width(self.names[model], json_name))
            elif encoded.lstrip("[]{}") == "string" and (self.names[model], json_name) in self.quantities:
                encoded = encoded.replace("string", "quantity")
            properties[json_name] = [encoded, " ".join((getattr(field, "description", None) or "").split())]
            if field is not None and field.is_required():
                required.append(json_name)
        entry: dict[str, typing.Any] = {"description": first_paragraph(cls.__doc__), "properties": properties}
        if required:
            entry["required"] = required
        self.types[self.names[model]] = entry

    def drain(self) -> None:
        while self.queue:
            self.describe(*self.queue.popleft())

    def run(self) -> dict[str, typing.Any]:
        from minik.api.resources import REGISTRY

        kinds: dict[str, str] = {}
        for t in REGISTRY.types:
            model = MODEL_NAMES.get((t.group, t.kind), "V1" + t.kind)
            if t.version != "v1" or not hasattr(self.models, model):
                raise SystemExit(f"no model class {model} for {t.api_version} {t.kind}")
            pkg = package(t.group, t.version)
            kinds[f"{t.api_version}/{t.kind}"] = self.name_of(model, pkg)
            if hasattr(self.models, model + "List"):
                kinds[f"{t.api_version}/{t.kind}List"] = self.name_of(model + "List", pkg)
            self.drain()  # every type a kind reaches first belongs to the kind's group
        for model in EXTRA_ROOTS:
            self.name_of(model, package("", "v1"))
        self.drain()
        import kubernetes

        return {"source": f"scripts/gen_api_schema.py from kubernetes {kubernetes.__version__} (Python client)",
                "kinds": dict(sorted(kinds.items())), "types": dict(sorted(self.types.items()))}


QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"


def go_field_types() -> tuple[dict[tuple[str, str], str], set[tuple[str, str]]]:
    """From protobuf_fields.json: (schema type name, JSON field) -> ``int32``/``int64`` for every integer field, and
    the (schema type name, JSON field) of every resource quantity (alone, or the values of a list or map)."""
    document = json.loads(PROTOBUF_FIELDS.read_text())
    out: dict[tuple[str, str], str] = {}
    quantities: set[tuple[str, str]] = set()
    for message, fields in document["messages"].items():
        type_name = "io." + message.replace("k8s.io.", "k8s.", 1) if message.startswith("k8s.io.") else message
        type_name = type_name.replace(".kube_aggregator.", ".kube-aggregator.")  # Go's package path, OpenAPI's name
        for json_name, go_type, _shape in fields.values():
            if go_type in ("int32", "int64"):
                out[(type_name, json_name)] = go_type
            elif go_type == QUANTITY:
                quantities.add((type_name, json_name))
    return out, quantities


def _is_int_or_string(annotation: typing.Any) -> bool:
    args = {a for a in _flatten(annotation) if a is not type(None)}
    return args == {int, str}


def _flatten(annotation: typing.Any) -> list[typing.Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _flatten(typing.get_args(annotation)[0])
    if origin is typing.Union:
        return [x for a in typing.get_args(annotation) for x in _flatten(a)]
    return [annotation]


def render(document: dict[str, typing.Any]) -> str:
    """Compact JSON with one type per line, so a regenerated file diffs readably."""
    def dump(value: typing.Any) -> str:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    types = ",\n".join(f"{dump(name)}:{dump(entry)}" for name, entry in document["types"].items())
    return (f'{{"source":{dump(document["source"])},\n"kinds":{dump(document["kinds"])},\n'
            f'"types":{{\n{types}\n}}}}\n')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is out of date")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    from generated import write_or_check  # beside this script

    return write_or_check(args.out, render(Generator().run()), args.check, "scripts/gen_api_schema.py")


if __name__ == "__main__":
    sys.exit(main())
