"""scripts/gen_protobuf_fields.py on a small checkout written here: numbers and types from the .proto, JSON names,
inlined structs and pointers from the Go struct tags beside it."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gen_protobuf_fields.py"

PROTO = """
syntax = "proto2";
package k8s.io.api.demo.v1;
import "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto";

// A thing with a comment { that has braces }.
message Widget {
  optional .k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta metadata = 1;
  optional WidgetSpec spec = 2;
}

message WidgetSpec {
  optional int32 replicas = 1;
  optional int32 minReadySeconds = 2;
  repeated string tags = 3;
  map<string, bytes> blobs = 4;
  optional Source source = 5;
}

message Source {
  optional string path = 1;
}
"""

GO = """
package v1

type Widget struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Spec WidgetSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
}

type WidgetSpec struct {
	// replicas is a pointer: its zero is meaningful
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`
	MinReadySeconds int32 `json:"minReadySeconds,omitempty" protobuf:"varint,2,opt,name=minReadySeconds"`
	Tags []string `json:"tags,omitempty" protobuf:"bytes,3,rep,name=tags"`
	Blobs map[string][]byte `json:"blobs,omitempty" protobuf:"bytes,4,rep,name=blobs"`
	Source `json:",inline" protobuf:"bytes,5,opt,name=source"`
}

type Source struct {
	Path string `json:"path" protobuf:"bytes,1,opt,name=path"`
}
"""

META_PROTO = """
syntax = "proto2";
package k8s.io.apimachinery.pkg.apis.meta.v1;
message ObjectMeta {
  optional string name = 1;
}
"""

META_GO = """
package v1

type ObjectMeta struct {
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
}
"""


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protobuf_fields", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the script loads
    spec.loader.exec_module(module)
    return module


def checkout(root: Path, with_meta_go: bool = True) -> None:
    demo = root / "api" / "demo" / "v1"
    meta = root / "apimachinery" / "pkg" / "apis" / "meta" / "v1"
    demo.mkdir(parents=True)
    meta.mkdir(parents=True)
    (demo / "generated.proto").write_text(PROTO)
    (demo / "types.go").write_text(GO)
    (meta / "generated.proto").write_text(META_PROTO)
    if with_meta_go:
        (meta / "types.go").write_text(META_GO)


def test_the_generator_reads_numbers_from_protos_and_names_and_pointers_from_go_tags(tmp_path: Path) -> None:
    checkout(tmp_path)
    script = load_script()
    document = script.Generator(tmp_path).run({"demo/v1/Widget": "k8s.io.api.demo.v1.Widget"}, "v0.0.1")
    messages = document["messages"]
    assert messages["k8s.io.api.demo.v1.Widget"] == {
        "1": ["metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", ""],
        "2": ["spec", "k8s.io.api.demo.v1.WidgetSpec", ""]}
    assert messages["k8s.io.api.demo.v1.WidgetSpec"] == {
        "1": ["replicas", "int32", "?"], "2": ["minReadySeconds", "int32", ""], "3": ["tags", "string", "[]"],
        "4": ["blobs", "bytes", "{}"], "5": ["", "k8s.io.api.demo.v1.Source", ""]}
    assert messages["k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"] == {"1": ["name", "string", ""]}
    assert "v0.0.1" in document["source"]
    json.loads(script.render(document))  # the file it writes is JSON


def test_the_generator_refuses_a_field_without_its_go_struct_tag(tmp_path: Path) -> None:
    checkout(tmp_path, with_meta_go=False)
    with pytest.raises(SystemExit, match="ObjectMeta.name: no Go struct tag"):
        load_script().Generator(tmp_path).run({"demo/v1/Widget": "k8s.io.api.demo.v1.Widget"}, "v0.0.1")
