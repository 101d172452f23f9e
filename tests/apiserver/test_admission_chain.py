"""The default admission chain: its plugins in Kubernetes' order, and what the ServiceAccount plugin gives a pod."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minik.apiserver.admission import default_plugins
from minik.cluster import Cluster

if TYPE_CHECKING:
    from conftest import ApiHttp


def test_the_chain_runs_in_kubernetes_order(cluster: Cluster) -> None:
    assert cluster.api is not None
    names = [plugin.name for plugin in default_plugins(cluster.api.reader)]
    assert names == ["NamespaceLifecycle", "LimitRanger", "NodeRestriction", "Priority", "DefaultTolerationSeconds",
                     "ServiceAccount", "PodSecurity", "PersistentVolumeClaimResize", "RuntimeClass",
                     "CertificateSigningRequestIdentity", "CertificateSubjectRestriction", "DefaultStorageClass",
                     "StorageObjectInUseProtection", "ResourceQuota"]


async def test_a_pod_runs_as_default_with_its_token_volume_unless_it_opts_out(http: ApiHttp) -> None:
    """(tests/apiserver/test_service_account_admission.py has the plugin's rules one by one)"""
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    status, created = await http.post("/api/v1/namespaces/default/pods", pod)
    assert status == 201
    assert created["spec"]["serviceAccountName"] == created["spec"]["serviceAccount"] == "default"
    [volume] = created["spec"]["volumes"]
    assert volume["name"].startswith("kube-api-access-")
    assert created["spec"]["containers"][0]["volumeMounts"] == [
        {"name": volume["name"], "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
    assert (await http.post("/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "builder"}}))[0] == 201
    pod["metadata"]["name"] = "q"
    pod["spec"]["serviceAccountName"] = "builder"
    pod["spec"]["automountServiceAccountToken"] = False
    status, created = await http.post("/api/v1/namespaces/default/pods", pod)
    assert (status, created["spec"]["serviceAccountName"]) == (201, "builder")
    assert "volumes" not in created["spec"]


async def test_a_mirror_pod_may_not_reference_a_service_account(http: ApiHttp) -> None:
    pod = {"metadata": {"name": "m", "annotations": {"kubernetes.io/config.mirror": "x"}},
           "spec": {"nodeName": "n", "serviceAccountName": "builder",
                    "containers": [{"name": "c", "image": "busybox"}]}}
    status, body = await http.post("/api/v1/namespaces/default/pods", pod)
    assert (status, body["message"]) == (403, 'pods "m" is forbidden: a mirror pod may not reference service '
                                              'accounts')
