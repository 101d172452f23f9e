"""kubectl over HTTPS with the kubeconfig `minik up` writes (the cluster CA pinned, the admin token), and kubectl
refusing a cluster whose certificate it cannot verify."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from minik import kubeconfig
from minik.cluster import Cluster

KUBECTL = shutil.which("kubectl")


async def kubectl(config: Path, cache: Path, *args: str) -> tuple[int, str, str]:
    assert KUBECTL is not None, "kubectl is not on the PATH (./scripts/test installs one)"
    process = await asyncio.create_subprocess_exec(KUBECTL, "--kubeconfig", str(config), "--cache-dir", str(cache),
                                                   *args, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode or 0, out.decode(), err.decode()


async def test_kubectl_works_over_https_with_the_written_kubeconfig(secure: Cluster, tmp_path: Path) -> None:
    assert secure.credentials is not None
    config = tmp_path / "kubeconfig"
    kubeconfig.write(config, kubeconfig.for_cluster("minik", secure.url, ca_data=secure.credentials.ca.cert_pem,
                                                    token=secure.admin_token))
    code, out, err = await kubectl(config, tmp_path / "cache", "get", "ns", "-o", "name")
    assert code == 0, err
    assert out.split() == ["namespace/default", "namespace/kube-node-lease", "namespace/kube-public",
                           "namespace/kube-system"]
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: made}\ndata: {a: b}\n")
    code, out, err = await kubectl(config, tmp_path / "cache", "apply", "-f", str(manifest))
    assert (code, out.strip()) == (0, "configmap/made created"), err

    forged = tmp_path / "forged"
    kubeconfig.write(forged, kubeconfig.for_cluster("minik", secure.url, ca_data=secure.credentials.ca.cert_pem,
                                                    token="abcdef.0123456789abcdef"))
    code, _, err = await kubectl(forged, tmp_path / "cache2", "get", "ns")
    assert code == 1 and "You must be logged in to the server" in err

    unpinned = tmp_path / "unpinned"
    kubeconfig.write(unpinned, kubeconfig.for_cluster("minik", secure.url, token=secure.admin_token))
    code, _, err = await kubectl(unpinned, tmp_path / "cache3", "get", "ns")
    assert code == 1 and "certificate" in err
