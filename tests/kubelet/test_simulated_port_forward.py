"""Pods on the simulated runtime have no network: `kubectl port-forward` and the pods/proxy path say so at once,
in a Status kubectl prints, rather than waiting on an address nothing answers on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minik.api.errors import StatusError
from minik.cluster import Cluster, ClusterSettings
from tests.e2e.kubectl_helpers import Kubectl
from tests.kubelet.helpers import phase, pod_manifest, wait_for_pod

NODE = "fake-node-000"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    settings = ClusterSettings(data_dir=tmp_path / "c", port=0, synchronous="NORMAL", local_node=False,
                               fake_nodes=1, fake_start_delay_seconds=0.05,
                               disabled=frozenset({"scheduler", "controllers", "proxy"}))
    async with Cluster(settings) as cluster:
        yield cluster


async def test_port_forward_and_proxy_to_a_simulated_pod_are_refused_with_the_reason(cluster: Cluster,
                                                                                    tmp_path: Path) -> None:
    async with cluster.admin_client() as client:
        await client.create("pods", pod_manifest("sim", node=NODE))
        await wait_for_pod(client, "sim", lambda p: phase(p) == "Running", 15)
        with pytest.raises(StatusError) as refused:
            await client._call("GET", "/api/v1/namespaces/default/pods/sim:80/proxy/")
        assert refused.value.code == 400 and "simulates containers without a network" in refused.value.message
    kubectl = Kubectl(cluster, tmp_path / "kubectl")
    result = await kubectl("port-forward", "pod/sim", ":80", ok=False)
    assert result.code == 1
    assert "cannot forward ports of pod sim: it runs on node fake-node-000, whose runtime (fake://1.0.0) " \
           "simulates containers without a network" in result.err
