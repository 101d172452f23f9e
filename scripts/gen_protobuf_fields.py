"""Generate minik/api/protobuf_fields.json: the wire layout of every message minik decodes from protobuf bodies.

Real kubectl's typed clients send request bodies as ``application/vnd.kubernetes.protobuf``. Decoding them needs each
message's field numbers and types, which are facts of the wire format published in Kubernetes' own definitions:
the ``generated.proto`` files of k8s.io/api and k8s.io/apimachinery, and the struct tags of the Go types beside
them (``json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"``). The .proto files give the numbers and
types; the Go struct tags give what the .proto cannot: the JSON name (embedded structs such as a Volume's
VolumeSource are inlined in JSON), and whether the field is a pointer (a pointer's zero value is meaningful, so it
is kept; a plain field is always written on the wire, so its zero value means "unset" and is dropped).

The checkouts are NOT part of this project and nothing of them is committed; only the table derived from them is.
To regenerate, put checkouts of kubernetes/api, kubernetes/apimachinery and kubernetes/kube-aggregator (same release;
only its pkg/apis/apiregistration is needed) anywhere and run:

    python scripts/gen_protobuf_fields.py /path/to/checkouts --release v0.36.3   # writes protobuf_fields.json
    python scripts/gen_protobuf_fields.py /path/to/checkouts --release v0.36.3 --check   # exit 1 if out of date

(``--release`` names the tag of the checkouts, recorded in the file.) The committed table was made from the
v0.36.3 tags (Kubernetes 1.36.3); field numbers never change between releases, newer ones only add fields.

The directory is searched for ``generated.proto`` files; the ``*.go`` files next to each are read for struct tags.

Format of the file::

    {"source": "...",
     "kinds": {"apps/v1/Deployment": "k8s.io.api.apps.v1.Deployment", ...},
     "messages": {"k8s.io.api.apps.v1.DeploymentSpec": {"1": ["replicas", "int32", "?"], ...}, ...}}

A field is ``[json name, type, mode]``: the type is a scalar (``string``, ``int32``, ``int64``, ``bool``,
``bytes``, ``double``, ``float``, ...) or a message's full name; the mode is ``""`` (a plain field: its zero value
means unset), ``"?"`` (a pointer: present means set, even to zero), ``"[]"`` (repeated) or ``"{}"`` (a map from
strings, the type being the value's). An empty JSON name means the message is inlined into its parent.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "minik" / "api" / "protobuf_fields.json"
sys.path.insert(0, str(ROOT))

META = "k8s.io.apimachinery.pkg.apis.meta.v1"
AUTOSCALING = "k8s.io.api.autoscaling.v1"
CORE = "k8s.io.api.core.v1"

#: kinds spoken in request bodies that are not resources of the registry: (apiVersion, kind, message)
EXTRA_KINDS = (
    ("policy/v1", "Eviction", "k8s.io.api.policy.v1.Eviction"),
    ("v1", "Binding", f"{CORE}.Binding"),
    ("autoscaling/v1", "Scale", f"{AUTOSCALING}.Scale"),
    ("meta.k8s.io/v1", "DeleteOptions", f"{META}.DeleteOptions"),
    ("authentication.k8s.io/v1", "TokenRequest", "k8s.io.api.authentication.v1.TokenRequest"),
)

#: groups whose Go types live outside k8s.io/api (their checkouts go in the directory too: kubernetes/kube-aggregator
#: for apiregistration.k8s.io)
GROUP_PACKAGES = {"apiregistration.k8s.io": "k8s.io.kube_aggregator.pkg.apis.apiregistration"}
#: groups served as JSON only: a CustomResourceDefinition's schema holds JSON values (defaults, enums, examples)
#: that its protobuf form carries as raw JSON, which minik.apiserver.protobuf does not encode
JSON_ONLY_GROUPS = {"apiextensions.k8s.io"}

#: messages with their own JSON form, decoded by minik.apiserver.protobuf itself (their fields are still listed)
SPECIAL = {f"{META}.Time", f"{META}.MicroTime", f"{META}.Duration", f"{META}.FieldsV1",
           "k8s.io.apimachinery.pkg.api.resource.Quantity", "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
           "k8s.io.apimachinery.pkg.runtime.RawExtension", "k8s.io.api.authentication.v1.ExtraValue",
           "k8s.io.api.authorization.v1.ExtraValue", "k8s.io.api.certificates.v1.ExtraValue"}

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.M)
_MESSAGE = re.compile(r"\bmessage\s+(\w+)\s*\{([^{}]*)\}", re.S)
_FIELD = re.compile(r"^\s*(optional|repeated|required)?\s*(map\s*<\s*(\w+)\s*,\s*([\w.]+)\s*>|[\w.]+)\s+(\w+)\s*="
                    r"\s*(\d+)", re.M)
_STRUCT = re.compile(r"^type\s+(\w+)\s+struct\s*\{\n(.*?)^\}", re.S | re.M)
_TAG = re.compile(r'(\w+):"([^"]*)"')


@dataclass
class ProtoField:
    name: str
    number: int
    type: str
    label: str
    map_key: str | None = None


@dataclass
class Message:
    name: str
    fields: list[ProtoField] = field(default_factory=list)


@dataclass(frozen=True)
class GoField:
    json: str
    pointer: bool


def parse_proto(text: str) -> dict[str, Message]:
    """The messages of one proto2 file (k8s files have no nested messages, enums or oneofs)."""
    text = _COMMENT.sub("", text)
    package = _PACKAGE.search(text)
    if package is None:
        raise SystemExit("a .proto file without a package")
    out: dict[str, Message] = {}
    for match in _MESSAGE.finditer(text):
        message = Message(f"{package.group(1)}.{match.group(1)}")
        for f in _FIELD.finditer(match.group(2)):
            label, whole, key, value, name, number = f.groups()
            if key is not None:
                message.fields.append(ProtoField(name, int(number), value, "map", key))
            else:
                message.fields.append(ProtoField(name, int(number), whole, label or "optional"))
        out[message.name] = message
    return out


def resolve_type(type_name: str, package: str, known: dict[str, Message]) -> str:
    """A field's type as a full message name (or the scalar it is)."""
    if type_name.startswith("."):
        return type_name[1:]
    if f"{package}.{type_name}" in known:
        return f"{package}.{type_name}"
    return type_name


