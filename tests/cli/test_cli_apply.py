"""`minik apply -f`: created, unchanged, configured; manifests from files, directories and stdin; errors that
name the file, the document and the field; and agreement with kubectl's own client-side apply."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest
from cli_helpers import Invoke, kubectl

from minik.cli.apply import LAST_APPLIED, three_way_patch
from minik.client import Client

DEPLOYMENT = dedent("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
      labels: {app: web, tier: front}
    spec:
      replicas: 2
      selector:
        matchLabels: {app: web}
      template:
        metadata:
          labels: {app: web}
        spec:
          containers:
          - name: c
            image: nginx:1
            env:
            - {name: A, value: "1"}
            - {name: B, value: "2"}
    """)

CONFIGMAP = dedent("""\
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: settings
    data:
      mode: fast
    """)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def test_apply_creates_then_is_unchanged_then_configured_after_an_edit(minik: Invoke, client: Client,
                                                                             tmp_path: Path) -> None:
    manifest = write(tmp_path / "web.yaml", DEPLOYMENT + "---\n" + CONFIGMAP)

    first = await minik("apply", "-f", str(manifest))
    assert first.exit_code == 0, first.stderr
    assert first.stdout.splitlines() == ["deployment.apps/web created", "configmap/settings created"]
    created = await client.get("deployments", "web", "default")
    applied = json.loads(created["metadata"]["annotations"][LAST_APPLIED])
    assert applied["metadata"] == {"annotations": {}, "labels": {"app": "web", "tier": "front"}, "name": "web",
                                   "namespace": "default"}

    again = await minik("apply", "-f", str(manifest))
    assert again.stdout.splitlines() == ["deployment.apps/web unchanged", "configmap/settings unchanged"]
    assert (await client.get("deployments", "web", "default"))["metadata"]["resourceVersion"] == \
        created["metadata"]["resourceVersion"]

    edited = (DEPLOYMENT.replace("nginx:1", "nginx:2").replace('- {name: A, value: "1"}\n', "")
              .replace("tier: front", "tier: back").replace("replicas: 2", "replicas: 3"))
    write(manifest, edited + "---\n" + CONFIGMAP)
    third = await minik("apply", "-f", str(manifest))
    assert third.exit_code == 0, third.stderr
    assert third.stdout.splitlines() == ["deployment.apps/web configured", "configmap/settings unchanged"]
    live = await client.get("deployments", "web", "default")
    container = live["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nginx:2"
    assert container["env"] == [{"name": "B", "value": "2"}]  # A was removed from the file, so from the object
    assert container["imagePullPolicy"]  # a server default the file never mentioned stays
    assert live["spec"]["replicas"] == 3
    assert live["metadata"]["labels"] == {"app": "web", "tier": "back"}


async def test_a_field_removed_from_the_file_is_removed_but_fields_set_by_others_stay(minik: Invoke, client: Client,
                                                                                      tmp_path: Path) -> None:
    manifest = write(tmp_path / "cm.yaml", CONFIGMAP.replace("mode: fast", "mode: fast\n  extra: x"))
    assert (await minik("apply", "-f", str(manifest))).exit_code == 0
    await client.patch("configmaps", "settings", {"data": {"other": "kept"}}, "default")
    write(manifest, CONFIGMAP)
    result = await minik("apply", "-f", str(manifest))
    assert result.stdout.strip() == "configmap/settings configured"
    assert (await client.get("configmaps", "settings", "default"))["data"] == {"mode": "fast", "other": "kept"}


async def test_apply_reads_directories_recursively_json_lists_and_stdin(minik: Invoke, client: Client,
                                                                        tmp_path: Path) -> None:
    write(tmp_path / "m" / "a.yaml", CONFIGMAP.replace("settings", "a"))
    write(tmp_path / "m" / "notes.txt", "not a manifest")
    write(tmp_path / "m" / "sub" / "b.json", json.dumps({
        "apiVersion": "v1", "kind": "List",
        "items": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b1"}},
                  {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b2"}, "stringData": {"k": "v"}}]}))

    flat = await minik("apply", "-f", str(tmp_path / "m"))
    assert flat.stdout.splitlines() == ["configmap/a created"]
    deep = await minik("apply", "-R", "-f", str(tmp_path / "m"))
    assert deep.stdout.splitlines() == ["configmap/a unchanged", "configmap/b1 created", "secret/b2 created"]

    piped = await minik("apply", "-f", "-", "-n", "kube-public", input=CONFIGMAP.replace("settings", "c"))
    assert piped.stdout.strip() == "configmap/c created"
    assert (await client.get("configmaps", "c", "kube-public"))["data"] == {"mode": "fast"}


async def test_cluster_scoped_objects_and_namespaces_apply_in_file_order(minik: Invoke, client: Client,
                                                                         tmp_path: Path) -> None:
    manifest = write(tmp_path / "ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n"
                     + CONFIGMAP.replace("name: settings", "name: settings\n  namespace: team"))
    result = await minik("apply", "-f", str(manifest))
    assert result.stdout.splitlines() == ["namespace/team created", "configmap/settings created"]
    assert (await client.get("configmaps", "settings", "team"))["metadata"]["namespace"] == "team"


async def test_a_missing_name_names_the_file_document_and_field_and_nothing_is_applied(
        minik: Invoke, client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "manifests" / "web.yaml", CONFIGMAP + "---\n" + CONFIGMAP.replace("  name: settings\n", ""))
    result = await minik("apply", "-f", "manifests/web.yaml")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == ["error: manifests/web.yaml (document 2): metadata.name: Required value"]
    assert (await client.list("configmaps", "default"))["items"] == []


async def test_bad_yaml_and_unknown_kinds_name_the_file_and_document(minik: Invoke, tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", CONFIGMAP + "---\nkind: ConfigMap\nmetadata: {name: x\n")
    result = await minik("apply", "-f", str(bad))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {bad} (document 2): error parsing YAML: line ")

    odd = write(tmp_path / "odd.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\n"
                "kind: ConfigMap\nmetadata: {name: y}\n")
    result = await minik("apply", "-f", str(odd))
    assert result.stderr.splitlines() == [
        f'error: {odd} (document 1): kind: Invalid value: "Widget": no matches for kind "Widget" in version '
        '"example.com/v1"',
        f"error: {odd} (document 2): apiVersion: Required value"]

    missing = await minik("apply", "-f", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 1
    assert missing.stderr.strip() == f'error: the path "{tmp_path / "nope.yaml"}" does not exist'


async def test_server_errors_are_printed_as_kubectl_prints_them(minik: Invoke, tmp_path: Path) -> None:
    invalid = write(tmp_path / "pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                    "spec:\n  containers: [{name: c}]\n")
    result = await minik("apply", "-f", str(invalid))
    assert result.exit_code == 1
    assert result.stderr.strip() == 'The Pod "p" is invalid: spec.containers[0].image: Required value'

    elsewhere = write(tmp_path / "cm.yaml", CONFIGMAP.replace("name: settings", "name: s\n  namespace: nowhere"))
    result = await minik("apply", "-f", str(elsewhere))
    assert result.exit_code == 1
    assert result.stderr.startswith(f'Error from server (NotFound): error when creating "{elsewhere}": ')

    mismatch = await minik("apply", "-f", str(elsewhere), "-n", "default")
    assert mismatch.stderr.strip() == (
        f'error: {elsewhere} (document 1): the namespace from the provided object "nowhere" does not match the '
        "namespace \"default\". You must pass '--namespace=nowhere' to perform this operation.")


async def test_minik_apply_and_kubectl_apply_agree(minik: Invoke, client: Client, kubeconfig: Path,
                                                  tmp_path: Path) -> None:
    manifest = write(tmp_path / "web.yaml", DEPLOYMENT)
    code, out, err = await kubectl(tmp_path, "apply", "--validate=false", "-f", str(manifest), kubeconfig=kubeconfig)
    assert code == 0, err
    assert out.strip() == "deployment.apps/web created"
    assert (await minik("apply", "-f", str(manifest))).stdout.strip() == "deployment.apps/web unchanged"

    write(manifest, DEPLOYMENT.replace('- {name: A, value: "1"}\n', "").replace("nginx:1", "nginx:2"))
    assert (await minik("apply", "-f", str(manifest))).stdout.strip() == "deployment.apps/web configured"
    code, out, err = await kubectl(tmp_path, "apply", "--validate=false", "-f", str(manifest), kubeconfig=kubeconfig)
    assert out.strip() == "deployment.apps/web unchanged", err

    write(manifest, DEPLOYMENT.replace("replicas: 2", "replicas: 4"))
    code, out, err = await kubectl(tmp_path, "apply", "--validate=false", "-f", str(manifest), kubeconfig=kubeconfig)
    assert out.strip() == "deployment.apps/web configured", err
    assert (await minik("apply", "-f", str(manifest))).stdout.strip() == "deployment.apps/web unchanged"
    live = await client.get("deployments", "web", "default")
    assert [e["name"] for e in live["spec"]["template"]["spec"]["containers"][0]["env"]] == ["A", "B"]


def test_three_way_patch_deletes_merged_list_items_by_key_and_orders_them() -> None:
    original = {"spec": {"containers": [{"name": "c", "image": "a", "env": [{"name": "A", "value": "1"},
                                                                          {"name": "B", "value": "2"}]}]}}
    modified = {"spec": {"containers": [{"name": "c", "image": "b", "env": [{"name": "B", "value": "3"}]}]}}
    current = {"spec": {"containers": [{"name": "c", "image": "a", "imagePullPolicy": "Always",
                                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}],
                        "restartPolicy": "Always"}}
    assert three_way_patch(original, modified, current, "Pod") == {"spec": {
        "$setElementOrder/containers": [{"name": "c"}],
        "containers": [{"name": "c", "image": "b", "$setElementOrder/env": [{"name": "B"}],
                        "env": [{"name": "A", "$patch": "delete"}, {"name": "B", "value": "3"}]}]}}


def test_three_way_patch_replaces_plain_lists_and_nulls_removed_fields() -> None:
    original = {"data": {"a": "1", "b": "2"}, "spec": {"args": ["x", "y"]}}
    modified = {"data": {"a": "1"}, "spec": {"args": ["y"]}}
    current = {"data": {"a": "1", "b": "2", "c": "other"}, "spec": {"args": ["x", "y"]}}
    assert three_way_patch(original, modified, current, "ConfigMap") == {"data": {"b": None},
                                                                        "spec": {"args": ["y"]}}
    assert three_way_patch(modified, modified, {**current, "data": {"a": "1", "c": "other"}, "spec": modified["spec"]},
                           "ConfigMap") == {}


def test_three_way_patch_retains_only_the_applied_keys_of_a_deployment_strategy() -> None:
    modified = {"spec": {"strategy": {"type": "Recreate"}}}
    current = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}}}
    assert three_way_patch(None, modified, current, "Deployment") == {
        "spec": {"strategy": {"type": "Recreate", "$retainKeys": ["type"]}}}
