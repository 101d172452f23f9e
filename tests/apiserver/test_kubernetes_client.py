"""The official Python client (`kubernetes` on PyPI) works against minik: namespaces and pods end to end.

The client is synchronous, so it runs in a thread while the cluster serves from the test's event loop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException

from tests.access import admin_kubeconfig


def _scenario(kubeconfig: Path) -> dict[str, object]:
    core = k8s.CoreV1Api(k8s_config.new_client_from_config(str(kubeconfig)))
    seen: dict[str, object] = {}
    ns = core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="team-a")))
    seen["namespace_phase"] = ns.status.phase
    # what the service account controller would do (this cluster runs no controllers)
    core.create_namespaced_service_account("team-a", k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(name="default")))
    pod = k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="web", labels={"app": "web"}),
                    spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="busybox:1.36")]))
    created = core.create_namespaced_pod("team-a", pod)
    seen["created_rv"] = created.metadata.resource_version
    seen["restart_policy"] = created.spec.restart_policy
    seen["got"] = core.read_namespaced_pod("web", "team-a").metadata.uid == created.metadata.uid
    listed = core.list_namespaced_pod("team-a", label_selector="app=web")
    seen["listed"] = [p.metadata.name for p in listed.items]
    patched = core.patch_namespaced_pod("web", "team-a", {"metadata": {"labels": {"tier": "front"}}})
    seen["patched_labels"] = patched.metadata.labels
    events = []
    for event in k8s_watch.Watch().stream(core.list_namespaced_pod, "team-a", resource_version=seen["created_rv"],
                                          timeout_seconds=2):
        events.append((event["type"], event["object"].metadata.labels.get("tier")))
        break
    seen["watched"] = events
    core.delete_namespaced_pod("web", "team-a")
    try:
        core.read_namespaced_pod("web", "team-a")
        seen["deleted"] = False
    except ApiException as exc:
        seen["deleted"] = exc.status == 404
    try:
        core.create_namespaced_pod("team-a", k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="BAD"), spec=pod.spec))
    except ApiException as exc:
        seen["invalid"] = (exc.status, exc.reason)
    core.delete_namespace("team-a")
    seen["namespace_after_delete"] = core.read_namespace("team-a").status.phase
    seen["namespaces"] = sorted(n.metadata.name for n in core.list_namespace().items)
    return seen


@pytest.mark.timeout(60)
async def test_the_official_python_client_drives_namespaces_and_pods(cluster, tmp_path: Path) -> None:
    seen = await asyncio.to_thread(_scenario, admin_kubeconfig(cluster, tmp_path / "kubeconfig"))
    assert seen["namespace_phase"] == "Active"
    assert seen["restart_policy"] == "Always" and seen["got"] is True
    assert seen["listed"] == ["web"]
    assert seen["patched_labels"] == {"app": "web", "tier": "front"}
    assert seen["watched"] == [("MODIFIED", "front")]
    assert seen["deleted"] is True
    assert seen["invalid"] == (422, "Unprocessable Entity")
    assert seen["namespace_after_delete"] == "Terminating"
    assert "team-a" in seen["namespaces"] and "default" in seen["namespaces"]