def parse_go_structs(text: str) -> dict[str, dict[int, GoField]]:
    """struct name -> protobuf field number -> (json name, pointer?) from the struct tags of one Go file."""
    out: dict[str, dict[int, GoField]] = {}
    for match in _STRUCT.finditer(text):
        fields: dict[int, GoField] = {}
        for line in match.group(2).splitlines():
            line = line.split("//", 1)[0] if "`" not in line else line
            if "`" not in line:
                continue
            head, _, rest = line.partition("`")
            tags = dict(_TAG.findall(rest.rpartition("`")[0]))
            if "protobuf" not in tags or tags["protobuf"] == "-":
                continue
            parts = head.split()
            go_type = parts[0] if len(parts) == 1 else " ".join(parts[1:])
            number = int(tags["protobuf"].split(",")[1])
            json_name = tags.get("json", "").split(",")[0]
            if len(parts) == 1 and "json" not in tags:
                json_name = ""  # an embedded struct without a json tag is inlined
            fields[number] = GoField(json_name, go_type.startswith("*"))
        out[match.group(1)] = fields
    return out


class Generator:
    def __init__(self, checkouts: Path) -> None:
        self.messages: dict[str, Message] = {}
        self.packages: dict[str, str] = {}  # message name -> its package
        self.go: dict[str, dict[int, GoField]] = {}  # message name -> field number -> Go facts
        protos = sorted(checkouts.rglob("generated.proto"))
        if not protos:
            raise SystemExit(f"no generated.proto under {checkouts}")
        for proto in protos:
            parsed = parse_proto(proto.read_text())
            package = next(iter(parsed)).rpartition(".")[0] if parsed else ""
            self.messages.update(parsed)
            structs: dict[str, dict[int, GoField]] = {}
            for go_file in sorted(proto.parent.glob("*.go")):
                if not go_file.name.endswith("_test.go") and not go_file.name.startswith(("zz_", "generated")):
                    structs.update(parse_go_structs(go_file.read_text()))
            for name in parsed:
                self.packages[name] = package
                short = name.rpartition(".")[2]
                if short in structs:
                    self.go[name] = structs[short]

    def entry(self, message: Message) -> dict[str, list[str]]:
        package = self.packages[message.name]
        go = self.go.get(message.name, {})
        out: dict[str, list[str]] = {}
        for f in message.fields:
            facts = go.get(f.number)
            if facts is None and message.name not in SPECIAL:
                raise SystemExit(f"{message.name}.{f.name}: no Go struct tag with protobuf field {f.number} beside "
                                 "its .proto (are the Go files of the checkout there?)")
            json_name = facts.json if facts is not None else f.name
            if f.label == "map":
                if f.map_key != "string":
                    raise SystemExit(f"{message.name}.{f.name}: a map keyed by {f.map_key}")
                mode = "{}"
            elif f.label == "repeated":
                mode = "[]"
            else:
                mode = "?" if facts is not None and facts.pointer else ""
            out[str(f.number)] = [json_name, resolve_type(f.type, package, self.messages), mode]
        return out

    def run(self, roots: dict[str, str], release: str) -> dict[str, Any]:
        table: dict[str, dict[str, list[str]]] = {}
        queue = deque(roots.values())
        while queue:
            name = queue.popleft()
            if name in table:
                continue
            message = self.messages.get(name)
            if message is None:
                raise SystemExit(f"no message {name} in the checkouts")
            table[name] = self.entry(message)
            if name in SPECIAL:
                continue
            for _json, type_name, _mode in table[name].values():
                if "." in type_name and type_name not in table:
                    queue.append(type_name)
        return {"source": "scripts/gen_protobuf_fields.py from the generated.proto files and Go struct tags of "
                          f"k8s.io/api and k8s.io/apimachinery {release}",
                "kinds": dict(sorted(roots.items())), "messages": dict(sorted(table.items()))}


