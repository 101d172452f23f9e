"""The default admission chain: its plugins in Kubernetes' order, and the token-free ServiceAccount plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minik.apiserver.admission import default_plugins
from minik.cluster import Cluster

if TYPE_CHECKING:
    from conftest import ApiHttp


def test_the_chain_runs_in_kubernetes_order(cluster: Cluster) -> None:
    assert cluster.api is not None
    names = [plugin.name for plugin in default_plugins(cluster.api.reader)]
    assert names == ["NamespaceLifecycle", "NodeRestriction", "Priority", "DefaultTolerationSeconds",
                     "ServiceAccount", "PodSecurity"]


async def test_a_pod_without_a_service_account_runs_as_default_and_mounts_no_token(http: ApiHttp) -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    status, created = await http.post("/api/v1/namespaces/default/pods", pod)
    assert status == 201
    assert created["spec"]["serviceAccountName"] == created["spec"]["serviceAccount"] == "default"
    assert "volumes" not in created["spec"] and "volumeMounts" not in created["spec"]["containers"][0]
    pod["metadata"]["name"] = "q"
    pod["spec"]["serviceAccountName"] = "builder"
    status, created = await http.post("/api/v1/namespaces/default/pods", pod)
    assert (status, created["spec"]["serviceAccountName"]) == (201, "builder")


async def test_a_mirror_pod_may_not_reference_a_service_account(http: ApiHttp) -> None:
    pod = {"metadata": {"name": "m", "annotations": {"kubernetes.io/config.mirror": "x"}},
           "spec": {"nodeName": "n", "serviceAccountName": "builder",
                    "containers": [{"name": "c", "image": "busybox"}]}}
    status, body = await http.post("/api/v1/namespaces/default/pods", pod)
    assert (status, body["message"]) == (403, 'pods "m" is forbidden: a mirror pod may not reference service '
                                              'accounts')
