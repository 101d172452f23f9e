"""Real kubectl and real Helm 4 against a cluster whose controllers run, while the deployment controller writes
the deployment from its cache:

- `kubectl create deployment`, `kubectl scale` and `kubectl apply --server-side` of the same deployment: kubectl
  prints no warning, and `get --show-managed-fields` shows each writer's entry as Kubernetes records it;
- Helm 4 (its Go SDK, from the helm-python-sdk package) installs a chart from a directory, upgrades it with a
  changed value and rolls it back, all with server-side apply.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubectl_helpers import finish

from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from tests.access import admin_kubeconfig

pytestmark = pytest.mark.timeout(120)

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """The cluster of the kubectl fixture, with the controllers running (no scheduler, no node)."""
    c = Cluster(ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                                disabled=frozenset(COMPONENTS) - {"controllers"}))
    await c.start()
    try:
        yield c
    finally:
        await c.stop()


def manifest(replicas: int) -> dict[str, Any]:
    """The deployment `kubectl create deployment web --image=nginx:1` makes, as a file."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx:1"}]}}}}


async def observed(http, generation: int, name: str = "web") -> dict[str, Any]:
    """The deployment once the controller has written the status of ``generation``."""
    for _ in range(200):
        _, live = await http.get(f"{DEPLOYMENTS}/{name}")
        if (live.get("status") or {}).get("observedGeneration", 0) >= generation:
            return live
        await asyncio.sleep(0.05)
    raise AssertionError(f"the controller never observed generation {generation}: {live.get('status')}")


async def shown_managers(kubectl) -> dict[tuple[str, str, str], dict[str, Any]]:
    shown = yaml.safe_load((await kubectl("get", "deployment", "web", "-o", "yaml", "--show-managed-fields")).out)
    return {(m["manager"], m["operation"], m.get("subresource", "")): m["fieldsV1"]
            for m in shown["metadata"]["managedFields"]}


async def test_create_scale_then_server_side_apply(http, kubectl) -> None:
    await kubectl("create", "deployment", "web", "--image=nginx:1")
    await observed(http, 1)
    await kubectl("scale", "deployment", "web", "--replicas=3")
    await observed(http, 2)
    result = await kubectl("apply", "--server-side", "-f", kubectl.manifest("web.yaml", manifest(3)))
    assert result.out == "deployment.apps/web serverside-applied\n" and result.err == ""

    managers = await shown_managers(kubectl)
    assert set(managers) == {("kubectl-create", "Update", ""), ("kubectl", "Update", "scale"),
                             ("kubectl", "Apply", ""), ("kube-controller-manager", "Update", ""),
                             ("kube-controller-manager", "Update", "status")}
    assert managers[("kubectl", "Update", "scale")] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" in managers[("kubectl", "Apply", "")]["f:spec"]  # the same count: shared
    assert "f:replicas" not in managers[("kubectl-create", "Update", "")]["f:spec"]  # the scale took it
    assert "f:status" in managers[("kube-controller-manager", "Update", "status")]

    # the applied count differs from the scaled one: a conflict naming the scale, as Kubernetes words it
    refused = await kubectl("apply", "--server-side", "-f", kubectl.manifest("web.yaml", manifest(1)), ok=False)
    assert refused.err.startswith('error: Apply failed with 1 conflict: conflict with "kubectl" with subresource '
                                  '"scale" using apps/v1: .spec.replicas')


async def test_client_side_apply_scale_then_server_side_apply_migrates_without_a_warning(http, kubectl) -> None:
    path = kubectl.manifest("web.yaml", manifest(1))
    await kubectl("apply", "-f", path)
    await observed(http, 1)
    await kubectl("scale", "deployment", "web", "--replicas=3")
    await observed(http, 2)
    result = await kubectl("apply", "--server-side", "-f", kubectl.manifest("web.yaml", manifest(3)))
    assert result.out == "deployment.apps/web serverside-applied\n" and result.err == ""

    managers = await shown_managers(kubectl)
    # kubectl moved client-side apply's fields to its Apply entry; the scale's entry is not client-side apply's
    assert ("kubectl-client-side-apply", "Update", "") not in managers
    assert {("kubectl", "Apply", ""), ("kubectl-last-applied", "Apply", ""),
            ("kubectl", "Update", "scale")} <= set(managers)
    assert managers[("kubectl", "Update", "scale")] == {"f:spec": {"f:replicas": {}}}


# -- Helm 4 ----------------------------------------------------------------------------------------------------
CHART = {
    "Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
    "values.yaml": "replicas: 1\nimage: nginx:1\n",
    "templates/deployment.yaml": """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers: [{name: web, image: {{ .Values.image | quote }}}]
""",
}

#: one Helm action per process (the Go runtime of Helm's library stays out of the test's process); prints the
#: release's summary, or the error with exit code 1
HELM = """
import json, sys
import helm_python as helm
kubeconfig, chart, action, values = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
try:
    with helm.Config(kubeconfig_path=kubeconfig, namespace="default") as cfg:
        if action == "install":
            result = cfg.install(chart, "demo", values)
        elif action == "upgrade":
            result = cfg.upgrade(chart, "demo", values)
        else:
            cfg.rollback("demo", version=values["version"])
            result = cfg.status("demo")
except helm.HelmError as exc:
    print(exc)
    sys.exit(1)
print(json.dumps({"revision": result["revision"], "status": result["status"]}))
"""


async def helm(kubeconfig: Path, chart: Path, action: str, values: dict[str, Any]) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HELM, str(kubeconfig), str(chart), action, json.dumps(values),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    result = await finish(process, 60)
    assert result.code == 0, f"helm {action} failed: {result.out} {result.err[-2000:]}"
    return json.loads(result.out.splitlines()[-1])


async def test_helm_installs_upgrades_and_rolls_back_with_server_side_apply(cluster, http, tmp_path) -> None:
    pytest.importorskip("helm_python", reason="helm-python-sdk is in .[test]: pip install -e '.[test]'")
    chart = tmp_path / "chart"
    for name, text in CHART.items():
        (chart / name).parent.mkdir(parents=True, exist_ok=True)
        (chart / name).write_text(text)
    kubeconfig = admin_kubeconfig(cluster, tmp_path / "kubeconfig")

    assert await helm(kubeconfig, chart, "install", {}) == {"revision": 1, "status": "deployed"}
    installed = await observed(http, 1, "demo")
    [applier] = [m["manager"] for m in installed["metadata"]["managedFields"] if m["operation"] == "Apply"]

    # the upgrade that failed with a conflict with "before-first-apply" once the controller had written
    assert await helm(kubeconfig, chart, "upgrade", {"replicas": 2, "image": "nginx:2"}) == \
        {"revision": 2, "status": "deployed"}
    upgraded = await observed(http, 2, "demo")
    assert upgraded["spec"]["replicas"] == 2
    assert upgraded["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"

    assert await helm(kubeconfig, chart, "rollback", {"version": 1}) == {"revision": 3, "status": "deployed"}
    _, rolled_back = await http.get(f"{DEPLOYMENTS}/demo")
    assert rolled_back["spec"]["replicas"] == 1
    assert rolled_back["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"
    managers = {(m["manager"], m["operation"], m.get("subresource", ""))
                for m in rolled_back["metadata"]["managedFields"]}
    assert (applier, "Apply", "") in managers and ("kube-controller-manager", "Update", "status") in managers
    assert not any(manager == "before-first-apply" for manager, _, _ in managers)
