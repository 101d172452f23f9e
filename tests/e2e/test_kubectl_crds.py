"""Custom resources through real clients: kubectl (apply, get with the CRD's columns, get all, explain, scale, patch,
delete, client-side field validation) and the official Python client's dynamic client, which finds them by
discovery."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from kubectl_helpers import Kubectl
from kubernetes import config as k8s_config
from kubernetes import dynamic
from kubernetes.client import exceptions as k8s_exceptions

from tests.access import admin_kubeconfig
from tests.crds import GROUP, gadget_crd, widget, widget_crd, with_rules

pytestmark = pytest.mark.timeout(120)


async def apply_crds(kubectl: Kubectl) -> None:
    path = kubectl.home / "crds.yaml"
    path.write_text(yaml.safe_dump_all([with_rules(widget_crd()), gadget_crd()]))
    await kubectl("apply", "-f", str(path))
    await kubectl("wait", "--for", "condition=established", "--timeout=10s", f"crd/widgets.{GROUP}",
                  f"crd/gadgets.{GROUP}")


async def test_kubectl_applies_gets_scales_patches_and_deletes_custom_resources(kubectl: Kubectl) -> None:
    await apply_crds(kubectl)
    crds = await kubectl("get", "crd")
    assert crds.rows[0] == ["NAME", "CREATED AT"]
    assert [row[0] for row in crds.rows[1:]] == [f"gadgets.{GROUP}", f"widgets.{GROUP}"]
    w = widget("w", replicas=2, color="blue", size="L")
    await kubectl("apply", "-f", kubectl.manifest("w.yaml", w))
    listed = await kubectl("get", "widgets")
    assert listed.rows[0] == ["NAME", "COLOR", "PHASE", "AGE"]
    assert listed.rows[1][:2] == ["w", "blue"]
    wide = await kubectl("get", "wd", "-o", "wide")
    assert wide.rows[0] == ["NAME", "COLOR", "REPLICAS", "PHASE", "AGE"]
    assert wide.rows[1][:3] == ["w", "blue", "2"]
    everything = await kubectl("get", "all")
    assert f"widget.{GROUP}/w" in everything.out
    await kubectl("scale", "widget/w", "--replicas=4")
    replicas = await kubectl("get", "widget", "w", "-o", "jsonpath={.spec.replicas}")
    assert replicas.out == "4"
    await kubectl("patch", "widget", "w", "--type=merge", "-p", '{"spec":{"color":"green"}}')
    strategic = await kubectl("patch", "widget", "w", "-p", '{"spec":{"color":"red"}}', ok=False)
    assert strategic.code != 0
    assert f"application/strategic-merge-patch+json is not supported by {GROUP}/v1, Kind=Widget" in strategic.err
    # kubectl apply of a changed manifest (client-side apply computes a merge patch for custom resources)
    w["spec"]["size"] = "XL"
    await kubectl("apply", "-f", kubectl.manifest("w.yaml", w))
    size = await kubectl("get", "widget", "w", "-o", "jsonpath={.spec.color} {.spec.size}")
    assert size.out == "blue XL"  # the manifest's color again: a three-way merge of what it applies
    await kubectl("apply", "--server-side", "--force-conflicts", "-f", kubectl.manifest("w.yaml", w))
    bogus = widget("bogus", bogus_field=1)
    refused = await kubectl("apply", "-f", kubectl.manifest("bogus.yaml", bogus), ok=False)
    assert refused.code != 0 and 'unknown field "spec.bogus_field"' in refused.err
    invalid = await kubectl("apply", "-f", kubectl.manifest("bad.yaml", widget("bad", size="S", replicas=0)),
                            ok=False)
    assert invalid.code != 0 and "a sized widget needs replicas" in invalid.err
    await kubectl("delete", "widget", "w")
    gone = await kubectl("get", "widgets", ok=False)
    assert "No resources found" in gone.err


async def test_kubectl_explain_reads_the_crds_schema(kubectl: Kubectl) -> None:
    await apply_crds(kubectl)
    explained = await kubectl("explain", "widgets.spec")
    assert "KIND:       Widget" in explained.out and f"GROUP:      {GROUP}" in explained.out
    assert "color\t<string>" in explained.out and "replicas\t<integer>" in explained.out
    explained = await kubectl("explain", "widgets.spec.color")
    assert "ENUM:\n    red\n    green\n    blue" in explained.out


async def test_deleting_a_crd_with_kubectl_deletes_its_custom_resources(kubectl: Kubectl) -> None:
    await apply_crds(kubectl)
    for name in ("a", "b"):
        await kubectl("apply", "-f", kubectl.manifest(f"{name}.yaml", widget(name)))
    await kubectl("delete", "crd", f"widgets.{GROUP}", "--wait=true", "--timeout=20s")
    gone = await kubectl("get", "widgets", ok=False)  # kubectl's discovery cache still knows them
    assert gone.code != 0 and "the server could not find the requested resource" in gone.err
    crds = await kubectl("get", "crd", "-o", "name")
    assert crds.out.split() == [f"customresourcedefinition.apiextensions.k8s.io/gadgets.{GROUP}"]


def _dynamic_scenario(kubeconfig: Path, cache: Path) -> dict[str, object]:
    client = dynamic.DynamicClient(k8s_config.new_client_from_config(str(kubeconfig)), cache_file=str(cache))
    seen: dict[str, object] = {}
    widgets = client.resources.get(api_version=f"{GROUP}/v1", kind="Widget")
    created = widgets.create(body=widget("dyn", replicas=3, color="blue"), namespace="default")
    seen["created"] = (created.metadata.name, created.spec.replicas, created.metadata.generation)
    patched = widgets.patch(name="dyn", namespace="default", body={"spec": {"color": "green"}},
                            content_type="application/merge-patch+json")
    seen["patched"] = patched.spec.color
    status = client.resources.get(api_version=f"{GROUP}/v1", kind="Widget").status
    written = status.patch(name="dyn", namespace="default", body={"status": {"phase": "Ready"}},
                           content_type="application/merge-patch+json")
    seen["status"] = written.status.phase
    seen["listed"] = [item.metadata.name for item in widgets.get(namespace="default").items]
    old = client.resources.get(api_version=f"{GROUP}/v1beta1", kind="Widget")
    seen["v1beta1"] = old.get(name="dyn", namespace="default").apiVersion
    gadgets = client.resources.get(api_version=f"{GROUP}/v1", kind="Gadget")
    gadgets.create(body={"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": "g"}, "x": 1})
    seen["gadget"] = gadgets.get(name="g").x
    widgets.delete(name="dyn", namespace="default")
    try:
        widgets.get(name="dyn", namespace="default")
    except k8s_exceptions.ApiException as exc:
        seen["deleted"] = exc.status
    return seen


async def test_the_python_dynamic_client_finds_and_drives_custom_resources(cluster, kubectl: Kubectl,
                                                                            tmp_path: Path) -> None:
    await apply_crds(kubectl)
    seen = await asyncio.to_thread(_dynamic_scenario, admin_kubeconfig(cluster, tmp_path / "kubeconfig"),
                                   tmp_path / "discovery.json")
    assert seen["created"] == ("dyn", 3, 1)
    assert seen["patched"] == "green" and seen["status"] == "Ready"
    assert seen["listed"] == ["dyn"] and seen["v1beta1"] == f"{GROUP}/v1beta1"
    assert seen["gadget"] == 1 and seen["deleted"] == 404