def roots() -> dict[str, str]:
    """Every kind of minik's registry, plus the other kinds request bodies carry."""
    from minik.api.resources import REGISTRY

    out: dict[str, str] = {}
    for t in REGISTRY.types:
        if t.group in JSON_ONLY_GROUPS:
            continue
        package = GROUP_PACKAGES.get(t.group) or f"k8s.io.api.{(t.group or 'core').split('.')[0]}"
        out[f"{t.api_version}/{t.kind}"] = f"{package}.{t.version}.{t.kind}"
    for api_version, kind, message in EXTRA_KINDS:
        out[f"{api_version}/{kind}"] = message
    return out


def render(document: dict[str, Any]) -> str:
    """Compact JSON with one message per line, so a regenerated file diffs readably."""
    def dump(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    messages = ",\n".join(f"{dump(name)}:{dump(entry)}" for name, entry in document["messages"].items())
    return (f'{{"source":{dump(document["source"])},\n"kinds":{dump(document["kinds"])},\n'
            f'"messages":{{\n{messages}\n}}}}\n')


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("checkouts", type=Path, help="a directory holding kubernetes/api and apimachinery checkouts")
    parser.add_argument("--release", required=True, help="the tag the checkouts are at, such as v0.36.3")
    parser.add_argument("--check", action="store_true", help="fail if the file is out of date")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    from generated import write_or_check  # beside this script

    return write_or_check(args.out, render(Generator(args.checkouts).run(roots(), args.release)), args.check, "scripts/gen_protobuf_fields.py")


if __name__ == "__main__":
    sys.exit(main())
