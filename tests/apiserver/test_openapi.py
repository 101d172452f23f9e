"""OpenAPI v3: the root, per-group-version documents kubectl reads for field validation and `explain`."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from minik.api import schema
from minik.api.resources import REGISTRY
from minik.apiserver.openapi import OpenApi

SERVED = {"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/coordination.k8s.io/v1", "apis/scheduling.k8s.io/v1",
          "apis/rbac.authorization.k8s.io/v1", "apis/authentication.k8s.io/v1", "apis/authorization.k8s.io/v1",
          "apis/admissionregistration.k8s.io/v1", "apis/apiextensions.k8s.io/v1",
          "apis/events.k8s.io/v1", "apis/node.k8s.io/v1",
          "apis/apiregistration.k8s.io/v1", "apis/certificates.k8s.io/v1", "apis/policy/v1",
          "apis/storage.k8s.io/v1"}


async def fetch(http, path: str) -> tuple[int, Any]:
    async with http.session.get(path) as response:
        return response.status, orjson.loads(await response.read())


def refs(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {value["$ref"]} if isinstance(value.get("$ref"), str) else set()
        return found.union(*(refs(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(refs(v) for v in value))
    return set()


def supports_field_validation(document: dict[str, Any], group: str, version: str, kind: str) -> bool:
    """kubectl's check: a PATCH operation tagged with the kind that lists a fieldValidation parameter."""
    for item in document["paths"].values():
        patch = item.get("patch")
        if patch and patch.get("x-kubernetes-group-version-kind") == {"group": group, "version": version,
                                                                      "kind": kind}:
            return any(p["name"] == "fieldValidation" for p in patch.get("parameters", []))
    return False


async def test_the_root_lists_every_group_version_with_a_content_hash(http) -> None:
    status, root = await fetch(http, "/openapi/v3")
    assert status == 200 and set(root["paths"]) == SERVED
    url = root["paths"]["apis/apps/v1"]["serverRelativeURL"]
    path, _, query = url.partition("?")
    assert path == "/openapi/v3/apis/apps/v1" and query.startswith("hash=")
    async with http.session.get(url) as response:
        body = await response.read()
    assert query == f"hash={hashlib.sha512(body).hexdigest().upper()}"
    _, again = await fetch(http, "/openapi/v3")
    assert again == root


async def test_every_kind_can_be_validated_by_the_server(http) -> None:
    for t in REGISTRY.types:
        path = f"/openapi/v3/apis/{t.group}/{t.version}" if t.group else f"/openapi/v3/api/{t.version}"
        status, document = await fetch(http, path)
        assert status == 200 and document["openapi"].startswith("3.")
        assert supports_field_validation(document, t.group, t.version, t.kind), t.kind


async def test_documents_hold_every_schema_they_reference(http) -> None:
    _, document = await fetch(http, "/openapi/v3/api/v1")
    schemas = document["components"]["schemas"]
    missing = {r for r in refs(document) if r.removeprefix("#/components/schemas/") not in schemas}
    assert not missing
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert refs(pod["properties"]["spec"]) == {"#/components/schemas/io.k8s.api.core.v1.PodSpec"}
    container = schemas["io.k8s.api.core.v1.Container"]
    assert container["required"] == ["name"] and container["properties"]["image"]["type"] == "string"
    assert schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]["items"] == \
        {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    port = schemas["io.k8s.api.core.v1.ServicePort"]["properties"]["targetPort"]
    assert port["allOf"] == [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}]
    meta = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]
    assert meta["labels"] == {"type": "object", "additionalProperties": {"type": "string"},
                              "description": meta["labels"]["description"]}
    assert meta["creationTimestamp"]["format"] == "date-time"


async def test_integer_fields_carry_the_width_of_their_go_type(http) -> None:
    _, document = await fetch(http, "/openapi/v3/apis/apps/v1")
    spec = document["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]
    assert (spec["replicas"]["type"], spec["replicas"]["format"]) == ("integer", "int32")
    meta = document["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]
    assert (meta["generation"]["type"], meta["generation"]["format"]) == ("integer", "int64")


async def test_patch_bodies_leave_strategic_merge_to_kubectls_compiled_merge_keys(http) -> None:
    _, document = await fetch(http, "/openapi/v3/apis/apps/v1")
    patch = document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["operationId"] == "patchAppsV1NamespacedDeployment"
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]


async def test_only_served_subresources_have_paths(http) -> None:
    _, document = await fetch(http, "/openapi/v3/api/v1")
    paths = document["paths"]
    assert "/api/v1/namespaces/{namespace}/pods/{name}/status" in paths
    assert "/api/v1/namespaces/{namespace}/pods/{name}/binding" in paths
    assert "/api/v1/namespaces/{name}/finalize" in paths
    assert not any(p.endswith(("/log", "/exec", "/eviction", "/scale")) for p in paths)


async def test_unknown_documents_and_openapi_v2_are_not_found(http) -> None:
    for path in ("/openapi/v3/apis/flowcontrol.apiserver.k8s.io/v1", "/openapi/v3/apis/apps", "/openapi/v2"):
        status, body = await fetch(http, path)
        assert status == 404 and body["reason"] == "NotFound", path


def test_schema_json_covers_every_kind_and_its_list() -> None:
    s = schema.load()
    for t in REGISTRY.types:
        assert s.type_of_kind(t.api_version, t.kind) in s.types, t.kind
        if "list" in t.verbs:  # the reviews are never listed, and have no list kind
            assert s.type_of_kind(t.api_version, t.kind_list) in s.types, t.kind_list
    assert "io.k8s.api.core.v1.Container" in s.reachable(["io.k8s.api.core.v1.Pod"])


def test_documents_are_built_without_the_kubernetes_package() -> None:
    code = ("import sys; from minik.api.resources import REGISTRY; from minik.apiserver.openapi import OpenApi; "
            "from minik.apiserver import fieldvalidation, tables; OpenApi(REGISTRY).root(); "
            "assert 'kubernetes' not in sys.modules, 'minik imported the kubernetes package'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_documents_are_deterministic() -> None:
    assert OpenApi(REGISTRY).root() == OpenApi(REGISTRY).root()


def test_schema_json_is_what_the_generator_writes() -> None:
    """scripts/gen_api_schema.py --check, when the installed client is the one the file was generated from."""
    kubernetes = pytest.importorskip("kubernetes")
    source = orjson.loads(schema.SCHEMA_FILE.read_bytes())["source"]
    if f"kubernetes {kubernetes.__version__} " not in source:
        pytest.skip(f"schema.json comes from another client version ({source})")
    script = Path(__file__).resolve().parents[2] / "scripts" / "gen_api_schema.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
